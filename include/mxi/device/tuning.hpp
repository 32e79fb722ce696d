// The launchers' tuning numbers: one config struct per kernel, one value per arch target
// (rocPRIM's per-architecture kernel configs). A launcher asks which target the current device
// runs (arch::select_target, cached) and instantiates its kernel with that target's numbers;
// targets with equal numbers share one instantiation, since the kernels take the numbers, not the
// target. Only sm90 (H200) is measured: generic and gfx950 repeat its values until someone
// measures there.
#pragma once

#include <type_traits>

#include "mxi/arch/select.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::device {

/// The multi-block top-k passes (detail/topk_kernels.hpp), the cluster select, and when a call
/// takes which.
struct topk_tuning {
  int pass_threads;  ///< threads of a pass block
  int pass_items;    ///< columns a thread takes of each segment (a segment: threads * items)
  /// Blocks a pass launches at most; a row with more segments has its blocks take several each.
  int max_blocks;
  /// Where some row may not fit the one-block kernel, a call of fewer rows than this sends every
  /// row through the passes: a few rows fill the GPU better with several blocks each.
  int one_block_min_rows;
  /// The cluster select (detail/topk_cluster_kernel.hpp), ascending-position output: the most
  /// blocks a row's cluster takes (0: no cluster path, the one-block kernel and the passes
  /// instead), and a cluster block's threads. The launcher takes the fewest blocks a row (a power
  /// of two) that give the GPU a block per multiprocessor, up to this many and no more than leave
  /// slices of min_cluster_slice columns; fewer where the processing clusters would not hold
  /// every row's cluster (detail::plan_cluster).
  int cluster_blocks_max;
  int cluster_threads;
  /// A cluster block's threads where the rows alone would launch more than one wave of
  /// cluster_threads blocks (clusters of one block; several smaller blocks stay resident a
  /// multiprocessor); 0: cluster_threads there too.
  int cluster_threads_many_rows;
  /// Calls of 2 to cluster_few_rows rows take up to cluster_blocks_few_rows blocks a row instead
  /// of cluster_blocks_max (0: no such rows): the host cannot tell a short row from a long one,
  /// and a few long rows gain more from twice the blocks than a few short ones lose.
  int cluster_few_rows;
  int cluster_blocks_few_rows;
};

/// The logits kernels' groups: query rows of one request that share every key tile (decode's
/// next_n rows, prefill's tokens). A request's rows split evenly into groups of at most
/// max_group rows (max_group_wide at H = 128), rounded up to a power of two where the row
/// scorers split a group over a block's four waves.
struct logits_tuning {
  int max_group;
  int max_group_wide;
  bool power_of_two;
};

/// The K-cache writer (a lane a 32-element block) and the Q quantizer (4 lanes a block).
struct quantize_tuning {
  int threads;  ///< a block; a multiple of 64, so every wave is whole on either vendor
};

constexpr topk_tuning topk_tuned(arch::target t) {
  switch (t) {
    // 1024 blocks: about four resident blocks of 512 threads on every SM of an H200. 32 rows
    // (bench_indexer decode 8 x 32K at max_model_len 1M, H200, 2026-11-30): 82 us on the passes,
    // 94 us with a block a row.
    // Clusters of up to 8 blocks of 1024 threads (bench_topk, width 1M, H200, 2026-11-30): 1024
    // threads against 512, with the launcher's cluster size, 64 x 32K 23.4 vs 44.4 us, 32 x 131K
    // 54 vs 88 us, 4 x 262K 60 vs 87 us. Cap 8, not 16: 16 blocks merging their histograms cost a
    // short row more than they gain (1 x 32K: 38 us at 16; at 512 threads 21 / 27 / 53 us at
    // 4 / 8 / 16), and the host cannot tell a short row from a long one (their lengths are on the
    // device).
    // Many rows: 512 threads (bench_topk position_cluster_t512 against position, H200,
    // 2026-12-01: 256 x 10688 22.2 us against 27.4 at 1024 threads in two waves; 64 x 32K, one
    // wave either way: 22.1 against 20.8).
    // Two to four rows: 16 blocks (bench_topk, width 1M, H200, 2026-12-02; 16 against 8 blocks:
    // 2 x 262K 21.1 / 24.7 us, 4 x 262K 22.6 / 25.9, 4 x 32K 16.7 / 15.4; one row stays at 8,
    // 1 x 32K 16.4 / 15.1; 8 x 32K at 16 needs a second wave, 28.4 / 15.6).
    case arch::target::sm90:
      return {512, 8, 1024, 32, 8, 1024, 512, 4, 16};
    // 1024 blocks: about four of 512 threads on every CU of an MI355X; not measured. No clusters
    // on AMD.
    case arch::target::gfx950:
      return {512, 8, 1024, 32, 0, 512, 0, 0, 0};
    default:
      return {512, 8, 1024, 32, 0, 512, 0, 0, 0};  // generic: not measured; clusters need sm90
  }
}

constexpr logits_tuning logits_tuned(arch::target t) {
  switch (t) {
    // bench_indexer prefill/T:32768 and decode next_n 4 (H200, 2026-12-03): a group of 4 rows
    // takes 76 KB of shared memory a consumer for its queries at H = 64, which leaves room for two
    // consumer warpgroups; groups of 2 keep three (prefill 32K 18.20 -> 17.28 ms) and of 3 keep
    // three with 8 stages (16.46 ms). next_n 4 as two groups of 2: 296 us against 301 as one of 4.
    // At H = 128 two rows already take 76 KB.
    case arch::target::sm90:
      return {3, 2, false};
    case arch::target::gfx950:
      return {4, 4, true};  // a row a wave of the block; not measured
    default:
      return {4, 4, true};  // generic: a row a wave; not measured
  }
}

constexpr quantize_tuning quantize_tuned(arch::target t) {
  switch (t) {
    case arch::target::sm90:
      return {256};
    case arch::target::gfx950:
      return {256};  // not measured
    default:
      return {256};  // generic: not measured
  }
}

/// Every target a tuning table holds a value for.
inline constexpr arch::target all_targets[] = {arch::target::generic, arch::target::sm90,
                                               arch::target::gfx950};

/// Calls f(std::integral_constant<arch::target, T>{}) for the run-time target `t`.
template <class F>
decltype(auto) with_target(arch::target t, F&& f) {
  using arch::target;
  switch (t) {
    case target::sm90:
      return f(std::integral_constant<target, target::sm90>{});
    case target::gfx950:
      return f(std::integral_constant<target, target::gfx950>{});
    default:
      return f(std::integral_constant<target, target::generic>{});
  }
}

/// The current device's target (what its tuning is looked up by).
inline platform::error_t current_target(arch::target* t) {
  int device = 0;
  const platform::error_t e = platform::get_device(&device);
  if (e != platform::success) return e;
  return arch::select_target(device, t);
}

}  // namespace mxi::device
