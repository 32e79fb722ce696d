// Exact, deterministic top-k over rows of scores. Three paths, one launch each except the last:
//   cluster    (sm90, ascending-position output) a thread-block cluster of C blocks per row, each
//              block a slice of the row's actual length, for rows of any length
//              (device/detail/topk_cluster_kernel.hpp); C from the row count and the SM count;
//   one block  rows that fit in shared memory take one block each
//              (device/detail/topk_row_kernel.hpp);
//   passes     longer rows are cut into segments over several blocks and launches
//              (device/detail/topk_kernels.hpp), a grid sized by the GPU, not by the width.
// Without clusters (other targets, score order) each row picks one of the last two on the device
// from its length (the host cannot read it); when no row can be longer than the one-block limit,
// only that launch runs. Every path gives the same bits. A row is the columns [0, n)
// of some key source; n < 0 marks a broken row (all -1). The k
// largest keys win, equal keys go to the smaller column, and the row is written as
// map(row, column) in ascending column order, or by (score desc, column asc), then -1 up to k.
// Stream-ordered, no allocation, no host sync: safe under graph capture.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mxi/block/radix_key.hpp"
#include "mxi/device/detail/topk_cluster_kernel.hpp"
#include "mxi/device/detail/topk_kernels.hpp"
#include "mxi/device/detail/topk_row_kernel.hpp"
#include "mxi/device/tuning.hpp"
#include "mxi/platform/cluster.hpp"
#include "mxi/platform/device_limits.hpp"
#include "mxi/platform/launch.hpp"
#include "mxi/platform/per_device_cache.hpp"
#include "mxi/platform/runtime.hpp"
#include "mxi/types.hpp"

