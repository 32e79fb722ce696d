// Exact, deterministic top-k over rows of scores. Two paths, chosen row by row on the device from
// the row's length (the host cannot read it): rows that fit in shared memory take one block each
// and one launch (device/detail/topk_row_kernel.hpp); longer rows are cut into segments over
// several blocks and launches (device/detail/topk_kernels.hpp), a grid sized by the GPU, not by
// the width. When no row can be longer than the one-block limit, only that launch runs. Both paths
// give the same bits. A row is the columns [0, n)
// of some key source; n < 0 marks a broken row (all -1). The k
// largest keys win, equal keys go to the smaller column, and the row is written as
// map(row, column) in ascending column order, or by (score desc, column asc), then -1 up to k.
// Stream-ordered, no allocation, no host sync: safe under graph capture.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mxi/block/radix_key.hpp"
#include "mxi/device/detail/topk_kernels.hpp"
#include "mxi/device/detail/topk_row_kernel.hpp"
#include "mxi/platform/device_limits.hpp"
#include "mxi/platform/runtime.hpp"
#include "mxi/types.hpp"

namespace mxi::device {

/// The multi-block passes: threads of a block and columns each thread takes (a segment of
/// block_threads * items columns), and the blocks a pass launches at most (segments past it are
/// taken in turn by the same blocks: 1024 is about four resident blocks of 512 threads on every SM
/// of an H200 or CU of an MI355X). OneBlockRows: rows that fit take the one-block kernel (false
/// sends every row through the passes; the tests compare both paths). Where some row may not fit,
/// a call of fewer than one_block_min_rows rows sends every row through the passes: a few rows
/// fill the GPU better with several blocks each (H200, max_model_len 1M: 8 x 32K took 82 us on
/// the passes, 94 us with a block a row).
template <int BlockThreads = 512, int ItemsPerThread = 8, bool OneBlockRows = true>
struct topk_config {
  static constexpr int block_threads = BlockThreads;
  static constexpr int items_per_thread = ItemsPerThread;
  static constexpr int segment = BlockThreads * ItemsPerThread;
  static constexpr int max_blocks = 1024;
  static constexpr bool one_block_rows = OneBlockRows;
  static constexpr int one_block_min_rows = 32;
  static_assert(BlockThreads % 64 == 0 && BlockThreads <= 1024, "whole waves, at most 1024 threads");
  static_assert(ItemsPerThread >= 1 && ItemsPerThread <= 32, "1 .. 32 items a thread");
};

inline constexpr int topk_max_k = 4096;

/// Key sources: key(row, column) is the order-preserving image of the score; the one-block path
/// reads a row as 32-bit words (words(row), 16 bytes at a time) and converts each with key_of.
struct float_score_keys {
  const float* scores;
  int64_t stride;
  MXI_DEVICE static uint32_t key_of(uint32_t word) { return block::score_key(bit_cast<float>(word)); }
  MXI_DEVICE const uint32_t* words(int64_t row) const {
    return reinterpret_cast<const uint32_t*>(scores + row * stride);
  }
  MXI_DEVICE uint32_t operator()(int64_t row, int64_t column) const { return key_of(words(row)[column]); }
};
struct uint_keys {
  const uint32_t* keys;
  int64_t stride;
  MXI_DEVICE static uint32_t key_of(uint32_t word) { return word; }
  MXI_DEVICE const uint32_t* words(int64_t row) const { return keys + row * stride; }
  MXI_DEVICE uint32_t operator()(int64_t row, int64_t column) const { return keys[row * stride + column]; }
};

/// Row lengths from an int32 array (-1: broken row).
struct int_lengths {
  const int32_t* n;
  MXI_DEVICE int64_t operator()(int64_t row) const { return n[row]; }
};

/// Column -> output: the column itself.
struct identity_map {
  MXI_DEVICE int32_t operator()(int64_t, int64_t column) const { return static_cast<int32_t>(column); }
};

/// What a top-k launch covers: `rows` rows of at most `width` valid columns.
struct topk_shape {
  int64_t rows = 0;
  int64_t width = 0;
  int k = 0;
  output_order order = output_order::position;
};

namespace detail {

inline size_t align_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

template <class Config>
int64_t topk_segments(int64_t width) {
  return width <= Config::segment ? 1 : (width + Config::segment - 1) / Config::segment;
}

/// Smallest b with 2^b > width: the column bits of a sort key, leaving the all-ones pattern free.
inline int column_bits(int64_t width) {
  int b = 1;
  while ((int64_t{1} << b) <= width) ++b;
  return b;
}

/// The workspace, carved in order: the per-row scratch the memset clears (histograms, arrivals,
/// thresholds, look-back words, the ticket), then the staged winners (score order).
template <class Config>
struct topk_workspace {
  select_scratch scratch;
  int32_t* selected;

