// Every tuning value of the launchers (block sizes, items a thread, thresholds), each with its
// evidence: the benchmark or profile, the shape, the GPU and the date it was measured, or "not
// measured". One config struct per kernel family, with named fields (rocPRIM's kernel configs as
// values):
//   - per arch target (topk_config, logits_config, quantize_config): the fields' defaults are what
//     every target takes; X_config_for(target) names what a target's row changes. A launcher asks
//     which target the current device runs (arch::choose_target, cached) and instantiates its
//     kernels with that target's values; targets with equal values share one instantiation.
//   - one value for every target (q_quantize_config, logits_plan_config, row_info_config,
//     candidate_prep_config): their kernels are not built per target; the launchers read the
//     defaults.
// Only sm90 (H200) is measured: generic and gfx950 take its values until someone measures there.
#pragma once

#include <cstdint>

#include "mxi/arch/target.hpp"
#include "mxi/platform/cluster.hpp"
#include "mxi/platform/dispatch.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::device {

/// Which kernels a top-k launch may take (the tests force each; engines leave `tuned`).
enum class topk_path {
  tuned,      ///< the target's: clusters where cluster_blocks_max > 0 (position order), else below
  one_block,  ///< rows that fit take the one-block kernel, longer ones the passes
  passes,     ///< every row through the multi-block passes
  cluster,    ///< the cluster select in position order (score order: as one_block)
};

/// The top-k (device/topk.hpp): the multi-block passes (detail/topk_kernels.hpp), the one-block
/// kernel (detail/topk_row_kernel.hpp), the cluster select (detail/topk_cluster_kernel.hpp), and
/// which a call takes.
struct topk_config {
  // The passes.
  /// Threads of a pass block. 512 x 8 columns (a 4096-column segment) put 8 blocks on a 32K row,
  /// enough to fill an H200 from 64 rows; 1024 blocks are about four resident a multiprocessor
  /// (chosen with the kernels, 2026-11-29; no other shape measured).
  int pass_threads = 512;
  /// Columns a thread takes of each segment (a segment: pass_threads * pass_items columns).
  int pass_items = 8;
  /// Blocks a pass launches at most; a row with more segments has its blocks take several each.
  int max_blocks = 1024;
  /// Where some row may not fit the one-block kernel, a call of fewer rows than this sends every
  /// row through the passes: a few rows fill the GPU better with several blocks each.
  /// bench_indexer decode 8 x 32K at max_model_len 1M, H200, 2026-11-30: 82 us on the passes,
  /// 94 us with a block a row.
  int one_block_min_rows = 32;

  // The one-block kernel and the score-order sort.
  /// Threads of the one-block kernel's block (a row a block): the most a block takes, so that
  /// its 8 KiB histogram and the row's sweeps have the most lanes (chosen with the kernel,
  /// 2026-11-29; not measured).
  int row_threads = 1024;
  /// The sort of the staged winners (score order): the fewest of sort_threads, twice, four and
  /// eight times as many threads whose sort_items winners each hold k (1024 x 4 holds
  /// max_topk_k). Not measured.
  int sort_threads = 128;
  int sort_items = 4;

  // The cluster select (position order).
  /// The most blocks a row's cluster takes (0: no cluster path, the one-block kernel and the
  /// passes instead). The launcher takes the fewest blocks a row (a power of two) that give the
  /// GPU a block per multiprocessor, up to this many and no more than leave slices of
  /// cluster_slice_min columns; fewer where the processing clusters would not hold every row's
  /// cluster (detail::plan_cluster). Clusters exist on sm90 only.
  int cluster_blocks_max = 0;
  /// A cluster block's threads.
  int cluster_threads = 512;
  /// A cluster block's threads where the rows alone would launch more than one wave of
  /// cluster_threads blocks (clusters of one block; several smaller blocks stay resident a
  /// multiprocessor); 0: cluster_threads there too.
  int cluster_threads_many_rows = 0;
  /// Calls of 2 to cluster_few_rows rows take up to cluster_blocks_few_rows blocks a row instead
  /// of cluster_blocks_max (0: no such rows): the host cannot tell a short row from a long one,
  /// and a few long rows gain more from twice the blocks than a few short ones lose.
  int cluster_few_rows = 0;
  int cluster_blocks_few_rows = 0;
  /// Clusters grow no further than slices of this many columns of the declared width: more
  /// blocks' histograms and counts cost a shorter slice more than its share of the row saves.
  /// bench_topk's forced sizes, H200, 2026-12-03: one 32K row in 4 / 8 / 16 blocks 16.8 / 15.7 /
  /// 17.3 us, 4 x 32K in 8 / 16 blocks 15.4 / 16.7 us, 16 x 16384 in 4 / 6 blocks 13.7 / 14.5 us;
  /// on rows of 5000 to 32768 columns the plan came within 0.4 us of the best of sizes 1-8.
  int64_t cluster_slice_min = 4096;

