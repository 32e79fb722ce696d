// The kernels of the exact radix select (device/topk.hpp launches them). A row of n valid columns
// is cut into segments of Shape::segment columns; a launch has at most topk_config::max_blocks
// blocks, (row, y) taking several segments of its row where there are more, so a few long rows
// fill the GPU as well as many short ones, and the grid does not follow the widest possible row.
// Rows of at most `split` columns belong to the one-block kernel and are skipped. Launches, each
// over (row, y):
//   histogram 0..2  count one digit of the keys whose higher digits equal the threshold's so far,
//                   into the row's histogram; the row's last block to finish (an arrival counter)
//                   turns the histogram into the next digit of the threshold, so later launches
//                   read 8 bytes instead of re-walking histograms
//   compact         writes the winners in ascending column order; a block takes a run of
//                   consecutive segments, whose first slot comes from the counts of the runs before
//                   it (a decoupled look-back, blocks taken in run order from a ticket counter, so
//                   it cannot wait on an unscheduled block), a column's from a block scan: the same
//                   bits whatever the segmentation or the rest of the batch
//   sort            (score order only) one block per row sorts the <= k winners by (score desc,
//                   column asc)
// Exact for any distribution: the threshold is found over the whole row, never in a bounded bin.
#pragma once

#include <climits>
#include <cstdint>

#include "mxi/block/block_radix_sort.hpp"
#include "mxi/block/block_radix_threshold.hpp"
#include "mxi/block/block_scan.hpp"
#include "mxi/block/radix_key.hpp"

