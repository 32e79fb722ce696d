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
#include "mxi/platform/dispatch.hpp"
#include "mxi/platform/launch.hpp"
#include "mxi/platform/per_device_cache.hpp"
#include "mxi/platform/runtime.hpp"
#include "mxi/platform/workspace.hpp"
#include "mxi/types.hpp"

namespace mxi::device {

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

/// Segments of `segment` columns a row of `width` columns takes in the passes.
inline int64_t topk_segments(int64_t width, int segment) {
  return width <= segment ? 1 : (width + segment - 1) / segment;
}

/// Smallest b with 2^b > width: the column bits of a sort key, leaving the all-ones pattern free.
inline int column_bits(int64_t width) {
  int b = 1;
  while ((int64_t{1} << b) <= width) ++b;
  return b;
}

/// The passes' workspace, in order: the per-row scratch the memset clears (histograms, arrivals,
/// thresholds, look-back words, the ticket), then the staged winners (score order). Over a null
/// base it only sizes it (bytes). `segment`: topk_config::segment().
struct topk_workspace {
  select_scratch scratch{};
  int32_t* selected = nullptr;
  size_t cleared = 0;  ///< bytes of the scratch the memset clears
  size_t total = 0;

  /// `split`: rows of at most this many columns are the one-block kernel's.
  topk_workspace(const topk_shape& s, int segment, int64_t split, void* base) {
    using digits = block::radix_digits;
    platform::workspace_carver w(base);
    const auto rows = static_cast<size_t>(s.rows);
    const int64_t segments = topk_segments(s.width, segment);
    scratch.hist = w.take<uint32_t>(rows * digits::total_bins);
    scratch.arrivals = w.take<uint32_t>(rows * digits::passes);
    scratch.threshold = w.take<threshold_state>(rows * digits::passes);
    scratch.lookback = w.take<unsigned long long>(rows * static_cast<size_t>(segments));
    scratch.ticket = w.take<unsigned int>(1);
    cleared = w.bytes();
    selected =
        w.take<int32_t>(s.order == output_order::score ? rows * static_cast<size_t>(s.k) : 0);
    total = w.bytes();
    scratch.segments = static_cast<int>(segments);
    scratch.split = split;
  }
  static size_t bytes(const topk_shape& s, int segment) {
    return topk_workspace(s, segment, 0, nullptr).total;
  }
};

/// The score-order sort: a block a row of the fewest of Threads, twice, four and eight times as
/// many threads whose Items winners each hold k; rows of at most `split` columns are skipped.
template <int Threads, int Items, class Keys, class Lengths, class Map>
void launch_sort(const topk_shape& s, int64_t split, Keys keys, Lengths lengths,
                 const int32_t* selected, Map map, int32_t* out, int64_t out_stride,
                 platform::stream_t stream) {
  static_assert(Threads * 8 <= 1024 && Threads * 8 * Items >= max_topk_k,
                "the widest sort is one block and holds every k");
  platform::with_constant<1, 2, 4, 8>(
      [&](int times) { return s.k <= Threads * times * Items; },
      [&](auto times) {
        constexpr int n = Threads * decltype(times)::value;
        sort_selected_kernel<n, Items><<<static_cast<unsigned>(s.rows), n, 0, stream>>>(
            keys, lengths, s.k, split, selected, column_bits(s.width), map, out, out_stride);
      });
}

/// Calls f(std::integral_constant<int, S>{}) with the one-block path's sort width for `s` at
/// Threads threads a row: 0 in position order, else the winners each thread sorts
/// (k <= S * Threads).
template <int Threads, class F>
auto with_sort_items(const topk_shape& s, F&& f) {
  static_assert(4 * Threads >= max_topk_k, "the widest sort holds every k");
  return platform::with_constant<0, 1, 2, 4>(
      [&](int items) {
        return items == 0 ? s.order == output_order::position : s.k <= items * Threads;
      },
      f);
}

/// The widest row the one-block path (Threads threads a row) takes for `s` within `limit` bytes
/// of shared memory.
template <int Threads>
int64_t one_block_width(const topk_shape& s, size_t limit) {
  return with_sort_items<Threads>(s, [&](auto items) {
    return row_select_smem<Threads, decltype(items)::value>::max_width(limit, s.k);
  });
}

/// The one-block kernel (Threads threads a row) over every row of `s`; rows longer than
/// `longest` are left to the passes.
template <int Threads, int SortItems, class Keys, class Lengths, class Map>
platform::error_t launch_row_select(const topk_shape& s, int64_t longest, Keys keys,
                                    Lengths lengths, Map map, int32_t* out, int64_t out_stride,
                                    platform::stream_t stream) {
  auto* kernel = &row_select_kernel<Threads, SortItems, Keys, Lengths, Map>;
  const int64_t width = s.width < longest ? s.width : longest;
  const size_t smem = row_select_smem<Threads, SortItems>::bytes(width, s.k);
  platform::kernel_limits limits;
  const platform::error_t e = platform::prepare_kernel(kernel, smem, &limits);
  if (e != platform::success) return e;
  kernel<<<static_cast<unsigned>(s.rows), Threads, smem, stream>>>(keys, lengths, s.k, width, map,
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
/// limit first (platform::prepare_kernel).
template <int Threads, class Kernel>
platform::error_t query_cluster_device(Kernel* kernel, cluster_device* d) {
  platform::kernel_limits k;
  platform::error_t e = platform::prepare_kernel(kernel, 0, &k);
  if (e == platform::success) e = platform::max_active_blocks(&d->resident_max, kernel, Threads, 0);
  if (e != platform::success) return e;
  const int device = k.device;
  const size_t limit = k.shared_bytes;
  d->sms = k.multiprocessors;
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

/// The cluster launch for `s` on `d` with `config`'s numbers: config.cluster_blocks blocks a row
/// where forced, else the fewest (a power of two up to cluster_blocks_most(), or
/// cluster_blocks_few_rows for 2 to cluster_few_rows rows, and the device's largest) that launch
/// a block per multiprocessor and leave slices of at least cluster_slice_min columns of the
/// declared width, fewer (any count) where the SMs or the processing clusters would not hold them
/// all at once; the shared memory that lets that many blocks stay resident at once, and no more
/// than the widest slice of `s.width` columns needs (cluster_slice_max > 0 caps it further).
template <int Threads>
cluster_plan plan_cluster(const topk_shape& s, const cluster_device& d,
                          const topk_config& config) {
  using smem_t = cluster_select_smem<Threads>;
  int c = config.cluster_blocks;
  if (c == 0) {
    const bool few = s.rows >= 2 && s.rows <= config.cluster_few_rows &&
                     config.cluster_blocks_few_rows > 0;
    const int most = std::min(
        few ? config.cluster_blocks_few_rows : config.cluster_blocks_most(), d.max_blocks);
    const int64_t resident_blocks = static_cast<int64_t>(d.sms) * d.resident_max;
    c = 1;
    while (c * 2 <= most && s.rows * c < d.sms && s.width / (c * 2) >= config.cluster_slice_min)
      c *= 2;
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
  if (config.cluster_slice_max > 0)
    slice = std::min(slice, static_cast<int64_t>(config.cluster_slice_max));
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
template <int Threads, class Keys, class Lengths, class Map>
platform::error_t launch_cluster_select_as(const topk_shape& s, const cluster_device& d,
                                           const topk_config& config, Keys keys, Lengths lengths,
                                           Map map, int32_t* out, int64_t out_stride,
                                           platform::stream_t stream) {
  if (config.cluster_blocks > d.max_blocks) return platform::invalid_value;
  const cluster_plan p = plan_cluster<Threads>(s, d, config);
  if (s.rows * p.blocks > INT32_MAX) return platform::invalid_value;
  const platform::launch_shape shape{dim3(static_cast<unsigned>(s.rows * p.blocks)), Threads,
                                     p.smem, static_cast<unsigned>(p.blocks), /*chained=*/true};
  return platform::launch(&cluster_select_kernel<Threads, Keys, Lengths, Map>, shape, stream, keys,
                          lengths, s.k, static_cast<int>(p.slice_max), map, out, out_stride);
}

/// The cluster select of every row of `s` (position order), one launch: blocks of Threads
/// (config.cluster_threads), or of ThreadsWide (cluster_threads_wide()) where the rows alone would
/// launch more than one wave of those (a cluster of one block a row) and every row of the
/// declared width still sits in the smaller blocks' shared memory (a streamed row costs more than
/// the wave).
template <int Threads, int ThreadsWide, class Keys, class Lengths, class Map>
platform::error_t launch_cluster_select(const topk_shape& s, int device, const topk_config& config,
                                        Keys keys, Lengths lengths, Map map, int32_t* out,
                                        int64_t out_stride, platform::stream_t stream) {
  cluster_device d;
  platform::error_t e = cluster_device_for<Threads, Keys, Lengths, Map>(device, &d);
  if (e != platform::success) return e;
  if constexpr (ThreadsWide != Threads) {
    if (config.cluster_blocks == 0 && s.rows > static_cast<int64_t>(d.sms) * d.resident_max) {
      cluster_device m;
      e = cluster_device_for<ThreadsWide, Keys, Lengths, Map>(device, &m);
      if (e != platform::success) return e;
      topk_config many = config;  // more rows than a wave holds: never a few rows
      many.cluster_few_rows = 0;
      const cluster_plan p = plan_cluster<ThreadsWide>(s, m, many);
      if (p.blocks == 1 && p.slice_max >= s.width)
        return launch_cluster_select_as<ThreadsWide>(s, m, config, keys, lengths, map, out,
                                                      out_stride, stream);
    }
  }
  return launch_cluster_select_as<Threads>(s, d, config, keys, lengths, map, out, out_stride,
                                           stream);
}

}  // namespace detail

/// The most blocks the cluster select of Config() may give a row on the current device with these
/// key, length and map types (1 where there are no clusters).
template <topk_config (*Config)(), class Keys, class Lengths, class Map>
platform::error_t topk_max_cluster_blocks(int* out) {
  *out = 1;
  constexpr int threads = Config().cluster_threads;
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
  arch::target t = arch::target::generic;
  if (platform::shared_memory_limit(&device, &limit) != platform::success ||
      current_target(&t) != platform::success)
    return 0;
  return with_target(t, [&](auto target) {
    constexpr int threads = topk_config_for(decltype(target)::value).row_threads;
    return detail::one_block_width<threads>(shape, limit);
  });
}

/// Bytes of workspace launch_topk needs for `shape` on any target (no device is asked).
inline size_t topk_workspace_bytes(const topk_shape& shape) {
  size_t most = 0;
  for (const arch::target t : all_targets)
    most = std::max(most, detail::topk_workspace::bytes(shape, topk_config_for(t).segment()));
  return most;
}

/// Whether launch_topk takes `shape` on any target (k in [1, max_topk_k], segments within a grid
/// dimension, columns below 2^31).
inline bool topk_supports(const topk_shape& shape) {
  bool segments_fit = true;
  for (const arch::target t : all_targets)
    segments_fit &= detail::topk_segments(shape.width, topk_config_for(t).segment()) <= 65535;
  return shape.k >= 1 && shape.k <= max_topk_k && shape.rows >= 0 && shape.rows <= INT32_MAX &&
         shape.width < INT32_MAX && segments_fit;
}

/// Selects row by row into out[row][0, k) with the values Config() returns (topk_config_for<T>:
/// target T's, optionally with a path forced; any constexpr function returning a topk_config).
/// `workspace` holds topk_workspace_bytes(shape) bytes (the one-block path leaves it untouched).
/// Returns the launch status (platform::success when every kernel was queued).
template <topk_config (*Config)(), class Keys, class Lengths, class Map>
platform::error_t launch_topk(const topk_shape& shape, Keys keys, Lengths lengths, Map map,
                              int32_t* out, int64_t out_stride, void* workspace,
                              platform::stream_t stream) {
  constexpr topk_config c = Config();
  static_assert(c.cluster_threads % 64 == 0 && c.cluster_threads <= 1024 &&
                    c.cluster_threads_wide() % 64 == 0 && c.cluster_threads_wide() <= 1024,
                "cluster blocks: whole waves, at most 1024 threads");
  static_assert(c.cluster_blocks >= 0 && c.cluster_blocks <= platform::max_cluster_blocks_any,
                "a forced cluster: 1 .. 16 blocks (0: chosen)");
  if (shape.rows == 0) return platform::success;
  int device = 0;
  size_t limit = 0;
  platform::error_t e = platform::shared_memory_limit(&device, &limit);
  if (e != platform::success) return e;
  if constexpr (c.clusters()) {
    // Score order keeps the paths below: its sort would have to span the cluster.
    if (shape.order == output_order::position)
      return detail::launch_cluster_select<c.cluster_threads, c.cluster_threads_wide()>(
          shape, device, c, keys, lengths, map, out, out_stride, stream);
  }
  // Rows of at most `split` columns are the one-block kernel's, longer ones the passes'.
  constexpr int row_threads = c.row_threads;
  int64_t split = c.one_block_rows() ? detail::one_block_width<row_threads>(shape, limit) : 0;
  if (split <= 0 || (shape.width > split && shape.rows < c.one_block_min_rows))
    split = detail::no_one_block_rows;
  if (split > 0) {
    e = detail::with_sort_items<row_threads>(shape, [&](auto items) {
      return detail::launch_row_select<row_threads, decltype(items)::value>(
          shape, split, keys, lengths, map, out, out_stride, stream);
    });
    if (e != platform::success || shape.width <= split) return e;
  }

  using pass = detail::pass_shape<c.pass_threads, c.pass_items>;
  const detail::topk_workspace ws(shape, c.segment(), split, workspace);
  const int64_t segments = detail::topk_segments(shape.width, c.segment());
  const int64_t per_row = std::max<int64_t>(1, c.max_blocks / std::max<int64_t>(shape.rows, 1));
  const dim3 grid(static_cast<unsigned>(shape.rows),
                  static_cast<unsigned>(std::min(segments, per_row)));
  constexpr int threads = c.pass_threads;

  e = platform::memset_async(workspace, 0, ws.cleared, stream);
  if (e != platform::success) return e;
  detail::radix_histogram_kernel<pass, 0>
      <<<grid, threads, 0, stream>>>(keys, lengths, shape.k, ws.scratch);
  detail::radix_histogram_kernel<pass, 1>
      <<<grid, threads, 0, stream>>>(keys, lengths, shape.k, ws.scratch);
  detail::radix_histogram_kernel<pass, 2>
      <<<grid, threads, 0, stream>>>(keys, lengths, shape.k, ws.scratch);
  if (shape.order == output_order::position) {
    detail::radix_compact_kernel<pass, true><<<grid, threads, 0, stream>>>(
        keys, lengths, shape.k, ws.scratch, map, out, out_stride);
    return platform::last_error();
  }
  detail::radix_compact_kernel<pass, false><<<grid, threads, 0, stream>>>(
      keys, lengths, shape.k, ws.scratch, identity_map{}, ws.selected, int64_t{shape.k});
  detail::launch_sort<c.sort_threads, c.sort_items>(shape, split, keys, lengths, ws.selected, map,
                                                    out, out_stride, stream);
  return platform::last_error();
}

/// The same with the current device's target's values (topk_config_for).
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
