// The logits kernels' plan: which query rows go together (groups), and how the groups' key ranges
// split into items that the persistent logits kernels walk.
//
// The plan kernel (one block) splits the rows into groups of G consecutive tokens of one request
// (G = 1 in candidate mode) and each group's key range into chunks sized so that the items
// outnumber the resident blocks. A logits block takes a contiguous run of items (item_walk).
#pragma once

#include <cstddef>
#include <cstdint>

#include "mxi/arch/async_copy.hpp"
#include "mxi/arch/key_tile.hpp"
#include "mxi/block/block_scan.hpp"
#include "mxi/device/paged_logits_args.hpp"
#include "mxi/device/row_info.hpp"
#include "mxi/device/tuning.hpp"
#include "mxi/layout/cache_layout.hpp"
#include "mxi/platform/intrinsics.hpp"
#include "mxi/platform/launch.hpp"

namespace mxi::device {

namespace detail {

/// The plan's values (logits_plan_config in tuning.hpp) as the kernels use them.
inline constexpr int plan_threads = logits_plan_config{}.threads;
inline constexpr int min_chunk = logits_plan_config{}.min_chunk;
inline constexpr int max_chunk = logits_plan_config{}.max_chunk;  ///< the most keys an item holds
inline constexpr int64_t prefetched_query_bytes = logits_plan_config{}.prefetched_query_bytes;
inline constexpr int plan_shared_requests = logits_plan_config{}.shared_requests;

/// Rows per group for a batch shape (the target's logits_config `t`, `heads` a row): each
/// request's rows split evenly into groups that share every K read.
inline int rows_per_group(int64_t rows, int num_requests, bool candidate, const logits_config& t,
                          int heads) {
  if (candidate || num_requests <= 0) return 1;
  const int64_t per_request = (rows + num_requests - 1) / num_requests;
  const int most = heads > 64 ? t.max_group_wide : t.max_group;
  const int64_t groups = (per_request + most - 1) / most;
  int group = static_cast<int>((per_request + groups - 1) / groups);
  while (t.power_of_two && (group & (group - 1)) != 0) ++group;
  return group;
}

/// The plan in workspace: int32 [header 4][request group base R+1][first, rows, keys: NG each]
/// [item base NG+1], NG = ceil(rows / G) + R.
struct plan_view {
  int32_t* header;  // num_groups, num_items, chunk
  int32_t* request_base;
  int32_t* first;
  int32_t* rows;
  int32_t* keys;
  int32_t* item_base;

