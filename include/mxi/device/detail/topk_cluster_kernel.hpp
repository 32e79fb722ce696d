// The cluster select (device/topk.hpp picks it on sm90 for ascending-position output): one launch
// selects every row, whatever its length, with a thread-block cluster of C blocks per row
// (platform/cluster.hpp). Block b of a row's cluster takes the b-th contiguous slice of the row's
// actual length (lengths(row), read on the device), so the cost follows the work, never the width.
//
//   first     when every slice sits in shared memory (copied in while its first digit is
//             counted), the first digit is block::fine_digit, an fp16-like cut of the score: the
//             C histograms are summed bin by bin through distributed shared memory (integers, so
//             every block gets the same counts), after a cluster barrier directly in small
//             clusters, and from 4 blocks up by the bins' owners (block q owns a 1/C share: every
//             block adds its nonzero counts into the owners' sums with remote atomics, then one
//             barrier, and each bin is read from its owner; the owners' sums were zeroed before
//             the stage, behind a split barrier). The bin holding
//             the k-th largest key keeps a few hundred keys of N(0, 1) rows where the top 11 bits'
//             would keep thousands: each block marks its keys above / in that bin (the compaction
//             masks), appends the bin's keys to a list, and after a cluster barrier every block
//             copies every list into one pool and finishes the threshold among the pool's keys
//             alone, the same in every block: by counting each key's rank where the pool is
//             small (block::block_radix_select::rank), else by block_radix_select's passes
//             (skipping the digits the bin fixes). A bin of more than pool_keys keys falls back
//             to the passes over the slices.
//   passes    per digit of block::radix_digits, each block histograms its slice (from shared
//             memory, or streamed from global memory each pass when slices do not fit), then
//             the cluster's histogram is summed as above and every block derives the same next
//             digit of the threshold (block::block_radix_select::step). With one barrier a pass,
//             histograms alternate between two buffers, so a block clears the next pass's while
//             others still read the last one's; with two, one buffer holds the counts and the
//             other the sums.
//   compact   each block tallies its slice's keys above and equal to the threshold, publishes the
//             two counts, and after a cluster barrier starts its winners at the sums of the
//             slices before it (lower ranks), so the winners land in ascending column order with
//             ties to the smaller column: the bits of the one-block and multi-block paths.
//             A block's shared memory outlives every read of it (the barrier's wait comes last).
//
// Rows of n <= k columns take every column and -1 after (n <= 0: all -1, a broken row), split
// over the cluster's blocks with no barrier. Score order stays on the one-block and multi-block
// paths: sorting k winners spread over C blocks would need a cluster-wide sort, and the decode
// engines read positions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mxi/block/block_radix_select.hpp"
#include "mxi/block/radix_key.hpp"
#include "mxi/platform/cluster.hpp"
#include "mxi/platform/launch.hpp"