namespace mxi::device::detail {

using block::radix_digits;

/// The threshold after some digits: those digits, and how many keys equal to them are wanted.
struct threshold_state {
  uint32_t prefix;
  uint32_t rest;
};

/// Per-row scratch of one select, zeroed before the first histogram pass.
struct select_scratch {
  uint32_t* hist;                 ///< [rows][radix_digits::total_bins]
  uint32_t* arrivals;             ///< [rows][passes]: blocks done with each pass
  threshold_state* threshold;     ///< [rows][passes]: the threshold after each pass
  unsigned long long* lookback;   ///< [rows][segments]: published run counts
  unsigned int* ticket;           ///< [1]: next (segment, row) of the compaction
  int segments;                   ///< look-back words a row
  int64_t split;                  ///< rows of at most this many columns are not the passes'
};

/// The split when no row is the one-block kernel's (broken rows, n = -1, too are the passes').
inline constexpr int64_t no_one_block_rows = INT64_MIN;

/// A pass kernel's block: Threads threads, each taking Items columns of every segment.
template <int Threads, int Items>
struct pass_shape {
  static constexpr int block_threads = Threads;
  static constexpr int items_per_thread = Items;
  static constexpr int segment = Threads * Items;
  static_assert(Threads % 64 == 0 && Threads <= 1024, "whole waves, at most 1024 threads");
  static_assert(Items >= 1 && Items <= 32, "1 .. 32 items a thread");
};

/// Segments of a row that take part in its select.
template <class Shape>
MXI_DEVICE int64_t active_segments(int64_t n) {
  return (n + Shape::segment - 1) / Shape::segment;
}

/// Pass `Pass` of the histogram: counts digit `Pass` of the segment's keys whose higher digits
/// match the threshold found so far; the row's last block derives the next threshold state.
template <class Shape, int Pass, class Keys, class Lengths>
__global__ __launch_bounds__(Shape::block_threads) void radix_histogram_kernel(
    Keys keys, Lengths lengths, int k, select_scratch scratch) {
  constexpr int threads = Shape::block_threads;
  constexpr int bins = radix_digits::bins(Pass);
  using find = block::block_radix_threshold<threads, bins>;
  __shared__ uint32_t counts[bins];
  __shared__ typename find::storage_type find_storage;
  __shared__ bool last;

  const int64_t row = blockIdx.x;
  const int64_t n = lengths(row);
  const int64_t active = active_segments<Shape>(n);
  if (n <= k || n <= scratch.split || blockIdx.y >= active) return;
  uint32_t* row_hist = scratch.hist + row * radix_digits::total_bins + radix_digits::offset(Pass);
  const threshold_state before =
      Pass == 0 ? threshold_state{0u, static_cast<uint32_t>(k)}
                : scratch.threshold[row * radix_digits::passes + (Pass > 0 ? Pass - 1 : 0)];

  for (int b = threadIdx.x; b < bins; b += threads) counts[b] = 0;
  __syncthreads();
  uint32_t done = 0;  // segments this block counted
  for (int64_t segment = blockIdx.y; segment < active; segment += gridDim.y, ++done) {
    const int64_t begin = segment * Shape::segment;
    const int64_t end = n < begin + Shape::segment ? n : begin + Shape::segment;
    uint32_t key[Shape::items_per_thread];
#pragma unroll
    for (int j = 0; j < Shape::items_per_thread; ++j) {
      const int64_t c = begin + j * threads + threadIdx.x;
      key[j] = c < end ? keys(row, c) : 0u;
    }
#pragma unroll
    for (int j = 0; j < Shape::items_per_thread; ++j) {
      const int64_t c = begin + j * threads + threadIdx.x;
      if (c < end && radix_digits::matches(key[j], Pass, before.prefix))
        atomicAdd(&counts[radix_digits::digit(key[j], Pass)], 1u);
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += threads)
    if (counts[b] != 0) atomicAdd(&row_hist[b], counts[b]);

  // The last block of the row sees every count (fence, then the arrival ticket).
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    last = atomicAdd(&scratch.arrivals[row * radix_digits::passes + Pass], done) + done == active;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const volatile uint32_t* totals = row_hist;
  const block::radix_pick pick = find::find(totals, before.rest, find_storage);
  if (threadIdx.x == 0)
    scratch.threshold[row * radix_digits::passes + Pass] = {
        (before.prefix << (Pass == 2 ? 10 : 11)) | pick.bin, pick.rest};
}

/// Look-back words: a flag in the top two bits, (above << 31 | equal) below, each count < 2^31.
inline constexpr unsigned long long lookback_aggregate = 1ull << 62;
inline constexpr unsigned long long lookback_prefix = 2ull << 62;
inline constexpr unsigned long long lookback_counts = (1ull << 62) - 1;

MXI_DEVICE unsigned long long pack_counts(uint64_t above, uint64_t equal) { return (above << 31) | equal; }

/// Writes each row's winners in ascending column order as `map(row, column)` to out[row][slot],
/// then -1 up to k (Fill). Rows with n <= k take every column.
template <class Shape, bool Fill, class Keys, class Lengths, class Map>
__global__ __launch_bounds__(Shape::block_threads) void radix_compact_kernel(
    Keys keys, Lengths lengths, int k, select_scratch scratch, Map map, int32_t* out,
    int64_t out_stride) {
  constexpr int threads = Shape::block_threads;
  constexpr int items = Shape::items_per_thread;
  using scan = block::block_scan<unsigned long long, threads>;
  __shared__ typename scan::storage_type scan_storage;
  __shared__ unsigned int ticket;
  __shared__ unsigned long long segment_prefix;

  // Block (row, y) takes a run of consecutive segments. Blocks take (y, row) in ticket order and a
  // run's first slot comes from the runs before it (look-back over y), each held by a block that
  // took an earlier ticket, so every block waited on is running.
  if (threadIdx.x == 0) ticket = atomicAdd(scratch.ticket, 1u);
  __syncthreads();
  const int64_t row = ticket % gridDim.x;
  const int64_t y = ticket / gridDim.x;

  const int64_t n = lengths(row);
  if (n <= scratch.split) return;
  int32_t* out_row = out + row * out_stride;
  const int64_t taken = n < 0 ? 0 : (n < k ? n : k);
  if (Fill && y == 0)
    for (int64_t s = taken + threadIdx.x; s < k; s += threads) out_row[s] = -1;
  if (n <= k) {
    for (int64_t c = y * threads + threadIdx.x; c < n; c += static_cast<int64_t>(gridDim.y) * threads)
      out_row[c] = map(row, c);
    return;
  }
  const threshold_state th = scratch.threshold[row * radix_digits::passes + 2];
  const uint64_t need = th.rest;
  const int64_t active = active_segments<Shape>(n);
  const int64_t per = (active + gridDim.y - 1) / gridDim.y;
  const int64_t run_begin = y * per, run_end = active < run_begin + per ? active : run_begin + per;
  if (run_begin >= run_end) return;  // past the row's runs: no later run looks back here

  // Thread i owns `items` consecutive columns of each segment, so a scan orders columns.
  uint32_t key[items];
  const auto load = [&](int64_t segment) {
    const int64_t end = n < (segment + 1) * Shape::segment ? n : (segment + 1) * Shape::segment;
    const int64_t first = segment * Shape::segment + static_cast<int64_t>(threadIdx.x) * items;
    unsigned long long counts = 0;
#pragma unroll
    for (int j = 0; j < items; ++j) {
      key[j] = first + j < end ? keys(row, first + j) : 0u;
      if (first + j < end) counts += pack_counts(key[j] > th.prefix, key[j] == th.prefix);
    }
    return counts;
  };
  // The run's counts, loaded last to first: a one-segment run keeps its keys in registers.
  unsigned long long local = 0;
  for (int64_t segment = run_end - 1; segment >= run_begin; --segment) local += load(segment);
  unsigned long long offset, aggregate;
  scan::exclusive_sum(local, offset, aggregate, scan_storage);

  if (threadIdx.x == 0) {
    volatile unsigned long long* words = scratch.lookback + row * scratch.segments;
    unsigned long long prefix = 0;
    if (y > 0) {
      atomicExch(const_cast<unsigned long long*>(&words[y]), lookback_aggregate | aggregate);
      for (int64_t s = y - 1;;) {
        const unsigned long long w = words[s];
        if (w == 0) continue;  // run s has not published yet
        prefix += w & lookback_counts;
        if (w & lookback_prefix) break;
        --s;
      }
    }
    atomicExch(const_cast<unsigned long long*>(&words[y]), lookback_prefix | (prefix + aggregate));
    segment_prefix = prefix;
  }
  __syncthreads();
  unsigned long long running = segment_prefix;
  for (int64_t segment = run_begin; segment < run_end; ++segment) {
    const unsigned long long counts = run_end - run_begin == 1 ? local : load(segment);
    __syncthreads();  // the scan storage is free again
    unsigned long long slot, segment_total;
    scan::exclusive_sum(counts, slot, segment_total, scan_storage);
    slot += running;
    running += segment_total;
    uint64_t above = slot >> 31, equal = slot & ((1ull << 31) - 1);
    const int64_t end = n < (segment + 1) * Shape::segment ? n : (segment + 1) * Shape::segment;
    const int64_t first = segment * Shape::segment + static_cast<int64_t>(threadIdx.x) * items;
#pragma unroll
    for (int j = 0; j < items; ++j) {
      if (first + j >= end) break;
      if (key[j] > th.prefix) {
        out_row[above + (equal < need ? equal : need)] = map(row, first + j);
        ++above;
      } else if (key[j] == th.prefix) {
        if (equal < need) out_row[above + equal] = map(row, first + j);
        ++equal;
      }
    }
  }
}

/// Score order: one block per row sorts the row's <= k winners (columns in `selected`, ascending)
/// by (score desc, column asc), maps them and fills -1 up to k.
template <int Threads, int Items, class Keys, class Lengths, class Map>
__global__ __launch_bounds__(Threads) void sort_selected_kernel(
    Keys keys, Lengths lengths, int k, int64_t split, const int32_t* selected, int column_bits,
    Map map, int32_t* out, int64_t out_stride) {
  using sort = block::block_radix_sort<uint64_t, Threads, Items>;
  __shared__ typename sort::storage_type storage;

  const int64_t row = blockIdx.x;
  const int64_t n = lengths(row);
  if (n <= split) return;  // the one-block kernel's row
  const int taken = static_cast<int>(n < 0 ? 0 : (n < k ? n : k));
  const uint64_t column_mask = (uint64_t{1} << column_bits) - 1;
  uint64_t item[Items];
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int r = static_cast<int>(threadIdx.x) * Items + j;
    if (r < taken) {
      const int64_t c = selected[row * k + r];
      item[j] = (static_cast<uint64_t>(~keys(row, c)) << column_bits) | static_cast<uint64_t>(c);
    } else {
      item[j] = ~uint64_t{0};  // above every real item: columns stay below column_mask
    }
  }
  sort::sort(item, storage, 0, 32 + column_bits);
  int32_t* out_row = out + row * out_stride;
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int r = static_cast<int>(threadIdx.x) * Items + j;
    if (r < k) out_row[r] = r < taken ? map(row, static_cast<int64_t>(item[j] & column_mask)) : -1;
  }
}

}  // namespace mxi::device::detail
