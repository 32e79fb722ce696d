// Random indexer problems for the backend-agreement tests: shapes, batch kind and options drawn
// from a seed, at two scales: the CPU suite's small shapes (any head dim) and the GPU's (D = 128,
// longer rows, larger k and candidate pools).
#pragma once

#include <cstdint>

#include "workload.hpp"

namespace mxi::testing {

enum class case_scale : uint8_t { cpu, gpu };

struct random_case {
  workload_spec spec;
  output_order order = output_order::position;
  index_space space = index_space::position;
  int publish_blocks = 0;  ///< 0: no candidate pool
  bool logits = false;
  bool clean = true;       ///< with logits: -inf past the visible length
};

random_case draw_random_case(uint64_t seed, case_scale scale);

/// Entry-A arguments for a case (outputs left null for the runner to set).
indexer_args random_case_args(const host_workload& w, const random_case& c);

}  // namespace mxi::testing