namespace mxi::device::detail {

/// Dynamic shared memory of one block, carved in order: the head (two histograms: for alternate
/// passes, or counts and the cluster's sums; the step storage, the slice's compaction counts), then
/// the resident slice's keys as 16-byte vectors.
template <int Threads>
struct cluster_select_smem {
  using steps = block::block_radix_select<Threads>;
  /// The most keys the first pass may leave in the threshold's bin for the cluster to finish the
  /// threshold in shared memory; more take the radix passes over the slices.
  static constexpr int pool_keys = 4096;
  struct head_type {
    uint32_t hist[2][block::radix_digits::max_bins];
    typename steps::step_storage step;
    uint32_t above, equal;  ///< the slice's keys above / equal to the threshold
    uint32_t own_count;     ///< the slice's keys in the first pass's bin
    uint32_t ranked[2];     ///< steps::rank's threshold key and its ties taken
    uint32_t lists[platform::max_cluster_blocks_any];  ///< every block's own_count
    alignas(16) uint32_t own[pool_keys];               ///< those keys, in no particular order
    alignas(16) uint32_t pool[pool_keys];  ///< every slice's, in rank order (clusters of 2 up)
  };
  MXI_HOST_DEVICE static constexpr size_t head_bytes() { return align_up(sizeof(head_type), 16); }
  /// Bytes for resident slices of up to `slice_max` columns (0: every slice streams).
  MXI_HOST_DEVICE static constexpr size_t bytes(int64_t slice_max) {
    return head_bytes() + static_cast<size_t>(slice_max > 0 ? steps::row_vectors(slice_max) : 0) * 16;
  }
  /// The widest resident slice within `budget` bytes (0 if none): one compaction window at most.
  static int64_t max_slice(size_t budget) {
    if (budget < head_bytes() + 16) return 0;
    int64_t vectors = static_cast<int64_t>((budget - head_bytes()) / 16);
    if (vectors > steps::max_vectors) vectors = steps::max_vectors;
    const int64_t width = 4 * vectors - 3;  // the largest width with row_vectors(width) == vectors
    return width > 0 ? width : 0;
  }
};

/// The cluster's histogram: bin b summed over its blocks' histograms (same offset in each block's
/// shared memory), in rank order.
struct cluster_counts {
  const uint32_t* hist;
  unsigned blocks;
  MXI_DEVICE uint32_t operator[](uint32_t b) const {
    uint32_t sum = 0;
    for (unsigned q = 0; q < blocks; ++q) sum += platform::cluster_shared(hist, q)[b];
    return sum;
  }
};

/// The cluster's histogram once each block q has summed bins [q span, (q + 1) span) into its `sum`
/// (same offset in each block): one read a bin, of its owner, where cluster_counts reads C.
struct reduced_counts {
  const uint32_t* sum;
  unsigned span;
  MXI_DEVICE uint32_t operator[](uint32_t b) const {
    return platform::cluster_shared(sum, b / span)[b];
  }
};

/// Clusters of at least this many blocks sum their histograms bin-wise in two steps
/// (reduced_counts: 2 x bins remote reads a block and one more cluster barrier a pass, against
/// C x bins): at C = 8 the direct sums' remote reads were the kernel's longest stall.
inline constexpr unsigned reduced_counts_min_blocks = 4;

/// Row blockIdx.x / C, slice cluster_rank(): see the file comment. Slices of at most `slice_max`
/// columns sit in shared memory; longer ones stream.
template <int Threads, class Keys, class Lengths, class Map>
__global__ __launch_bounds__(Threads) void cluster_select_kernel(Keys keys, Lengths lengths, int k,
                                                                 int slice_max, Map map,
                                                                 int32_t* out, int64_t out_stride) {
  using smem_t = cluster_select_smem<Threads>;
  using steps = typename smem_t::steps;
  using digits = block::radix_digits;
  extern __shared__ __align__(16) unsigned char cluster_select_shared[];
  auto& head = *reinterpret_cast<typename smem_t::head_type*>(cluster_select_shared);
  // The first histogram is shared memory, which no kernel before this one touches: cleared while
  // that kernel still runs, not after the wait and the row's length.
  steps::clear(head.hist[0]);
  platform::wait_for_prior_grid();  // launched chained (platform/launch.hpp)
  platform::allow_next_grid();
  uint4* tile = reinterpret_cast<uint4*>(cluster_select_shared + smem_t::head_bytes());

  const unsigned blocks = platform::cluster_blocks();
  const unsigned rank = platform::cluster_rank();
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t row = blockIdx.x / blocks;
  const int64_t n = lengths(row);
  const int64_t valid = n > 0 ? n : 0;
  int32_t* out_row = out + row * out_stride;
  // Slice `rank`: [begin, end), whole 16-byte vectors apart (the same alignment in every slice).
  const int64_t per = align_up((valid + blocks - 1) / blocks, 4);
  const int64_t begin = valid < rank * per ? valid : rank * per;
  const int64_t end = valid < begin + per ? valid : begin + per;

  if (n <= k) {  // every column, then -1 (all -1 for an empty or broken row)
    for (int64_t c = begin + tid; c < end; c += Threads) out_row[c] = map(row, c);
    for (int64_t s = valid + rank * Threads + tid; s < k; s += static_cast<int64_t>(blocks) * Threads)
      out_row[s] = -1;
    return;
  }

  const auto key_of = [](uint32_t w) { return Keys::key_of(w); };
  const block::global_key_row<decltype(key_of)> slice(keys.words(row) + begin,
                                                      static_cast<int>(end - begin), key_of);
  // Every slice sits in shared memory, or every slice streams: the same in every block.
  const bool resident = slice_max > 0 && per <= slice_max;
  block::key_row staged{tile, slice.offset, slice.n};

  // A cluster of one block (many rows) reads its own counts and waits at block barriers: a
  // cluster barrier's release is a GPU-scope fence (MEMBAR.ALL.GPU) and a remote read a generic
  // load, both for nothing there.
  const bool alone = blocks == 1;
  const auto sync = [alone] {
    if (alone)
      __syncthreads();
    else
      platform::cluster_sync();
  };
  // The bin of the cluster's histogram (every block's `hist`, summed) holding the rest-th largest
  // key, the same in every block. Starts with the barrier that brings every block's counts in.
  const bool reduced = blocks >= reduced_counts_min_blocks;
  const unsigned span = (digits::max_bins + blocks - 1) / blocks;  // bins a block owns (reduced)
  const auto pick = [&](uint32_t* hist, uint32_t rest) {
    sync();
    if (alone) return steps::find::find(static_cast<const uint32_t*>(hist), rest, head.step.find);
    if (!reduced) return steps::find::find(cluster_counts{hist, blocks}, rest, head.step.find);
    // hist[1] holds the sums: every block read this block's sums of the last pass before this
    // pass's first barrier, and its counts (hist[0]) before the last pass's second one.
    uint32_t* sum = head.hist[1];
    const cluster_counts all{hist, blocks};
    for (unsigned b = rank * span + tid; b < (rank + 1) * span && b < digits::max_bins;
         b += Threads)
      sum[b] = all[b];
    platform::cluster_sync();  // every block's sums are in
    return steps::find::find(reduced_counts{sum, span}, rest, head.step.find);
  };
  // The first pick of a resident row in clusters of reduced_counts_min_blocks up: each block adds
  // its counts into the bins' owners' sums (remote atomics), one barrier where `pick` pulls them
  // in two. The sums were zeroed and published by the arrive before the stage.
  const bool push = resident && reduced;
  const auto push_pick = [&](const uint32_t* hist, uint32_t rest) {
    uint32_t* sum = head.hist[1];
    platform::cluster_wait();  // every owner's sums are zero
    for (unsigned b = tid; b < digits::max_bins; b += Threads)
      if (hist[b] != 0) atomicAdd(platform::cluster_shared(sum, b / span) + b, hist[b]);
    platform::cluster_sync();  // every block's counts are in their owners' sums
    return steps::find::find(reduced_counts{sum, span}, rest, head.step.find);
  };

  block::radix_threshold t;
  t.rest = static_cast<uint32_t>(k);
  block::window_tally tally;  // of a resident slice
  bool tallied = false;
  if (tid == 0) head.own_count = 0;
  if (push) {
    for (int b = tid; b < digits::max_bins; b += Threads) head.hist[1][b] = 0;
    platform::cluster_arrive();  // push_pick's wait
  }
  if (resident) {
    // The first pass counts the fine first digit: its bin (whose keys the cluster gathers) holds
    // few keys where the top bits' would hold thousands.
    staged = steps::stage(slice, true, head.hist[0], tile, block::fine_first_digit{});
    const block::radix_pick first =
        push ? push_pick(head.hist[0], t.rest) : pick(head.hist[0], t.rest);
    if (first.count <= smem_t::pool_keys) {
      const uint32_t lo = static_cast<uint32_t>(block::fine_digit_start(first.bin));
      const uint32_t hi = static_cast<uint32_t>(block::fine_digit_start(first.bin + 1) - 1);
      tally = steps::masks(staged, block::key_range{lo, hi});
      t.rest = first.rest;
      if (first.count != first.rest) {  // else every key of the bin is taken
        // Gather the bin's keys of every slice, then finish the threshold among them in this
        // block: the same pool and passes in every block, so the same threshold.
        const int mine = platform::popcount(tally.equal);
        if (mine != 0) {
          uint32_t slot = atomicAdd(&head.own_count, static_cast<uint32_t>(mine));
          steps::for_each_equal(tally, staged, [&](int, uint32_t key) { head.own[slot++] = key; });
        }
        sync();  // every slice's keys are in, and every pick has read the counts
        uint32_t* pool = head.own;
        if (!alone) {  // every list's length, then every key, each read at once
          if (tid < static_cast<int>(blocks))
            head.lists[tid] =
                *platform::cluster_shared(&head.own_count, static_cast<unsigned>(tid));
          __syncthreads();
          for (uint32_t i = static_cast<uint32_t>(tid); i < first.count; i += Threads) {
            unsigned q = 0;
            uint32_t at = i;
            while (at >= head.lists[q]) at -= head.lists[q++];
            head.pool[i] = platform::cluster_shared(head.own, q)[at];
          }
          __syncthreads();
          pool = head.pool;
        }
        const block::key_row in_bin{reinterpret_cast<uint4*>(pool), 0,
                                    static_cast<int>(first.count)};
        if (first.count <= steps::rank_max_keys) {
          steps::rank(in_bin, t, head.ranked);
        } else {
          // The pool's keys lie in [lo, hi]: the digits they all share need no pass.
          int pass = 0;
          while (pass < digits::passes &&
                 (lo >> digits::shift(pass)) == (hi >> digits::shift(pass))) {
            t.prefix = lo >> digits::shift(pass);
            t.shift = static_cast<uint32_t>(digits::shift(pass));
            ++pass;
          }
          steps::resolve(in_bin, pass, /*counted=*/false, t, head.hist[0], head.step);
        }
        steps::refine(tally, staged, t);
      }
      steps::finish(tally, head.step);
      tallied = true;
    } else {
      sync();  // every block has read the first pass's counts (and sums) before they are cleared
    }
  } else {
    steps::count(slice, 0, 0u, head.hist[0]);
  }
  if (!tallied) {
    // The threshold, digit by digit over the whole row (a resident slice recounts its top digit).
#pragma unroll 1
    for (int pass = 0;; ++pass) {
      uint32_t* hist = head.hist[reduced ? 0 : pass % 2];
      if (pass > 0 || resident) {
        // The other blocks read this buffer two passes ago, before the last pass's barrier (or,
        // on pass 0, in the first pass's pick, before the barrier after it).
        steps::clear(hist);
        if (resident)
          steps::count(staged, pass, t.prefix, hist);
        else
          steps::count(slice, pass, t.prefix, hist);
      }
      if (steps::advance(t, pass, pick(hist, t.rest)) || pass == digits::passes - 1) break;
    }
  }

  // Streamed slices are compacted in windows of whole vectors, each one scan's worth.
  constexpr int window = 4 * steps::max_vectors - 4;
  const auto part = [&](int first) {
    return slice.part(first, slice.n - first < window ? slice.n - first : window);
  };
  uint32_t above = 0, equal = 0;
  if (resident) {
    if (!tallied) tally = steps::tally(staged, t, head.step);
    above = tally.total_above();
    equal = tally.total_equal();
  } else {
    for (int first = 0; first < slice.n; first += window) {
      __syncthreads();  // the scan storage is free again
      const block::window_tally w = steps::tally(part(first), t, head.step);
      above += w.total_above();
      equal += w.total_equal();
    }
  }
  if (tid == 0) {
    head.above = above;
    head.equal = equal;
  }
  sync();  // every slice's counts are in
  // Lane q < rank of every warp reads block q's counts, and the warp sums them: one round of
  // remote reads, where a loop over the blocks before this one took `rank` rounds.
  const unsigned lane = static_cast<unsigned>(platform::lane_id<32>());
  uint32_t above_before = lane < rank ? *platform::cluster_shared(&head.above, lane) : 0;
  uint32_t equal_before = lane < rank ? *platform::cluster_shared(&head.equal, lane) : 0;
  above_before = platform::wave_sum<32>(above_before);
  equal_before = platform::wave_sum<32>(equal_before);
  // This block reads no other block's shared memory after this: the barrier only keeps every
  // block's counts alive until the last read of them, so its arrive needs no release.
  if (!alone) platform::cluster_arrive_relaxed(above_before + equal_before);

  if (resident) {
    steps::place(tally, t, above_before, equal_before, [&](uint32_t slot, int word) {
      out_row[slot] = map(row, begin + word - staged.offset);
    });
  } else {
    for (int first = 0; first < slice.n; first += window) {
      __syncthreads();  // the scan storage is free again
      const auto columns = part(first);
      const block::window_tally w = steps::tally(columns, t, head.step);
      steps::place(w, t, above_before, equal_before, [&](uint32_t slot, int word) {
        out_row[slot] = map(row, begin + first + word - columns.offset);
      });
      above_before += w.total_above();
      equal_before += w.total_equal();
    }
  }
  if (!alone) platform::cluster_wait();  // no block leaves while another may still read its counts
}

}  // namespace mxi::device::detail