  // What a launch may force (tests and benches reach every path and cluster size with them).
  topk_path path = topk_path::tuned;
  int cluster_blocks = 0;     ///< blocks of every row's cluster (0: chosen as above)
  int cluster_slice_max = 0;  ///< the widest slice a block holds in shared memory (0: all it can)

  constexpr int segment() const { return pass_threads * pass_items; }
  constexpr bool one_block_rows() const { return path != topk_path::passes; }
  constexpr bool clusters() const {
    return path == topk_path::cluster || (path == topk_path::tuned && cluster_blocks_max > 0);
  }
  /// cluster_blocks_max, or any size where a cluster path is forced on a target without one.
  constexpr int cluster_blocks_most() const {
    return cluster_blocks_max > 0 ? cluster_blocks_max : platform::max_cluster_blocks_any;
  }
  constexpr int cluster_threads_wide() const {
    return cluster_threads_many_rows > 0 ? cluster_threads_many_rows : cluster_threads;
  }
  /// The same values with a path, a cluster size and a slice cap forced.
  constexpr topk_config forced(topk_path p, int blocks = 0, int slice_max = 0) const {
    topk_config c = *this;
    c.path = p;
    c.cluster_blocks = blocks;
    c.cluster_slice_max = slice_max;
    return c;
  }
};

/// Target t's top-k values.
constexpr topk_config topk_config_for(arch::target t) {
  topk_config c;
  if (t == arch::target::sm90) {
    // Clusters of up to 8 blocks of 1024 threads. bench_topk, width 1M, H200, 2026-11-30, 1024
    // threads against 512 with the launcher's cluster size: 64 x 32K 23.4 vs 44.4 us, 32 x 131K
    // 54 vs 88 us, 4 x 262K 60 vs 87 us. Cap 8, not 16: 16 blocks merging their histograms cost
    // a short row more than they gain (1 x 32K: 38 us at 16; at 512 threads 21 / 27 / 53 us at
    // 4 / 8 / 16), and the host cannot tell a short row from a long one.
    c.cluster_blocks_max = 8;
    c.cluster_threads = 1024;
    // Many rows: 512 threads. bench_topk position_cluster_t512 against position, H200,
    // 2026-12-01: 256 x 10688 22.2 us against 27.4 at 1024 threads in two waves; 64 x 32K, one
    // wave either way: 22.1 against 20.8.
    c.cluster_threads_many_rows = 512;
    // Two to four rows: 16 blocks. bench_topk, width 1M, H200, 2026-12-02, 16 against 8 blocks:
    // 2 x 262K 21.1 / 24.7 us, 4 x 262K 22.6 / 25.9, 4 x 32K 16.7 / 15.4; one row stays at 8
    // (1 x 32K 16.4 / 15.1); 8 x 32K at 16 needs a second wave (28.4 / 15.6).
    c.cluster_few_rows = 4;
    c.cluster_blocks_few_rows = 16;
  }
  return c;  // gfx950 (no clusters on AMD), generic: not measured
}

/// Target T's top-k values, optionally forced, as a function launch_topk takes as its template
/// argument (launch_topk<topk_config_for<T>>; any constexpr function returning a topk_config
/// serves).
template <arch::target T, topk_path Path = topk_path::tuned, int ClusterBlocks = 0,
          int ClusterSliceMax = 0>
constexpr topk_config topk_config_for() {
  return topk_config_for(T).forced(Path, ClusterBlocks, ClusterSliceMax);
}

/// The logits kernels (device/paged_logits.hpp) and their groups: query rows of one request that
/// share every key tile (decode's next_n rows, prefill's tokens).
struct logits_config {
  /// A request's rows split evenly into groups of at most max_group rows (max_group_wide at
  /// H = 128), rounded up to a power of two where power_of_two (the row scorers split a group
  /// over a block's waves). A row a wave of the block elsewhere than sm90: not measured.
  int max_group = 4;
  int max_group_wide = 4;
  bool power_of_two = true;