  MXI_HOST_DEVICE static int64_t max_groups(int64_t rows, int num_requests) {
    return rows + num_requests;  // G = 1 is the worst case
  }
  MXI_HOST_DEVICE static size_t bytes(int64_t rows, int num_requests) {
    return sizeof(int32_t) * (4 + (num_requests + 1) + 4 * max_groups(rows, num_requests) + 1);
  }
  MXI_HOST_DEVICE plan_view(void* ws, int64_t rows_, int num_requests) {
    const int64_t ng = max_groups(rows_, num_requests);
    header = static_cast<int32_t*>(ws);
    request_base = header + 4;
    first = request_base + num_requests + 1;
    rows = first + ng;
    keys = rows + ng;
    item_base = keys + ng;
  }
};

#if MXI_GPU_COMPILER

using plan_scan = block::block_scan<int64_t, plan_threads>;

/// Exclusive prefix of v over the plan's block; *total gets the sum. Ends on a barrier, so the
/// storage is free for the next scan.
MXI_DEVICE int64_t block_exclusive_scan(int64_t v, plan_scan::storage_type& storage, int64_t* total) {
  int64_t prefix;
  plan_scan::exclusive_sum(v, prefix, *total, storage);
  __syncthreads();
  return prefix;
}

MXI_DEVICE int32_t clamp_row(int64_t v, int64_t lo, int64_t hi) {
  return static_cast<int32_t>(v < lo ? lo : (v > hi ? hi : v));
}

template <class KeyMap>
__global__ __launch_bounds__(plan_threads) void plan_logits(paged_logits_args a, KeyMap map,
                                                            int group, int target_items,
                                                            plan_view plan, bool wait_first) {
  __shared__ plan_scan::storage_type scan;
  __shared__ int32_t shared_base[plan_shared_requests + 1];
  // The queries are the caller's, which no kernel of the call writes: a small decode batch's go
  // to L2 now, overlapped with row_info, where the logits kernel's two rounds of query loads a
  // consumer (scales and weights, then values) would wait on HBM.
  const int64_t query_heads = (a.row_end - a.row_begin) * a.num_heads;
  if (query_heads * arch::key_tile_shape::row_bytes <= prefetched_query_bytes) {
    const int64_t head0 = a.row_begin * a.num_heads;
    arch::prefetch_l2(a.q_values + head0 * arch::key_tile_shape::row_bytes,
                      query_heads * arch::key_tile_shape::row_bytes);
    arch::prefetch_l2(a.q_scales + head0 * arch::key_tile_shape::blocks,
                      query_heads * arch::key_tile_shape::blocks);
    arch::prefetch_l2(a.weights + head0, query_heads * static_cast<int64_t>(sizeof(float)));
  }
  // Launched chained (launch_plan): see launch_plan for when it waits.
  if (wait_first) platform::wait_for_prior_grid();
  platform::allow_next_grid();
  // The groups' search table (each request's first group): in shared memory where it fits, so
  // that the binary search below waits on shared memory rather than on L2; else the workspace's.
  int32_t* request_base = a.num_requests <= plan_shared_requests ? shared_base : plan.request_base;
  const int tid = threadIdx.x;
  const int64_t lo_row = a.row_begin, hi_row = a.row_end;
  // Groups per request, over the rows in [row_begin, row_end); garbage query_start_loc stays in
  // range (row_info then marks every row invalid).
  int64_t base = 0;
  for (int r0 = 0; r0 <= a.num_requests; r0 += plan_threads) {
    const int r = r0 + tid;
    int64_t groups = 0;
    if (r < a.num_requests) {
      const int32_t lo = clamp_row(a.query_start_loc[r], lo_row, hi_row);
      const int32_t hi = clamp_row(a.query_start_loc[r + 1], lo, hi_row);
      groups = (hi - lo + group - 1) / group;
    }
    int64_t total;
    const int64_t prefix = block_exclusive_scan(groups, scan, &total);
    if (r <= a.num_requests) request_base[r] = static_cast<int32_t>(base + prefix);
    base += total;
  }
  const int64_t num_groups = base;
  // Every thread's request_base entries are written before any thread searches them (threads of
  // later warps write none and would otherwise read the workspace's stale plan).
  __syncthreads();
  // Each group: its first row, row count and key count; the total sizes the chunks.
  int64_t my_keys = 0;
  const int64_t table_keys = a.block_table_stride * a.block_size;  // dense: no row sees more
  for (int64_t gi = tid; gi < num_groups; gi += plan_threads) {
    int lo = 0, hi = a.num_requests - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (request_base[mid] <= gi) lo = mid;
      else hi = mid - 1;
    }
    const int32_t start = clamp_row(a.query_start_loc[lo], lo_row, hi_row);
    const int32_t end = clamp_row(a.query_start_loc[lo + 1], start, hi_row);
    const int32_t first = start + static_cast<int32_t>(gi - request_base[lo]) * group;
    const int32_t rows = min(group, end - first);
    int64_t keys = 0;
    for (int i = 0; i < rows; ++i) {
      const int64_t visible =
          unchecked_visible(a.query_start_loc, a.seq_lens, lo, first + i, a.compress_ratio);
      keys = max(keys, map.column_bound(visible, table_keys));
    }
    plan.first[gi] = first;
    plan.rows[gi] = rows;
    plan.keys[gi] = static_cast<int32_t>(keys);
    my_keys += keys;
  }
  int64_t all_keys;
  block_exclusive_scan(my_keys, scan, &all_keys);
  int64_t chunk = (all_keys + target_items - 1) / max(target_items, 1);
  chunk = (chunk + arch::key_tile_shape::keys - 1) / arch::key_tile_shape::keys *
          arch::key_tile_shape::keys;
  chunk = chunk < min_chunk ? min_chunk : (chunk > max_chunk ? max_chunk : chunk);
  base = 0;
  for (int64_t g0 = 0; g0 < num_groups; g0 += plan_threads) {
    const int64_t gi = g0 + tid;
    const int64_t items = gi < num_groups ? (plan.keys[gi] + chunk - 1) / chunk : 0;
    int64_t total;
    const int64_t prefix = block_exclusive_scan(items, scan, &total);
    if (gi < num_groups) plan.item_base[gi] = static_cast<int32_t>(base + prefix);
    base += total;
  }
  if (tid == 0) {
    plan.item_base[num_groups] = static_cast<int32_t>(base);
    plan.header[0] = static_cast<int32_t>(num_groups);
    plan.header[1] = static_cast<int32_t>(base);
    plan.header[2] = static_cast<int32_t>(chunk);
  }
  if (!wait_first) platform::wait_for_prior_grid();
}

/// Launches the plan kernel, chained to the kernel before it (platform/launch.hpp). It takes each
/// row's length from the batch itself (unchecked_visible), not from row_info: rows that row_info
/// rejects keep their items, which the logits kernels score nothing of (their page reads stay
/// inside the table and the cache), so the plan need not wait for row_info. Candidate keys are
/// sized by the most columns a row can hold (KeyMap::column_bound), not by what candidate prep
/// kept, so the plan need not wait for the prep either: the tiles past a row's valid columns
/// stage no bytes and are scored by no one. The plan waits for the kernel before it first unless
/// `overlap_prior`: that kernel writes nothing the plan reads and does not touch the plan's part
/// of the workspace (a logits kernel reading the last plan must not see this one's). Then it plans
/// overlapped with that kernel and waits for it before it ends, so that the logits kernel chained
/// to the plan finds both done. (Every chained kernel of the library waits before it lets the next
/// one launch, so the kernels before the one before the plan have ended when the plan starts.)
template <class KeyMap>
platform::error_t launch_plan(const paged_logits_args& a, const KeyMap& map, int group,
                              int target_items, plan_view plan, bool overlap_prior,
                              platform::stream_t stream) {
  return platform::launch(&plan_logits<KeyMap>, {dim3(1), plan_threads, 0, 1, /*chained=*/true},
                          stream, a, map, group, target_items, plan, !overlap_prior);
}

/// A block's share of the plan's items: a contiguous run (the counts differ by at most one), so
/// that consecutive items mostly share their group: the query stays loaded, and each item's group
/// is found by stepping from the last one rather than by a search of dependent loads.
struct item_walk {
  int begin, end;  ///< the block's items
  int group = -1;  ///< group of the last item asked for

