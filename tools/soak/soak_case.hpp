// One soak case: a random indexer problem drawn from a seed, valid or with a batch description
// that only the running checks can reject. The keys, queries and weights come from the shared
// generator (tests/common/workload); this file draws what it is asked to generate (shape, batch,
// options, entry point) and then what is done to its output: NaN and infinite data, candidate
// ids that are repeated, negative or past the context, and corrupt block tables, seq_lens and
// query_start_loc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workload.hpp"

namespace mxi::tools::soak {

/// The two backends a run compares: the threaded CPU backend against the reference, or the GPU
/// against the threaded CPU backend. The GPU pairing draws D = 128 only (the GPU backend's one
/// head dim) and larger problems.
enum class pairing : uint8_t { cpu_vs_reference, gpu_vs_cpu };

struct soak_case {
  uint64_t seed = 0;
  testing::host_workload w;  ///< the inputs, after the NaN data and corruptions below
  std::string size_class, batch_kind;
  bool candidate_entry = false;  ///< entry B (run_candidate_indexer), else entry A

  output_order order = output_order::position;
  index_space space = index_space::position;
  int64_t topk_stride = 0;

  // Entry A's optional outputs.
  int64_t logits_stride = 0;  ///< 0: no logits
  bool clean = false;
  int publish_blocks = 0;  ///< 0: no candidate publishing
  int publish_block_size = 0;
  int64_t publish_stride = 0;

  // Entry B's candidate pool ([T][pool_stride] ids).
  std::vector<int32_t> pool;
  int pool_blocks = 0;
  int pool_block_size = 0;
  int64_t pool_stride = 0;

  std::vector<std::string> specials;     ///< NaN and infinite data put in, in words
  std::vector<std::string> corruptions;  ///< what was broken, in words; empty: a valid batch

  /// The entry point's arguments: host pointers into `w` and `pool`, outputs null (their strides
  /// and sizes set).
  indexer_args indexer() const;
  candidate_indexer_args candidate_indexer() const;
  /// One line: entry point, batch, shape, options, NaN data and corruptions.
  std::string describe() const;
};

/// Draws the case of `seed`; the same seed and pairing give the same case.
soak_case draw_case(uint64_t seed, pairing p);

}  // namespace mxi::tools::soak
