// Paged MQA logits: scores[t][s] = sum_h w[t][h] relu(q[t][h] . k[s]) for query rows
// [row_begin, row_end) over the paged MXFP4 cache, written to out[(t - row_begin) * ld + col].
//
// Two modes share one kernel through a key map:
//   dense      col = position s in [0, visible(t)); `clean` fills [visible, width) with -inf.
//   candidate  per row a list of candidate block ids (ascending, deduplicated, every block live:
//              id * cbs < visible) and its count n; col = j * cbs + i <-> position ids[j] * cbs + i.
//              The valid columns are then the prefix [0, candidate_columns(...)) (select_rows.hpp:
//              only the last block can be partly visible); columns past it are not written. Only
//              the candidate tokens' bytes are read.
//
// Launch shape: a plan kernel (one block) splits the rows into groups of G consecutive tokens of
// one request (G = 1 in candidate mode) and each group's key range into chunks sized so the
// items outnumber the resident blocks; a persistent kernel (SMs x occupancy blocks of 4
// waves) walks the items. Each block stages 64-key tiles (4-stage cp.async pipeline, one block
// barrier a tile) in shared memory. The arch policy's scorer works in units: on sm90 one
// warpgroup scores all G rows of the group against the whole tile (wgmma, the G rows' heads side
// by side, every K byte read once); elsewhere wave w scores row w % G over a 1/(4/G) share of
// each tile with a row scorer that holds the query row in registers. Addressing is 64-bit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mxi/arch/async_copy.hpp"
#include "mxi/arch/key_tile.hpp"
#include "mxi/arch/select.hpp"
#include "mxi/block/block_scan.hpp"
#include "mxi/device/row_info.hpp"
#include "mxi/device/select_rows.hpp"
#include "mxi/layout/cache_layout.hpp"
#include "mxi/platform/device_limits.hpp"
#include "mxi/platform/intrinsics.hpp"
#include "mxi/platform/runtime.hpp"
#include "mxi/platform/wave.hpp"