  MXI_DEVICE explicit item_walk(int num_items)
      : begin(static_cast<int>(static_cast<int64_t>(num_items) * blockIdx.x / gridDim.x)),
        end(static_cast<int>(static_cast<int64_t>(num_items) * (blockIdx.x + 1) / gridDim.x)) {}

  /// Group of `item` (items asked for in increasing order). Every lane of the wave asks for the
  /// same item at once: the first item's group comes from a WaveSize-ary search, a probe a lane
  /// and round (two rounds of loads up to 1024 groups, where a binary search's log2(groups)
  /// dependent loads of L2 held up the logits kernels' first tiles).
  template <int WaveSize>
  MXI_DEVICE int group_of(const plan_view& plan, int num_groups, int item) {
    if (group < 0) {
      // The last group whose items start at or before `item` lies in [lo, hi], and
      // item_base[lo] <= item (item_base[0] = 0), so lane 0's probe always holds.
      int lo = 0, hi = num_groups - 1;
      while (lo < hi) {
        const int step = (hi - lo + WaveSize) / WaveSize;  // the span split into WaveSize steps
        const int probe = lo + platform::lane_id<WaveSize>() * step;
        const bool at_or_before = probe <= hi && plan.item_base[probe] <= item;
        lo += platform::highest_lane(platform::ballot<WaveSize>(at_or_before)) * step;
        hi = min(hi, lo + step - 1);
      }
      group = lo;
    } else {
      while (plan.item_base[group + 1] <= item) ++group;
    }
    return group;
  }
};

/// What an item is: rows [first, first + rows) of one request, key columns [k_begin, k_end).
struct plan_item {
  int64_t first;
  int rows;
  int k_begin, k_end;
  MXI_DEVICE plan_item(const plan_view& plan, int group, int item, int chunk)
      : first(plan.first[group]), rows(plan.rows[group]),
        k_begin((item - plan.item_base[group]) * chunk),
        k_end(min(plan.keys[group], (item - plan.item_base[group]) * chunk + chunk)) {}
  /// The columns row t of the item writes: its valid ones (none for a row row_info rejected,
  /// whose items a dense plan keeps).
  template <class KeyMap>
  MXI_DEVICE int row_end(const paged_logits_args& a, const KeyMap& map, int64_t t) const {
    const row_info info = a.rows[t];
    return info.visible > 0
               ? static_cast<int>(min(map.columns(t, info.visible), static_cast<int64_t>(k_end)))
               : 0;
  }
  /// Where the item's valid columns end (at most k_end; k_begin or less when it has none):
  /// paged_logits_kernel stages the item's columns up to it. (The pipelined kernel's roles walk
  /// every tile to k_end instead, so that their counts agree without reading the rows.)
  template <class KeyMap>
  MXI_DEVICE int valid_end(const paged_logits_args& a, const KeyMap& map) const {
    int end = 0;
    for (int i = 0; i < rows; ++i) end = max(end, row_end(a, map, first + i));
    return end;
  }
  /// Tiles of the columns [k_begin, end).
  MXI_DEVICE int tiles(int end) const {
    return max(end - k_begin + arch::key_tile_shape::keys - 1, 0) / arch::key_tile_shape::keys;
  }
};

/// The columns each of `rows` (at most MaxRows) consecutive rows from `first` writes in an item
/// (plan_item::row_end), and the largest of them.
template <int MaxRows>
struct row_limits {
  int limit[MaxRows];
  int largest = 0;
  template <class KeyMap>
  MXI_DEVICE row_limits(const plan_item& it, const paged_logits_args& a, const KeyMap& map,
                        int64_t first, int rows) {
#pragma unroll
    for (int i = 0; i < MaxRows; ++i) {
      limit[i] = i < rows ? it.row_end(a, map, first + i) : 0;
      largest = max(largest, limit[i]);
    }
  }
  /// Row r's limit, by selects: an index the compiler cannot see would put the array in local
  /// memory.
  MXI_DEVICE int operator[](int r) const {
    int l = limit[0];
#pragma unroll
    for (int i = 1; i < MaxRows; ++i) l = r == i ? limit[i] : l;
    return l;
  }
};

#endif  // MXI_GPU_COMPILER

}  // namespace detail

}  // namespace mxi::device
