// Random indexer problems for the backend-agreement tests: shapes, batch kind and options drawn
// from a seed, at two scales: the CPU suite's small shapes (any head dim) and the GPU's (D = 128,
// longer rows, larger k and candidate pools).
#pragma once

#include <cstdint>
#include <vector>

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

/// A caller-made candidate pool for entry B: ids in [-8, 72) (so -1, other negatives and ids of
/// blocks past the visible range turn up), repeated and unsorted; the GPU scale draws pools of
/// up to 700 blocks on every third seed.
struct random_pool {
  std::vector<int32_t> ids;  ///< [T][num_blocks]
  int num_blocks = 0;
  int block_size = 0;
};

random_pool draw_random_pool(uint64_t seed, const host_workload& w, case_scale scale);

/// Entry-B arguments for a case and a pool (outputs left null; the pool must outlive them).
candidate_indexer_args random_pool_args(const host_workload& w, const random_case& c,
                                        const random_pool& pool);

}  // namespace mxi::testing