  // The row scorers' kernel (paged_logits_kernel: generic, gfx950).
  /// Waves of a block (persistent, SMs x resident blocks).
  int waves = 4;
  /// Items the plan makes a block: a block's run of items then ends within a few items of the
  /// others'. Not measured.
  int items_per_block = 4;
  /// Blocks a multiprocessor keeps resident (the kernel's launch bound, hence its registers):
  /// three up to H = 64, one at H = 128 (chosen with the kernel, 2026-11-29; not measured).
  int resident_blocks = 3;
  int resident_blocks_wide = 1;
  /// Tiles a staging scorer's pipeline holds in shared memory (stages - 2 in flight while one is
  /// scored; none for a direct scorer). 8 measured no faster on the H200 while this kernel still
  /// ran sm90 decode (bench_logits decode, up to 2026-11-30: bound by the scoring, not by HBM
  /// latency).
  int stages = 4;

  // The small kernels beside them.
  /// candidate_slots_kernel's block (a thread a column; sm90). Not measured.
  int slot_threads = 256;
  /// clean_logits' block (a block a row). Not measured.
  int clean_threads = 256;

  constexpr int resident_blocks_at(int heads) const {
    return heads <= 64 ? resident_blocks : resident_blocks_wide;
  }
};

/// Target t's logits values.
constexpr logits_config logits_config_for(arch::target t) {
  logits_config c;
  if (t == arch::target::sm90) {
    // bench_indexer prefill/T:32768 and decode next_n 4, H200, 2026-12-03: a group of 4 rows
    // takes 76 KB of shared memory a consumer for its queries at H = 64, which leaves room for
    // two consumer warpgroups; groups of 2 keep three (prefill 32K 18.20 -> 17.28 ms) and of 3
    // keep three with 8 stages (16.46 ms). next_n 4 as two groups of 2: 296 us against 301 as
    // one of 4. At H = 128 two rows already take 76 KB.
    c.max_group = 3;
    c.max_group_wide = 2;
    c.power_of_two = false;
  }
  return c;  // gfx950, generic: not measured
}

/// The K-cache writer's and the Q quantizer's blocks, the writer's lanes
/// (device/k_cache_writer.hpp, device/q_quantizer.hpp).
struct quantize_config {
  /// Threads of a block; a multiple of 64, so every wave is whole on either vendor. Not measured.
  int threads = 256;
  /// Lanes a 32-element block of the writer: one, so a lane quantizes a whole block (four
  /// 16-byte bf16 loads or eight fp32 ones in flight). Nsight Compute on the H200, 2026-12-01,
  /// bench_indexer's write_k_cache over 2.1M tokens: 226 / 138 instructions a token with 8 / 4
  /// lanes a block, issue-bound at 79% / 64% busy; at one lane (with the host-made divider, same
  /// run) fp32 555 -> 442 us, bf16 604 -> 279 us against 8 lanes.
  int write_lanes = 1;
  /// Blocks a writer group quantizes (one coalesced sweep of the source each).
  int write_blocks = 1;
};

/// Target t's quantizer values.
constexpr quantize_config quantize_config_for(arch::target) {
  return quantize_config{};  // sm90 measured above; gfx950, generic: not measured
}

/// The Q quantizer's lanes (device/q_quantizer.hpp). One value for every target: the row checks'
/// kernel, not built per target, runs it as a side job for a call's float queries.
struct q_quantize_config {
  /// Lanes a 32-element block: Q is small (a decode step's T x H rows: 16K blocks for
  /// 64 x 64 x 128), so the most lanes win (bench_indexer quantize_q 64 x 64 x 128, H200,
  /// 2026-12-01: 4.67 -> 4.42 us against 8 lanes, with the host-made divider in the same run).
  int lanes = 4;
  /// Blocks a group quantizes.
  int blocks = 1;
};

/// The logits plan kernel (device/logits_plan.hpp): one block. One value for every target.
struct logits_plan_config {
  /// The plan's block. ptxas at 1024 threads (64 registers a thread) spilled 324 bytes of the
  /// plan kernel (sm_90a, 2026-12-01; -Xptxas=-warn-spills).
  int threads = 512;
  /// Keys an item takes: the split aims at `items_per_block` items a block, in whole 64-key tiles,
  /// within these bounds (chosen with the kernels, 2026-11-29; not measured).
  int min_chunk = 256;
  int max_chunk = 2048;
  /// The most query bytes (values) the plan brings into L2 for the logits kernel: a decode batch
  /// of up to 32 rows at H = 64. More took the plan's one block longer than they saved
  /// (bench_indexer decode, H200, 2026-12-03: 64 rows even; 128 and 256 rows 1-3 us slower end
  /// to end), and the logits kernel waits for the plan.
  int64_t prefetched_query_bytes = int64_t{128} << 10;
  /// Batches of up to this many requests keep the plan's search table in shared memory (16 KiB):
  /// each step of the search is a dependent load (2026-12-01; not measured alone).
  int shared_requests = 4096;
};