  static size_t cleared_bytes(const topk_shape& s) {
    const size_t rows = static_cast<size_t>(s.rows);
    return align_up(rows * block::radix_digits::total_bins * sizeof(uint32_t)) +
           align_up(rows * block::radix_digits::passes * sizeof(uint32_t)) +
           align_up(rows * block::radix_digits::passes * sizeof(threshold_state)) +
           align_up(rows * topk_segments<Config>(s.width) * sizeof(unsigned long long)) +
           align_up(sizeof(unsigned int));
  }
  static size_t bytes(const topk_shape& s) {
    return cleared_bytes(s) +
           (s.order == output_order::score ? align_up(static_cast<size_t>(s.rows) * s.k * sizeof(int32_t)) : 0);
  }
  /// `split`: rows of at most this many columns are the one-block kernel's.
  topk_workspace(const topk_shape& s, int64_t split, void* base) {
    scratch.split = split;
    const size_t rows = static_cast<size_t>(s.rows);
    const int64_t segments = topk_segments<Config>(s.width);
    char* p = static_cast<char*>(base);
    auto carve = [&p](size_t bytes) {
      char* q = p;
      p += align_up(bytes);
      return q;
    };
    scratch.hist = reinterpret_cast<uint32_t*>(carve(rows * block::radix_digits::total_bins * sizeof(uint32_t)));
    scratch.arrivals = reinterpret_cast<uint32_t*>(carve(rows * block::radix_digits::passes * sizeof(uint32_t)));
    scratch.threshold = reinterpret_cast<threshold_state*>(carve(rows * block::radix_digits::passes * sizeof(threshold_state)));
    scratch.lookback = reinterpret_cast<unsigned long long*>(carve(rows * segments * sizeof(unsigned long long)));
    scratch.ticket = reinterpret_cast<unsigned int*>(carve(sizeof(unsigned int)));
    scratch.segments = static_cast<int>(segments);
    selected = reinterpret_cast<int32_t*>(p);
  }
};

/// One block per row holding Threads * 4 >= k winners; rows of at most `split` columns are skipped.
template <int Threads, class Keys, class Lengths, class Map>
void launch_sort(const topk_shape& s, int64_t split, Keys keys, Lengths lengths, const int32_t* selected,
                 Map map, int32_t* out, int64_t out_stride, platform::stream_t stream) {
  sort_selected_kernel<Threads, 4><<<static_cast<unsigned>(s.rows), Threads, 0, stream>>>(
      keys, lengths, s.k, split, selected, column_bits(s.width), map, out, out_stride);
}

/// The one-block path: a block of this many threads per row.
inline constexpr int row_select_threads = 1024;

/// Calls f(std::integral_constant<int, S>{}) with the one-block path's sort width for `s`: 0 in
/// position order, else the winners each thread sorts (k <= S * row_select_threads).
template <class F>
auto with_sort_items(const topk_shape& s, F&& f) {
  if (s.order == output_order::position) return f(std::integral_constant<int, 0>{});
  if (s.k <= row_select_threads) return f(std::integral_constant<int, 1>{});
  if (s.k <= 2 * row_select_threads) return f(std::integral_constant<int, 2>{});
  return f(std::integral_constant<int, 4>{});
}

/// The widest row the one-block path takes for `s` within `limit` bytes of shared memory.
inline int64_t one_block_width(const topk_shape& s, size_t limit) {
  return with_sort_items(s, [&](auto items) {
    return row_select_smem<row_select_threads, decltype(items)::value>::max_width(limit, s.k);
  });
}

/// The one-block kernel over every row of `s`; rows longer than `longest` are left to the passes.
template <int SortItems, class Keys, class Lengths, class Map>
platform::error_t launch_row_select(const topk_shape& s, int64_t longest, int device, size_t limit,
                                    Keys keys, Lengths lengths, Map map, int32_t* out,
                                    int64_t out_stride, platform::stream_t stream) {
  constexpr int threads = row_select_threads;
  auto* kernel = &row_select_kernel<threads, SortItems, Keys, Lengths, Map>;
  // Raise the kernel's limit once per device: the attribute call is host time on every launch.
  static std::atomic<uint64_t> raised{0};
  const uint64_t bit = device >= 0 && device < 64 ? uint64_t{1} << device : 0;
  if ((raised.load(std::memory_order_relaxed) & bit) == 0 || bit == 0) {
    const platform::error_t e = platform::set_max_dynamic_shared_memory(kernel, static_cast<int>(limit));
    if (e != platform::success) return e;
    raised.fetch_or(bit, std::memory_order_relaxed);
  }
  const int64_t width = s.width < longest ? s.width : longest;
  const size_t smem = row_select_smem<threads, SortItems>::bytes(width, s.k);
  kernel<<<static_cast<unsigned>(s.rows), threads, smem, stream>>>(keys, lengths, s.k, width, map,
                                                                   out, out_stride);
  return platform::last_error();
}

}  // namespace detail

/// The widest rows launch_topk gives one block each for `shape`'s k and order on the current
/// device (0 if it cannot tell); wider rows take the multi-block passes.
inline int64_t topk_one_block_width(const topk_shape& shape) {
  int device = 0;
  size_t limit = 0;
  if (platform::shared_memory_limit(&device, &limit) != platform::success) return 0;
  return detail::one_block_width(shape, limit);
}

/// Bytes of workspace launch_topk needs for `shape`.
template <class Config = topk_config<>>
size_t topk_workspace_bytes(const topk_shape& shape) {
  return detail::topk_workspace<Config>::bytes(shape);
}

/// Whether launch_topk takes `shape` (k in [1, 4096], segments within a grid dimension,
/// columns below 2^31).
template <class Config = topk_config<>>
bool topk_supports(const topk_shape& shape) {
  return shape.k >= 1 && shape.k <= topk_max_k && shape.rows >= 0 && shape.rows <= INT32_MAX &&
         shape.width < INT32_MAX && detail::topk_segments<Config>(shape.width) <= 65535;
}

/// Selects row by row into out[row][0, k). `workspace` holds topk_workspace_bytes(shape) bytes
/// (the one-block path leaves it untouched).
/// Returns the launch status (platform::success when every kernel was queued).
template <class Config = topk_config<>, class Keys, class Lengths, class Map>
platform::error_t launch_topk(const topk_shape& shape, Keys keys, Lengths lengths, Map map,
                              int32_t* out, int64_t out_stride, void* workspace,
                              platform::stream_t stream) {
  if (shape.rows == 0) return platform::success;
  int device = 0;
  size_t limit = 0;
  platform::error_t e = platform::shared_memory_limit(&device, &limit);
  if (e != platform::success) return e;
  // Rows of at most `split` columns are the one-block kernel's, longer ones the passes'.
  int64_t split = Config::one_block_rows ? detail::one_block_width(shape, limit) : 0;
  if (split <= 0 || (shape.width > split && shape.rows < Config::one_block_min_rows))
    split = detail::no_one_block_rows;
  if (split > 0) {
    e = detail::with_sort_items(shape, [&](auto items) {
      return detail::launch_row_select<decltype(items)::value>(shape, split, device, limit, keys,
                                                               lengths, map, out, out_stride, stream);
    });
    if (e != platform::success || shape.width <= split) return e;
  }

  using ws_t = detail::topk_workspace<Config>;
  const ws_t ws(shape, split, workspace);
  const int64_t segments = detail::topk_segments<Config>(shape.width);
  const int64_t per_row = std::max<int64_t>(1, Config::max_blocks / std::max<int64_t>(shape.rows, 1));
  const dim3 grid(static_cast<unsigned>(shape.rows), static_cast<unsigned>(std::min(segments, per_row)));
  constexpr int threads = Config::block_threads;

  e = platform::memset_async(workspace, 0, ws_t::cleared_bytes(shape), stream);
  if (e != platform::success) return e;
  detail::radix_histogram_kernel<Config, 0><<<grid, threads, 0, stream>>>(keys, lengths, shape.k, ws.scratch);
  detail::radix_histogram_kernel<Config, 1><<<grid, threads, 0, stream>>>(keys, lengths, shape.k, ws.scratch);
  detail::radix_histogram_kernel<Config, 2><<<grid, threads, 0, stream>>>(keys, lengths, shape.k, ws.scratch);
  if (shape.order == output_order::position) {
    detail::radix_compact_kernel<Config, true><<<grid, threads, 0, stream>>>(
        keys, lengths, shape.k, ws.scratch, map, out, out_stride);
    return platform::last_error();
  }
  detail::radix_compact_kernel<Config, false><<<grid, threads, 0, stream>>>(
      keys, lengths, shape.k, ws.scratch, identity_map{}, ws.selected, int64_t{shape.k});
  if (shape.k <= 512)
    detail::launch_sort<128>(shape, split, keys, lengths, ws.selected, map, out, out_stride, stream);
  else if (shape.k <= 1024)
    detail::launch_sort<256>(shape, split, keys, lengths, ws.selected, map, out, out_stride, stream);
  else if (shape.k <= 2048)
    detail::launch_sort<512>(shape, split, keys, lengths, ws.selected, map, out, out_stride, stream);
  else
    detail::launch_sort<1024>(shape, split, keys, lengths, ws.selected, map, out, out_stride, stream);
  return platform::last_error();
}

}  // namespace mxi::device
