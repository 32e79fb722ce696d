// The main job: DeepSeek-shaped phases (a decode batch with next_n draft tokens, a ragged
// prefill), each generated, run and timed on one backend, then checked against the reference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workload.hpp"

namespace mxi::tools {

struct phase_spec {
  std::string name;
  testing::workload_spec spec;
  int64_t check_rows = 0;  ///< rows checked against the reference; 0: every row
};

/// The phases of `size` ("small", "default", "large"); throws std::invalid_argument otherwise.
std::vector<phase_spec> job_phases(const std::string& size, uint64_t seed, cache_layout layout);

/// Generates, runs, times and checks one phase, printing as it goes; returns whether every
/// checked row matched. Throws std::runtime_error when the backend fails.
bool run_phase(const phase_spec& phase, backend where, uint64_t seed);

/// Name of a backend for printing.
const char* backend_name(backend b);

}  // namespace mxi::tools
