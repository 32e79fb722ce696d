// The tools' one door to the GPU backend: takes a call whose pointers are host memory, copies the
// inputs to the device once, runs the call there `repetitions` times (each timed with GPU events)
// and copies the outputs of the last run and the device error word back into the host buffers.
// The host API allocates no device memory, so this is the only tool code that needs the platform
// runtime; gpu_run_absent.cpp stands in for it in CPU-only builds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mxi/mxi.hpp"

namespace mxi::tools {

/// Runs `host_args` on backend::gpu; `seconds` receives each run's device time.
status run_indexer_on_gpu(const indexer_args& host_args, int repetitions,
                          std::vector<double>& seconds, uint32_t& error_word);
status run_candidate_indexer_on_gpu(const candidate_indexer_args& host_args, int repetitions,
                                    std::vector<double>& seconds, uint32_t& error_word);

/// Memory of the current GPU in bytes; 0 when there is none or no GPU backend was built.
size_t gpu_memory_bytes();

}  // namespace mxi::tools