namespace mxi::device {

/// Which kernels a launch may take (the tests force each; engines leave `tuned`).
enum class topk_path {
  tuned,      ///< the target's: clusters where cluster_blocks_max > 0 (position order), else below
  one_block,  ///< rows that fit take the one-block kernel, longer ones the passes
  passes,     ///< every row through the multi-block passes
  cluster,    ///< the cluster select in position order (score order: as one_block)
};

/// A top-k launch's numbers as template arguments (see topk_tuning). ClusterBlocks forces the
/// blocks a row's cluster takes (0: from the row and SM counts) and ClusterSliceMax caps the
/// slice a block holds in shared memory (0: what the shared memory holds); tests use them to
/// reach every cluster size and the streamed slices with small inputs.
template <int BlockThreads, int ItemsPerThread, int MaxBlocks, int OneBlockMinRows,
          int ClusterBlocksMax, int ClusterThreads, topk_path Path = topk_path::tuned,
          int ClusterBlocks = 0, int ClusterSliceMax = 0, int ClusterThreadsManyRows = 0,
          int ClusterFewRows = 0, int ClusterBlocksFewRows = 0>
struct topk_config {
  static constexpr int block_threads = BlockThreads;
  static constexpr int items_per_thread = ItemsPerThread;
  static constexpr int segment = BlockThreads * ItemsPerThread;
  static constexpr int max_blocks = MaxBlocks;
  static constexpr int one_block_min_rows = OneBlockMinRows;
  static constexpr bool one_block_rows = Path != topk_path::passes;
  static constexpr bool clusters =
      Path == topk_path::cluster || (Path == topk_path::tuned && ClusterBlocksMax > 0);
  static constexpr int cluster_blocks_max =
      ClusterBlocksMax > 0 ? ClusterBlocksMax : platform::max_cluster_blocks_any;
  static constexpr int cluster_threads = ClusterThreads;
  static constexpr int cluster_threads_many_rows =
      ClusterThreadsManyRows > 0 ? ClusterThreadsManyRows : ClusterThreads;
  static constexpr int cluster_few_rows = ClusterFewRows;
  static constexpr int cluster_blocks_few_rows = ClusterBlocksFewRows;
  static constexpr int cluster_blocks = ClusterBlocks;
  static constexpr int cluster_slice_max = ClusterSliceMax;
  static_assert(BlockThreads % 64 == 0 && BlockThreads <= 1024, "whole waves, at most 1024 threads");
  static_assert(ItemsPerThread >= 1 && ItemsPerThread <= 32, "1 .. 32 items a thread");
  static_assert(ClusterThreads % 64 == 0 && ClusterThreads <= 1024 &&
                    ClusterThreadsManyRows % 64 == 0 && ClusterThreadsManyRows <= 1024,
                "cluster blocks: whole waves, at most 1024 threads");
  static_assert(ClusterBlocks >= 0 && ClusterBlocks <= platform::max_cluster_blocks_any,
                "a forced cluster: 1 .. 16 blocks (0: chosen)");
};

/// Target T's config (topk_tuned), optionally forcing a path, a cluster size, a slice cap.
template <arch::target T, topk_path Path = topk_path::tuned, int ClusterBlocks = 0,
          int ClusterSliceMax = 0>
using topk_config_for =
    topk_config<topk_tuned(T).pass_threads, topk_tuned(T).pass_items, topk_tuned(T).max_blocks,
                topk_tuned(T).one_block_min_rows, topk_tuned(T).cluster_blocks_max,
                topk_tuned(T).cluster_threads, Path, ClusterBlocks, ClusterSliceMax,
                topk_tuned(T).cluster_threads_many_rows, topk_tuned(T).cluster_few_rows,
                topk_tuned(T).cluster_blocks_few_rows>;

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
    return platform::aligned_size(rows * block::radix_digits::total_bins * sizeof(uint32_t)) +
           platform::aligned_size(rows * block::radix_digits::passes * sizeof(uint32_t)) +
           platform::aligned_size(rows * block::radix_digits::passes * sizeof(threshold_state)) +
           platform::aligned_size(rows * topk_segments<Config>(s.width) *
                                  sizeof(unsigned long long)) +
           platform::aligned_size(sizeof(unsigned int));
  }
  static size_t bytes(const topk_shape& s) {
    return cleared_bytes(s) +
           (s.order == output_order::score
                ? platform::aligned_size(static_cast<size_t>(s.rows) * s.k * sizeof(int32_t))
                : 0);
  }
  /// `split`: rows of at most this many columns are the one-block kernel's.
  topk_workspace(const topk_shape& s, int64_t split, void* base) {
    scratch.split = split;
    const size_t rows = static_cast<size_t>(s.rows);
    const int64_t segments = topk_segments<Config>(s.width);
    char* p = static_cast<char*>(base);
    auto carve = [&p](size_t bytes) {
      char* q = p;
      p += platform::aligned_size(bytes);
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

/// One block per row holding Threads * 4 >= k winners, the fewest threads from 128 that do; rows of
/// at most `split` columns are skipped.
template <int Threads = 128, class Keys, class Lengths, class Map>
void launch_sort(const topk_shape& s, int64_t split, Keys keys, Lengths lengths,
                 const int32_t* selected, Map map, int32_t* out, int64_t out_stride,
                 platform::stream_t stream) {
  static_assert(1024 * 4 >= max_topk_k, "the widest sort holds every k");
  if constexpr (Threads < 1024) {
    if (s.k > Threads * 4)
      return launch_sort<Threads * 2>(s, split, keys, lengths, selected, map, out, out_stride,
                                      stream);
  }
  sort_selected_kernel<Threads, 4><<<static_cast<unsigned>(s.rows), Threads, 0, stream>>>(
      keys, lengths, s.k, split, selected, column_bits(s.width), map, out, out_stride);
}

/// The one-block path: a block of this many threads per row.
inline constexpr int row_select_threads = 1024;

/// Calls f(std::integral_constant<int, S>{}) with the one-block path's sort width for `s`: 0 in
/// position order, else the winners each thread sorts (k <= S * row_select_threads).
template <class F>
auto with_sort_items(const topk_shape& s, F&& f) {
  static_assert(4 * row_select_threads >= max_topk_k, "the widest sort holds every k");
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
platform::error_t launch_row_select(const topk_shape& s, int64_t longest, Keys keys,
                                    Lengths lengths, Map map, int32_t* out, int64_t out_stride,
                                    platform::stream_t stream) {
  constexpr int threads = row_select_threads;
  auto* kernel = &row_select_kernel<threads, SortItems, Keys, Lengths, Map>;
  int device = 0;
  size_t kernel_limit = 0;
  const platform::error_t e = platform::kernel_shared_memory_limit(kernel, &device, &kernel_limit);
  if (e != platform::success) return e;
  const int64_t width = s.width < longest ? s.width : longest;
  const size_t smem = row_select_smem<threads, SortItems>::bytes(width, s.k);
  if (smem > kernel_limit) return platform::invalid_value;
  kernel<<<static_cast<unsigned>(s.rows), threads, smem, stream>>>(keys, lengths, s.k, width, map,
                                                                   out, out_stride);
  return platform::last_error();
}

/// What the cluster select needs of a device, asked once per device and kernel.
struct cluster_device {
  static constexpr int most_resident = 32;  ///< 64-thread blocks fill a 2048-thread SM
  int sms = 0;           ///< multiprocessors
  int max_blocks = 1;    ///< the largest cluster the kernel may take there (1: no clusters)
  int resident_max = 1;  ///< blocks a multiprocessor holds at most (threads, registers)
  /// budget[r]: the shared memory a block may take so that r blocks fit a multiprocessor.
  size_t budget[most_resident + 1] = {};
  /// clusters[c]: clusters of c blocks (2 .. max_blocks) resident at once at one block a
  /// multiprocessor (0: the device does not say). A cluster sits in one processing cluster, so
  /// this can be below sms / c: an H200 holds 15 clusters of 8, and a 16th would wait for a
  /// second wave.
  int clusters[platform::max_cluster_blocks_any + 1] = {};
};

/// One cluster launch: blocks a row, the widest slice a block holds in shared memory, its bytes.
struct cluster_plan {
  int blocks;
  int64_t slice_max;
  size_t smem;
};

/// Fills `d` for `kernel` (Threads threads) on the current device, raising its shared-memory
/// limit first (platform::kernel_shared_memory_limit).
template <int Threads, class Kernel>
platform::error_t query_cluster_device(Kernel* kernel, cluster_device* d) {
  int device = 0;
  size_t limit = 0;
  platform::error_t e = platform::kernel_shared_memory_limit(kernel, &device, &limit);
  if (e == platform::success) e = platform::multiprocessor_count(&d->sms, device);
  if (e == platform::success) e = platform::max_active_blocks(&d->resident_max, kernel, Threads, 0);
  if (e != platform::success) return e;
  d->resident_max = std::clamp(d->resident_max, 1, cluster_device::most_resident);
  for (int r = 1; r <= d->resident_max; ++r) {
    size_t bytes = r == 1 ? limit : limit / r / 1024 * 1024;
    for (int fit = 0; bytes > 1024; bytes -= 1024) {
      e = platform::max_active_blocks(&fit, kernel, Threads, bytes);
      if (e != platform::success) return e;
      if (fit >= r) break;
    }
    d->budget[r] = bytes;
  }
  e = platform::max_cluster_blocks(kernel, device, Threads, limit, &d->max_blocks);
  for (int c = 2; c <= d->max_blocks && e == platform::success; ++c)
    e = platform::max_active_clusters(kernel, Threads, limit, c, &d->clusters[c]);
  return e;
}

/// Clusters grow no further than slices of this many columns of the declared width: more blocks'
/// histograms and counts cost a shorter slice more than its share of the row saves (bench_topk's
/// forced sizes, H200, 2026-12-03: one 32K row in 4 / 8 / 16 blocks 16.8 / 15.7 / 17.3 us,
/// 4 x 32K in 8 / 16 blocks 15.4 / 16.7 us, 16 x 16384 in 4 / 6 blocks 13.7 / 14.5 us; on rows of
/// 5000 to 32768 columns the plan came within 0.4 us of the best of sizes 1-8).
inline constexpr int64_t min_cluster_slice = 4096;

/// The cluster launch for `s` on `d`: `forced` blocks a row, else the fewest (a power of two up to
/// `blocks_max`, or `few_rows_blocks_max` for 2 to `few_rows` rows, and the device's largest)
/// that launch a block per multiprocessor and leave slices of at least min_cluster_slice columns
/// of the declared width, fewer (any count) where the SMs or the processing
/// clusters would not hold them all at once; the shared memory that lets that many blocks stay
/// resident at once, and no more than the widest slice of `s.width` columns needs (`slice_cap` > 0
/// caps it further).
template <int Threads>
cluster_plan plan_cluster(const topk_shape& s, const cluster_device& d, int blocks_max, int forced,
                          int64_t slice_cap, int few_rows = 0, int few_rows_blocks_max = 0) {
  using smem_t = cluster_select_smem<Threads>;
  int c = forced;
  if (c == 0) {
    const bool few = s.rows >= 2 && s.rows <= few_rows && few_rows_blocks_max > 0;
    const int most = std::min(few ? few_rows_blocks_max : blocks_max, d.max_blocks);
    const int64_t resident_blocks = static_cast<int64_t>(d.sms) * d.resident_max;
    c = 1;
    while (c * 2 <= most && s.rows * c < d.sms && s.width / (c * 2) >= min_cluster_slice) c *= 2;
    // More blocks than stay resident at once would run in a second wave: as many as do, each a
    // wider slice, leave a few SMs idle but finish sooner.
    if (c > 1 && s.rows * c > resident_blocks)
      c = static_cast<int>(std::max<int64_t>(resident_blocks / s.rows, 1));
    // Clusters fit in processing clusters, not only in SMs: an H200 holds 15 clusters of 8
    // blocks of 1024 threads (16 rows would need a second wave), 17 of 6, 30 of 4 (bench_topk's
    // context). Take the largest smaller cluster that holds every row at once, unless its slices
    // of the declared width would stream from global memory where c's sit in shared memory (a
    // streamed slice costs more than the second wave: 32 x 131K took 85 us in clusters of 2, 53
    // in two waves of 4).
    const int64_t held = smem_t::max_slice(d.budget[1]);
    const auto streams = [&](int b) { return (std::max<int64_t>(s.width, 0) + b - 1) / b > held; };
    const auto holds_every_row = [&](int b) {
      return b == 1 ||
             (d.clusters[b] > 0 && s.rows <= static_cast<int64_t>(d.clusters[b]) * d.resident_max);
    };
    if (c > 1 && d.clusters[c] > 0 && !holds_every_row(c)) {
      for (int b = c - 1; b >= 1; --b)
        if (holds_every_row(b) && (streams(c) || !streams(b))) {
          c = b;
          break;
        }
    }
  }
  const int64_t launched = s.rows * c;
  const int64_t resident =
      std::clamp<int64_t>((launched + d.sms - 1) / std::max(d.sms, 1), 1, d.resident_max);
  int64_t slice = smem_t::max_slice(d.budget[resident]);
  const int64_t widest = align_up((std::max<int64_t>(s.width, 0) + c - 1) / c, int64_t{4});
  slice = std::min(slice, widest);
  if (slice_cap > 0) slice = std::min(slice, slice_cap);
  return {c, slice, smem_t::bytes(slice)};
}

/// Threads-thread blocks' device numbers for the cluster select of these types (queried once a
/// device).
template <int Threads, class Keys, class Lengths, class Map>
platform::error_t cluster_device_for(int device, cluster_device* d) {
  static platform::per_device_cache<cluster_device> devices;
  return devices.get(device, d, [&](cluster_device* out) {
    return query_cluster_device<Threads>(&cluster_select_kernel<Threads, Keys, Lengths, Map>, out);
  });
}

/// The cluster select of every row of `s` (position order) with Threads-thread blocks on `d`.
template <int Threads, class Config, class Keys, class Lengths, class Map>
platform::error_t launch_cluster_select_as(const topk_shape& s, const cluster_device& d, Keys keys,
                                           Lengths lengths, Map map, int32_t* out,
                                           int64_t out_stride, platform::stream_t stream) {
  if (Config::cluster_blocks > d.max_blocks) return platform::invalid_value;
  const cluster_plan p = plan_cluster<Threads>(
      s, d, Config::cluster_blocks_max, Config::cluster_blocks, Config::cluster_slice_max,
      Config::cluster_few_rows, Config::cluster_blocks_few_rows);
  if (s.rows * p.blocks > INT32_MAX) return platform::invalid_value;
  const platform::launch_shape shape{dim3(static_cast<unsigned>(s.rows * p.blocks)), Threads,
                                     p.smem, static_cast<unsigned>(p.blocks), /*chained=*/true};
  return platform::launch(&cluster_select_kernel<Threads, Keys, Lengths, Map>, shape, stream, keys,
                          lengths, s.k, static_cast<int>(p.slice_max), map, out, out_stride);
}

/// The cluster select of every row of `s` (position order), one launch: blocks of
/// Config::cluster_threads, or of cluster_threads_many_rows where the rows alone would launch
/// more than one wave of those (a cluster of one block a row) and every row of the declared width
/// still sits in the smaller blocks' shared memory (a streamed row costs more than the wave).
template <class Config, class Keys, class Lengths, class Map>
platform::error_t launch_cluster_select(const topk_shape& s, int device, Keys keys, Lengths lengths,
                                        Map map, int32_t* out, int64_t out_stride,
                                        platform::stream_t stream) {
  constexpr int threads = Config::cluster_threads;
  cluster_device d;
  platform::error_t e = cluster_device_for<threads, Keys, Lengths, Map>(device, &d);
  if (e != platform::success) return e;
  constexpr int many = Config::cluster_threads_many_rows;
  if constexpr (many != threads) {
    if (Config::cluster_blocks == 0 && s.rows > static_cast<int64_t>(d.sms) * d.resident_max) {
      cluster_device m;
      e = cluster_device_for<many, Keys, Lengths, Map>(device, &m);
      if (e != platform::success) return e;
      const cluster_plan p =
          plan_cluster<many>(s, m, Config::cluster_blocks_max, 0, Config::cluster_slice_max);
      if (p.blocks == 1 && p.slice_max >= s.width)
        return launch_cluster_select_as<many, Config>(s, m, keys, lengths, map, out, out_stride,
                                                      stream);
    }
  }
  return launch_cluster_select_as<threads, Config>(s, d, keys, lengths, map, out, out_stride,
                                                   stream);
}

}  // namespace detail

/// The most blocks Config's cluster select may give a row on the current device with these key,
/// length and map types (1 where there are no clusters).
template <class Config, class Keys, class Lengths, class Map>
platform::error_t topk_max_cluster_blocks(int* out) {
  *out = 1;
  constexpr int threads = Config::cluster_threads;
  detail::cluster_device d;
  const platform::error_t e = detail::query_cluster_device<threads>(
      &detail::cluster_select_kernel<threads, Keys, Lengths, Map>, &d);
  if (e == platform::success) *out = d.max_blocks;
  return e;
}

/// The widest rows launch_topk gives one block each for `shape`'s k and order on the current
/// device (0 if it cannot tell); wider rows take the multi-block passes.
inline int64_t topk_one_block_width(const topk_shape& shape) {
  int device = 0;
  size_t limit = 0;
  if (platform::shared_memory_limit(&device, &limit) != platform::success) return 0;
  return detail::one_block_width(shape, limit);
}

/// Bytes of workspace launch_topk needs for `shape` on any target (no device is asked).
inline size_t topk_workspace_bytes(const topk_shape& shape) {
  size_t most = 0;
  for (const arch::target t : all_targets)
    most = std::max(
        most, with_target(t, [&](auto target) {
          return detail::topk_workspace<topk_config_for<decltype(target)::value>>::bytes(shape);
        }));
  return most;
}

/// Whether launch_topk takes `shape` on any target (k in [1, max_topk_k], segments within a grid
/// dimension, columns below 2^31).
inline bool topk_supports(const topk_shape& shape) {
  bool segments_fit = true;
  for (const arch::target t : all_targets)
    segments_fit &= with_target(t, [&](auto target) {
      return detail::topk_segments<topk_config_for<decltype(target)::value>>(shape.width) <= 65535;
    });
  return shape.k >= 1 && shape.k <= max_topk_k && shape.rows >= 0 && shape.rows <= INT32_MAX &&
         shape.width < INT32_MAX && segments_fit;
}

/// Selects row by row into out[row][0, k) with `Config`'s numbers. `workspace` holds
/// topk_workspace_bytes(shape) bytes (the one-block path leaves it untouched).
/// Returns the launch status (platform::success when every kernel was queued).
template <class Config, class Keys, class Lengths, class Map>
platform::error_t launch_topk(const topk_shape& shape, Keys keys, Lengths lengths, Map map,
                              int32_t* out, int64_t out_stride, void* workspace,
                              platform::stream_t stream) {
  if (shape.rows == 0) return platform::success;
  int device = 0;
  size_t limit = 0;
  platform::error_t e = platform::shared_memory_limit(&device, &limit);
  if (e != platform::success) return e;
  if constexpr (Config::clusters) {
    // Score order keeps the paths below: its sort would have to span the cluster.
    if (shape.order == output_order::position)
      return detail::launch_cluster_select<Config>(shape, device, keys, lengths, map, out,
                                                   out_stride, stream);
  }
  // Rows of at most `split` columns are the one-block kernel's, longer ones the passes'.
  int64_t split = Config::one_block_rows ? detail::one_block_width(shape, limit) : 0;
  if (split <= 0 || (shape.width > split && shape.rows < Config::one_block_min_rows))
    split = detail::no_one_block_rows;
  if (split > 0) {
    e = detail::with_sort_items(shape, [&](auto items) {
      return detail::launch_row_select<decltype(items)::value>(shape, split, keys, lengths, map,
                                                               out, out_stride, stream);
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
  detail::launch_sort(shape, split, keys, lengths, ws.selected, map, out, out_stride, stream);
  return platform::last_error();
}

/// The same with the current device's target's numbers (topk_tuned).
template <class Keys, class Lengths, class Map>
platform::error_t launch_topk(const topk_shape& shape, Keys keys, Lengths lengths, Map map,
                              int32_t* out, int64_t out_stride, void* workspace,
                              platform::stream_t stream) {
  arch::target t = arch::target::generic;
  const platform::error_t e = current_target(&t);
  if (e != platform::success) return e;
  return with_target(t, [&](auto target) {
    return launch_topk<topk_config_for<decltype(target)::value>>(shape, keys, lengths, map, out,
                                                                 out_stride, workspace, stream);
  });
}

}  // namespace mxi::device