namespace mxi::device {

/// Everything the logits kernels read and write (device pointers).
struct paged_logits_args {
  const uint8_t* q_values = nullptr;  ///< [T][H][D/2]
  const uint8_t* q_scales = nullptr;  ///< [T][H][D/32]
  const float* weights = nullptr;     ///< [T][H]
  int num_heads = 64;                 ///< H: 16..128, a multiple of 16
  const uint8_t* cache = nullptr;
  int64_t page_stride = 0;
  int block_size = 64;  ///< BS (D = 128)
  cache_layout layout = cache_layout::linear;
  const int32_t* block_table = nullptr;
  int64_t block_table_stride = 0;
  const int32_t* query_start_loc = nullptr;  ///< [R + 1]
  int num_requests = 0;
  const row_info* rows = nullptr;  ///< [T] from launch_row_info
  int64_t row_begin = 0, row_end = 0;
  float* out = nullptr;
  int64_t ld = 0;      ///< row stride of out, in floats
  int64_t width = 0;   ///< dense + clean: columns of out to fill
  bool clean = false;  ///< dense: -inf on [visible, width); invalid rows get -inf throughout
  // Candidate mode when candidate_ids is set: [T][candidate_stride] ids, candidate_counts[T].
  const int32_t* candidate_ids = nullptr;
  int64_t candidate_stride = 0;
  const int32_t* candidate_counts = nullptr;
  int candidate_block_size = 8;
};

namespace detail {

inline constexpr int plan_threads = 1024;
inline constexpr int min_chunk = 256, max_chunk = 2048;

/// Rows per group for a batch shape: decode (few rows a request) keeps each request's rows
/// together so they share every K read; prefill takes 4 rows, one a wave.
inline int rows_per_group(int64_t rows, int num_requests, bool candidate) {
  if (candidate || num_requests <= 0) return 1;
  const int64_t per_request = (rows + num_requests - 1) / num_requests;
  return per_request <= 1 ? 1 : per_request <= 2 ? 2 : 4;
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

/// Keys a group's row scores: its visible length (dense) or valid candidate columns.
struct dense_keys {
  static constexpr bool candidate = false;
  MXI_DEVICE int64_t columns(int64_t, int64_t visible) const { return visible; }
  MXI_DEVICE int64_t position(int64_t, int64_t col) const { return col; }
};
struct candidate_keys {
  static constexpr bool candidate = true;
  candidate_positions positions;  ///< ids, stride, cbs
  const int32_t* counts;
  MXI_DEVICE int64_t columns(int64_t t, int64_t visible) const {
    return candidate_columns(positions.ids + t * positions.stride, counts[t], positions.cbs, visible);
  }
  MXI_DEVICE int64_t position(int64_t t, int64_t col) const { return positions.position(t, col); }
};

template <class KeyMap>
__global__ __launch_bounds__(plan_threads) void plan_logits(paged_logits_args a, KeyMap map,
                                                            int group, int target_items,
                                                            plan_view plan) {
  __shared__ plan_scan::storage_type scan;
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
    if (r <= a.num_requests) plan.request_base[r] = static_cast<int32_t>(base + prefix);
    base += total;
  }
  const int64_t num_groups = base;
  // Every thread's request_base entries are written before any thread searches them (threads of
  // later warps write none and would otherwise read the workspace's stale plan).
  __syncthreads();
  // Each group: its first row, row count and key count; the total sizes the chunks.
  int64_t my_keys = 0;
  for (int64_t gi = tid; gi < num_groups; gi += plan_threads) {
    int lo = 0, hi = a.num_requests - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (plan.request_base[mid] <= gi) lo = mid;
      else hi = mid - 1;
    }
    const int32_t start = clamp_row(a.query_start_loc[lo], lo_row, hi_row);
    const int32_t end = clamp_row(a.query_start_loc[lo + 1], start, hi_row);
    const int32_t first = start + static_cast<int32_t>(gi - plan.request_base[lo]) * group;
    const int32_t rows = min(group, end - first);
    int64_t keys = 0;
    for (int i = 0; i < rows; ++i) {
      const row_info info = a.rows[first + i];
      if (info.visible > 0) keys = max(keys, map.columns(first + i, info.visible));
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
}

/// A row scorer (one wave scores one row: generic, gfx950) seen through the unit interface the
/// kernel runs: unit_threads threads score up to max_rows rows of a group against a tile,
/// out(row, key, score).
template <class Row, int WaveSize, int Heads>
struct row_unit {
  static constexpr int unit_threads = WaveSize;
  static constexpr int max_rows = 1;
  static constexpr int step_keys = Row::step_keys;
  static constexpr int min_blocks = Heads <= 64 ? 3 : 1;  // registers: three blocks up to H = 64
  static constexpr bool float_scales = true;
  static constexpr bool prepares_keys = false;  // no prepare_key
  static constexpr int prepared_bytes = 0;
  static constexpr int scratch_bytes(int) { return Row::scratch_bytes; }
  template <class Layout>
  using tile = arch::swizzled_tile;  // the row scorers read key_tile_shape::word

  Row row;

  MXI_DEVICE void load(const uint8_t* q_values, const uint8_t* q_scales, const float* weights,
                       int heads, int /*rows*/, void* scratch) {
    row.load(q_values, q_scales, weights, heads, static_cast<float*>(scratch));
  }
  template <class Tile, class Out>
  MXI_DEVICE void score(const arch::key_tile& tile, int n0, Out&& out) const {
    row.score(tile, n0, [&](int n, float v) { out(0, n, v); });
  }
};

/// The policy's unit scorer: its own `unit_scorer` (sm90: a warpgroup, several rows) or its row
/// scorer wrapped in row_unit.
template <class Policy, int Heads, class = void>
struct unit_scorer_of {
  using type = row_unit<typename Policy::template scorer<Heads>, Policy::wave_size, Heads>;
};
template <class Policy, int Heads>
struct unit_scorer_of<Policy, Heads, std::void_t<typename Policy::template unit_scorer<Heads>>> {
  using type = typename Policy::template unit_scorer<Heads>;
};

template <class Policy, int Heads>
struct logits_smem {
  using shape = arch::key_tile_shape;
  using scorer = typename unit_scorer_of<Policy, Heads>::type;
  static constexpr int raw_scale_bytes = shape::keys * 4;
  static constexpr int float_scale_bytes = scorer::float_scales ? shape::keys * shape::blocks * 4 : 0;
  static constexpr int stage_bytes = shape::value_bytes + raw_scale_bytes + float_scale_bytes;
  /// Pipeline depth (tiles in shared memory; stages - 2 in flight while one is scored). 8 for
  /// sm90 measured no faster on the H200 (decode is bound by the scoring, not by HBM latency).
  static constexpr int stages = 4;
  static constexpr int column_bytes = max_chunk * 8;  // page id and token of each column
  /// What the scorer's prepare_key writes for the tile being scored (16-byte aligned).
  static constexpr int prepared_bytes = align_up(scorer::prepared_bytes, 16);
  /// A bulk-copy barrier a stage (8 bytes each, 16-byte aligned region).
  static constexpr int barrier_bytes = align_up(stages * 8, 16);
  /// Shared scratch of one unit for groups of `group` rows, 16-byte aligned.
  static constexpr int scratch_stride(int group) { return align_up(scorer::scratch_bytes(group), 16); }
  static constexpr int bytes(int units, int group) {
    return stages * stage_bytes + column_bytes + prepared_bytes + barrier_bytes + units * scratch_stride(group);
  }
};

// Units (a wave, or an sm90 warpgroup) split a group's rows into sets of at most max_rows rows,
// one set a unit; the units of a set split each tile's keys. One block barrier a tile (two when
// the scorer reads fp32 key scales, converted in shared memory once per tile), one an item.
// Staging: where the scorer reads page tiles and the keys are dense (consecutive positions), one
// thread stages a tile in a few bulk copies, a contiguous run a page (sm90); otherwise every key
// is five cp.async copies spread over the block.
template <class Layout, class Policy, int Heads, int Waves, class KeyMap>
__global__ __launch_bounds__(Waves * Policy::wave_size, (unit_scorer_of<Policy, Heads>::type::min_blocks)) void
paged_logits_kernel(paged_logits_args a, KeyMap map, int group, plan_view plan) {
  if constexpr (!Policy::compiled_here) {
    platform::trap();
  } else {
    using shape = arch::key_tile_shape;
    using smem_t = logits_smem<Policy, Heads>;
    using scorer_t = typename smem_t::scorer;
    constexpr int threads = Waves * Policy::wave_size;
    constexpr int units = threads / scorer_t::unit_threads;
    constexpr int max_rows = scorer_t::max_rows;
    static_assert(units >= 1 && threads % scorer_t::unit_threads == 0, "units of the block");
    extern __shared__ __align__(16) unsigned char smem[];
    const int tid = threadIdx.x;
    const int unit = tid / scorer_t::unit_threads;
    // The host keeps units % sets == 0; one unit (sm90) is one set and one slice, known here.
    const int sets = units == 1 ? 1 : (group + max_rows - 1) / max_rows;
    const int set = unit % sets, slices = units / sets, slice = unit / sets;
    auto* column_token = reinterpret_cast<int32_t*>(smem + smem_t::stages * smem_t::stage_bytes);
    int32_t* column_page = column_token + max_chunk;
    using tile_t = typename scorer_t::template tile<Layout>;
    constexpr bool bulk = tile_t::bulk_copies && !KeyMap::candidate && MXI_ARCH_BULK_COPY;
    unsigned char* prepared = smem + smem_t::stages * smem_t::stage_bytes + smem_t::column_bytes;
    auto* stage_full = reinterpret_cast<uint64_t*>(prepared + smem_t::prepared_bytes);
    void* scratch = prepared + smem_t::prepared_bytes + smem_t::barrier_bytes + unit * smem_t::scratch_stride(group);
    const layout::page_shape page{a.block_size, shape::head_dim};
    const int num_groups = plan.header[0], num_items = plan.header[1], chunk = plan.header[2];

    if constexpr (bulk) {
      if (tid == 0)
        for (int s = 0; s < smem_t::stages; ++s) arch::bulk_barrier_init(stage_full + s);
      platform::block_barrier();
    }
    uint32_t staged = 0;  // tiles staged by this block so far: stage staged % stages, parity
    scorer_t scorer;
    int64_t loaded_row = -1;
    // A block takes a contiguous run of items (the counts differ by at most one), so that
    // consecutive items mostly share their group: the query stays loaded, and the group is found
    // by stepping from the last one rather than by a search of dependent loads.
    const int item_end = static_cast<int>(static_cast<int64_t>(num_items) * (blockIdx.x + 1) / gridDim.x);
    int lo = -1;
    for (int item = static_cast<int>(static_cast<int64_t>(num_items) * blockIdx.x / gridDim.x); item < item_end;
         ++item) {
      if (lo < 0) {
        int hi = num_groups - 1;
        lo = 0;
        while (lo < hi) {
          const int mid = (lo + hi + 1) / 2;
          if (plan.item_base[mid] <= item) lo = mid;
          else hi = mid - 1;
        }
      } else {
        while (plan.item_base[lo + 1] <= item) ++lo;
      }
      const int64_t first = plan.first[lo];
      const int k_begin = (item - plan.item_base[lo]) * chunk;
      const int k_end = min(plan.keys[lo], k_begin + chunk);
      const int32_t request = a.rows[first].request;
      const int32_t* table = a.block_table + static_cast<int64_t>(request) * a.block_table_stride;
      const int32_t stage_visible = a.rows[first].visible;  // candidate mode: the one row

      // Bulk staging reads the item's pages from a list of them; the per-key copies read the page
      // and token in the page of every column, so the tile loop issues its copies without
      // dependent loads or divisions. Token -1: a column not to read.
      const int first_page = bulk ? k_begin / a.block_size : 0;
      if constexpr (bulk) {
        for (int j = tid; j <= (k_end - 1) / a.block_size - first_page; j += threads)
          column_page[j] = table[first_page + j];
      } else {
#pragma unroll 4
        for (int c = tid; c < k_end - k_begin; c += threads) {
          const int64_t pos = map.position(first, k_begin + c);
          // Dense keys stop at the group's widest valid row (row_info checked its pages);
          // candidate positions are bounded by the row's own visible length.
          const bool ok = pos >= 0 && (!KeyMap::candidate || pos < stage_visible);
          const int32_t p = static_cast<int32_t>(pos);
          column_token[c] = ok ? p % a.block_size : -1;
          column_page[c] = ok ? table[p / a.block_size] : 0;
        }
      }

      // This unit's rows and the columns each writes.
      const int64_t set_row = first + set * max_rows;
      const int set_rows = min(max_rows, plan.rows[lo] - set * max_rows);
      int limit[max_rows];
      int set_limit = 0;
#pragma unroll
      for (int i = 0; i < max_rows; ++i) {
        limit[i] = 0;
        if (i < set_rows) {
          const row_info info = a.rows[set_row + i];
          if (info.visible > 0)
            limit[i] = static_cast<int>(min(map.columns(set_row + i, info.visible), static_cast<int64_t>(k_end)));
        }
        set_limit = max(set_limit, limit[i]);
      }
      if (set_limit > k_begin && set_row != loaded_row) {
        const int64_t qh = set_row * a.num_heads;
        scorer.load(a.q_values + qh * (shape::head_dim / 2), a.q_scales + qh * shape::blocks,
                    a.weights + qh, a.num_heads, set_rows, scratch);
        loaded_row = set_row;
      }
      platform::block_barrier();  // column tables ready

      // A key's five copies (four 16-byte blocks, one scale word) go to two threads; thread n
      // copies key n's scale word.
      static_assert(threads >= 2 * shape::keys, "one pass of the staging loop");
      const auto stage = [&](int k0, int s) {
        unsigned char* base = smem + s * smem_t::stage_bytes;
        if constexpr (bulk) {
          // Dense tiles start at multiples of 64 and pages hold multiples of 16 tokens, so every
          // run starts 16-token aligned in its page and in the tile (Layout::copy_tokens' rule).
          if (tid != 0) return;
          arch::fence_proxy_async();  // the reads of the tile this stage last held come first
          const int n = min(k_end - k0, shape::keys);
          for (int i = 0; i < n;) {
            const int page_index = (k0 + i) / a.block_size, token = k0 + i - page_index * a.block_size;
            const int run = min(a.block_size - token, n - i);
            const uint8_t* page_ptr = a.cache + layout::page_offset(column_page[page_index - first_page], a.page_stride);
            Layout::copy_tokens(tile_t::shape, page, i, token, run, [&](int64_t to, int64_t from, int64_t bytes) {
              arch::bulk_copy(base + to, page_ptr + from, static_cast<uint32_t>(bytes), stage_full + s);
            });
            i += run;
          }
          arch::bulk_arrive(stage_full + s);
        } else {
          for (int i = tid; i < 2 * shape::keys; i += threads) {
            const int n = i % shape::keys, half = i / shape::keys;
            const int c = k0 + n - k_begin;
            if (k0 + n >= k_end) continue;
            const int token = column_token[c];
            if (token < 0) continue;
            const uint8_t* page_ptr = a.cache + layout::page_offset(column_page[c], a.page_stride);
#pragma unroll
            for (int b = 2 * half; b < 2 * half + 2; ++b)
              arch::copy_async<16>(base + 4 * tile_t::word(n, b, 0), page_ptr + Layout::value_offset(page, token, b));
            if (half == 0)
              arch::copy_async<4>(base + 4 * tile_t::scale_word(n), page_ptr + Layout::scale_offset(page, token, 0));
          }
          arch::copy_commit();
        }
      };

      const int tiles = (k_end - k_begin + shape::keys - 1) / shape::keys;
      for (int s = 0; s < smem_t::stages - 1; ++s) {
        if (s < tiles) stage(k_begin + s * shape::keys, (staged + s) % smem_t::stages);
        else arch::copy_commit();
      }
      float* out_set = a.out + (set_row - a.row_begin) * a.ld;
      for (int i = 0; i < tiles; ++i, ++staged) {
        const int k0 = k_begin + i * shape::keys;
        const int s = static_cast<int>(staged % smem_t::stages);
        unsigned char* base = smem + s * smem_t::stage_bytes;
        const auto* words = reinterpret_cast<const uint32_t*>(base);
        auto* scales = reinterpret_cast<float*>(base + shape::value_bytes + smem_t::raw_scale_bytes);
        if constexpr (bulk) arch::bulk_wait(stage_full + s, (staged / smem_t::stages) & 1u);
        else arch::copy_wait<smem_t::stages - 2>();
        // Tile i is in; every unit is done with tile i - 1, whose stage the next copy refills.
        // Where the scorer prepares keys, thread n (which copied key n's scale word and sees it
        // after its own wait) prepares key n once for every unit, and votes on that barrier.
        bool flagged = false;
        if constexpr (scorer_t::prepares_keys) {
          bool flag = false;
          if (tid < shape::keys && k0 + tid < k_end && (bulk || column_token[k0 + tid - k_begin] >= 0))
            flag = scorer_t::prepare_key(words[tile_t::scale_word(tid)], tid, prepared);
          flagged = platform::block_barrier_or(flag);
        } else {
          platform::block_barrier();
        }
        const int next = i + smem_t::stages - 1;
        if (next < tiles) stage(k_begin + next * shape::keys, (staged + smem_t::stages - 1) % smem_t::stages);
        else arch::copy_commit();
        if constexpr (scorer_t::float_scales) {
          for (int n = tid; n < shape::keys; n += threads)
            for (int b = 0; b < shape::blocks; ++b)
              scales[n * shape::blocks + b] = format::decode_e8m0(static_cast<uint8_t>(words[tile_t::scale_word(n)] >> (8 * b)));
          platform::block_barrier();
        }
        if (set_limit > k0) {
          const arch::key_tile tile{words, scales, prepared, flagged};
          for (int n0 = slice * scorer_t::step_keys; n0 < shape::keys;
               n0 += slices * scorer_t::step_keys) {
            if (k0 + n0 >= set_limit) break;
            scorer.template score<tile_t>(tile, n0, [&](int r, int n, float v) {
              int row_limit = limit[0];  // limit[r] by selects: no local-memory array
#pragma unroll
              for (int j = 1; j < max_rows; ++j) row_limit = r == j ? limit[j] : row_limit;
              if (k0 + n < row_limit) out_set[r * a.ld + k0 + n] = v;
            });
          }
        }
      }
      platform::block_barrier();  // the item's stages, column tables and queries are free
    }
  }
}

/// -inf on [max(visible, 0), width) of each dense row; a block a row.
__global__ void clean_logits(const row_info* rows, int64_t row_begin, float* out, int64_t ld,
                             int64_t width) {
  const int64_t t = row_begin + blockIdx.x;
  const int64_t visible = rows[t].visible;
  float* row = out + static_cast<int64_t>(blockIdx.x) * ld;
  for (int64_t c = (visible > 0 ? visible : 0) + threadIdx.x; c < width; c += blockDim.x)
    row[c] = -__int_as_float(0x7F800000);
}

#endif  // MXI_GPU_COMPILER

}  // namespace detail

/// Workspace bytes launch_paged_logits needs for `rows` rows of `num_requests` requests.
inline size_t paged_logits_workspace(int64_t rows, int num_requests) {
  return detail::plan_view::bytes(rows, num_requests);
}

#if MXI_GPU_COMPILER

namespace detail {

template <class Layout, class Policy, int Heads, class KeyMap>
platform::error_t launch_logits_with(const paged_logits_args& a, const KeyMap& map, int group,
                                     void* workspace, platform::stream_t stream) {
  constexpr int waves = 4;
  constexpr int threads = waves * Policy::wave_size;
  using smem_t = logits_smem<Policy, Heads>;
  constexpr int units = threads / smem_t::scorer::unit_threads;
  constexpr int max_rows = smem_t::scorer::max_rows;
  if (group > units * max_rows || units % ((group + max_rows - 1) / max_rows) != 0)
    return platform::invalid_value;
  auto* kernel = &paged_logits_kernel<Layout, Policy, Heads, waves, KeyMap>;
  const int smem = smem_t::bytes(units, group);
  // The kernel's limit is raised to the device's opt-in maximum, not to this call's size: host
  // threads launching it with different groups at once would otherwise lower it under each
  // other's launches ("too many resources requested", seen on the H200).
  int device = 0, sms = 0, per_sm = 0;
  size_t limit = 0;
  platform::error_t e = platform::shared_memory_limit(&device, &limit);
  if (e == platform::success && static_cast<size_t>(smem) > limit) return platform::invalid_value;
  if (e == platform::success) e = platform::set_max_dynamic_shared_memory(kernel, static_cast<int>(limit));
  if (e == platform::success) e = platform::multiprocessor_count(&sms, device);
  if (e == platform::success) e = platform::max_active_blocks(&per_sm, kernel, threads, smem);
  if (e != platform::success) return e;
  const int grid = sms * std::max(per_sm, 1);
  const int64_t rows = a.row_end - a.row_begin;
  plan_view plan(workspace, rows, a.num_requests);
  plan_logits<<<1, plan_threads, 0, stream>>>(a, map, group, 4 * grid, plan);
  kernel<<<grid, threads, smem, stream>>>(a, map, group, plan);
  return platform::last_error();
}

template <class Layout, class Policy, class KeyMap>
platform::error_t launch_logits_heads(const paged_logits_args& a, const KeyMap& map, int group,
                                      void* ws, platform::stream_t stream) {
  if (a.num_heads <= 32) return launch_logits_with<Layout, Policy, 32>(a, map, group, ws, stream);
  if (a.num_heads <= 64) return launch_logits_with<Layout, Policy, 64>(a, map, group, ws, stream);
  return launch_logits_with<Layout, Policy, 128>(a, map, group, ws, stream);
}

template <class KeyMap>
platform::error_t launch_logits(const paged_logits_args& a, const KeyMap& map, void* ws,
                                platform::stream_t stream, const arch::target* force) {
  const int64_t rows = a.row_end - a.row_begin;
  if (rows <= 0) return platform::success;
  int device = 0, wave_size = 0;
  arch::target target = arch::target::generic;
  platform::error_t e = platform::get_device(&device);
  if (e == platform::success) e = platform::device_wave_size(device, &wave_size);
  if (e == platform::success) e = arch::select_target(device, &target);
  if (e != platform::success) return e;
  if (force) target = *force;
  const int group = rows_per_group(rows, a.num_requests, KeyMap::candidate);
  return layout::dispatch(a.layout, [&](auto layout_policy) {
    using L = decltype(layout_policy);
#if MXI_PLATFORM_HIP
    if (target == arch::target::gfx950)
      return launch_logits_heads<L, arch::gfx950_policy>(a, map, group, ws, stream);
#else
    if (target == arch::target::sm90)
      return launch_logits_heads<L, arch::sm90_policy>(a, map, group, ws, stream);
#endif
    platform::error_t r = platform::success;
    const bool known = platform::dispatch_wave_size(wave_size, [&](auto w) {
      r = launch_logits_heads<L, arch::generic_policy<decltype(w)::value>>(a, map, group, ws, stream);
    });
    return known ? r : platform::invalid_value;
  });
}

}  // namespace detail

/// Dense or candidate logits (see the file comment). `workspace`: paged_logits_workspace bytes.
/// `force` picks a tile other than the device's best (tests run the generic path on an H200).
inline platform::error_t launch_paged_logits(const paged_logits_args& a, void* workspace,
                                             platform::stream_t stream,
                                             const arch::target* force = nullptr) {
  platform::error_t e;
  if (a.candidate_ids) {
    const detail::candidate_keys map{{a.candidate_ids, a.candidate_stride, a.candidate_block_size},
                                     a.candidate_counts};
    e = detail::launch_logits(a, map, workspace, stream, force);
  } else {
    e = detail::launch_logits(a, detail::dense_keys{}, workspace, stream, force);
  }
  if (e != platform::success || !a.clean || a.candidate_ids || a.row_end <= a.row_begin) return e;
  detail::clean_logits<<<static_cast<unsigned>(a.row_end - a.row_begin), 256, 0, stream>>>(
      a.rows, a.row_begin, a.out, a.ld, a.width);
  return platform::last_error();
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device