/// Row info (device/row_info.hpp). One value for every target.
struct row_info_config {
  /// Batches of up to this many requests take one kernel (each of its blocks reads all R + 1
  /// entries of query_start_loc: 4 KiB at most). bench_indexer, H200, 2026-12-01, against the two
  /// launches (a top-k change in the same run): decode 256 x 8K 160 -> 155 us, 64 x 32K
  /// 132 -> 131 us.
  int fused_requests = 1024;
  /// ... of up to this many in blocks of wide_threads: a request reads its block-table columns in
  /// one round up to 8192 of them (16 requests of 128K tokens, up to 2662 columns each, took two
  /// rounds at 256). Larger batches take `threads` a request: theirs are short, and 256 requests
  /// of 8K took 1.4 us longer at 1024 (bench_indexer, H200, 2026-12-03).
  int wide_requests = 128;
  int wide_threads = 1024;
  /// The blocks of the fused kernel past wide_requests, and of the two-kernel path. Not measured.
  int threads = 256;
  /// check_requests' blocks at most (a block per request, striding past it). Not measured.
  int max_request_blocks = 4096;
  /// Block-table loads a thread keeps in flight: a 512K-token request's 8192 columns are one
  /// round trip at 1024 threads. Nsight Compute on the H200, 2026-12-01, the candidate call's
  /// check: 7.9 -> 7.3 us against one at a time.
  int table_loads = 8;
  /// Batches of up to this many requests: compute_rows searches query_start_loc in shared memory
  /// (each step of the search a dependent load; 2026-12-01, not measured alone).
  int shared_starts = 4096;
};

/// Candidate prep and publish (device/candidates.hpp). One value for every target.
struct candidate_prep_config {
  /// Ids a prep thread holds; a block of 128 to 1024 threads (the fewest, a power of two, that
  /// hold a row), so a row holds at most 4096 ids (candidate_max_blocks). Not measured.
  int items = 4;
  int min_threads = 128;
  /// Ids below this many words' bits (131072: max_model_len 1M in blocks of 8) are deduplicated
  /// and ordered through a bitmap in shared memory instead of sorted: one pass, where the sort
  /// took five of four bits each. Nsight Compute on the H200, 2026-12-03, 16 rows of 2048 x 8:
  /// prep 17.0 -> 13.8 us; run_candidate_indexer 16 x 128K 55.0 -> 52.1 us. Deduplicating
  /// through the bitmap and writing slots, the block takes 1024 threads: a row's columns then
  /// take one round of block-table loads a thread (13.8 us against 17.0 at 512 and the sort; the
  /// sort keeps the fewest threads: at 1024 it took 21 us).
  int bitmap_words = 4096;
  /// Calls of fewer rows than this give each row several blocks (up to max_parts), so that the
  /// slots' block-table loads spread over about this many multiprocessors: 16 rows of 2048 x 8 in
  /// one block each took 13.6-14.9 us (Nsight Compute on the H200, 2026-12-03), longer than the
  /// row checks and the plan it overlaps.
  int target_blocks = 128;
  int max_parts = 8;
  /// Columns' slots a thread resolves before it stores any, so that their block-table loads are
  /// in flight together (2026-12-03; not measured alone).
  int slot_batch = 16;
  /// candidate_block_keys_kernel's block (a thread a candidate block). Not measured.
  int block_keys_threads = 256;
};

/// Every target a tuning table holds a value for.
inline constexpr arch::target all_targets[] = {arch::target::generic, arch::target::sm90,
                                               arch::target::gfx950};

/// Calls f(std::integral_constant<arch::target, T>{}) for the run-time target `t`.
template <class F>
decltype(auto) with_target(arch::target t, F&& f) {
  using arch::target;
  return platform::with_constant<target::sm90, target::gfx950, target::generic>(
      [&](target c) { return c == t; }, f);
}

/// The current device's target (what its tuning is looked up by).
inline platform::error_t current_target(arch::target* t) {
  int device = 0;
  const platform::error_t e = platform::get_device(&device);
  if (e != platform::success) return e;
  return arch::choose_target(device, t);
}

}  // namespace mxi::device
