// Paged MQA logits: scores[t][s] = sum_h w[t][h] relu(q[t][h] . k[s]) for query rows
// [row_begin, row_end) over the paged MXFP4 cache, written to out[(t - row_begin) * ld + col].
//
// Two modes share one kernel through a key map:
//   dense      col = position s in [0, visible(t)); `clean` fills [visible, width) with -inf.
//   candidate  per row a list of candidate block ids (ascending, deduplicated, every block live:
//              id * cbs < visible) and its count n; col = j * cbs + i <-> position ids[j] * cbs +
//              i. The valid columns are then the prefix [0, candidate_columns(...))
//              (row_lengths.hpp: only the last block can be partly visible); columns past it are
//              not written. Only the candidate tokens' bytes are read.
//
// Launch shape: a plan kernel (one block, logits_plan.hpp) splits the rows into groups of G
// consecutive tokens of one request (G = 1 in candidate mode) and each group's key range into
// chunks sized so the items outnumber the resident blocks. On sm90 both modes then take the
// warp-specialised kernel (detail/pipelined_logits_kernel.hpp; candidate keys from each
// column's page and token, which candidate prep resolved, else candidate_slots_kernel before the
// plan); elsewhere this file's persistent
// kernel (SMs x occupancy blocks of 4 waves) walks the items, and wave w scores row w % G over a
// 1/(4/G) share of each item's keys with the arch policy's row scorer, which holds the query row
// in registers. The generic scorer reads 64-key tiles the block stages in shared memory (4-stage
// cp.async pipeline, one block barrier a tile); gfx950's reads its 16-key steps' operands straight
// from the pages into registers, four steps ahead (a wave's loads for 16 tokens of a page are one
// contiguous KiB), with no tile and no barrier but the item's. Addressing is 64-bit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mxi/arch/async_copy.hpp"
#include "mxi/arch/key_tile.hpp"
#include "mxi/arch/target.hpp"
#include "mxi/device/key_maps.hpp"
#include "mxi/device/logits_plan.hpp"
#include "mxi/device/page_table.hpp"
#include "mxi/device/tuning.hpp"
#include "mxi/layout/cache_layout.hpp"
#include "mxi/platform/device_limits.hpp"
#include "mxi/platform/dispatch.hpp"
#include "mxi/platform/intrinsics.hpp"
#include "mxi/platform/launch.hpp"
#include "mxi/platform/runtime.hpp"
#include "mxi/platform/wave.hpp"
#include "mxi/platform/workspace.hpp"
#if MXI_ARCH_HAS_SM90
#include "mxi/device/detail/pipelined_logits_kernel.hpp"
#endif

namespace mxi::device {

namespace detail {

#if MXI_GPU_COMPILER

/// A row scorer (one wave scores one row: generic, gfx950) seen through the unit interface the
/// kernel runs: unit_threads threads score up to max_rows rows of a group, out(row, key, score),
/// against a staged tile or, for a direct scorer, against the operands it fetched itself.
template <class Row, int WaveSize, int Heads>
struct row_unit {
  static constexpr int unit_threads = WaveSize;
  static constexpr int max_rows = 1;
  static constexpr int step_keys = Row::step_keys;
  static constexpr bool direct_keys = Row::direct_keys;
  static constexpr bool float_scales = Row::float_scales;  // the kernel converts them a tile
  static constexpr int scratch_bytes(int) { return Row::scratch_bytes; }
  template <class Layout>
  using tile = arch::swizzled_tile;  // a staging row scorer reads key_tile_shape::word

  using row_type = Row;
  Row row;

  MXI_DEVICE void load(const uint8_t* q_values, const uint8_t* q_scales, const float* weights,
                       int heads, int /*rows*/, void* scratch) {
    row.load(q_values, q_scales, weights, heads, static_cast<float*>(scratch));
  }
  template <class Tile, class Out>
  MXI_DEVICE void score(const arch::key_tile& tile, int n0, Out&& out) const {
    row.score(tile, n0, [&](int n, float v) { out(0, n, v); });
  }
  /// Direct scorers: this lane's operand of a step's keys source(0 .. step_keys - 1), then its
  /// scores.
  template <class Layout, class Source>
  MXI_DEVICE static auto fetch(int block_size, Source&& source) {
    return Row::template fetch<Layout>(block_size, source);
  }
  template <class Operand, class Out>
  MXI_DEVICE void score(const Operand& keys, Out&& out) const {
    row.score(keys, [&](int n, float v) { out(0, n, v); });
  }
};

/// The policy's row scorer as a unit.
template <class Policy, int Heads>
using unit_scorer_of = row_unit<typename Policy::template scorer<Heads>, Policy::wave_size, Heads>;

template <class Policy, int Heads>
struct logits_smem {
  using shape = arch::key_tile_shape;
  using scorer = unit_scorer_of<Policy, Heads>;
  static constexpr logits_config config = logits_config_for(Policy::kind);
  /// Blocks a multiprocessor keeps resident: the kernel's launch bound (its registers).
  static constexpr int resident_blocks = config.resident_blocks_at(Heads);
  // A stage, in order: the tile's values and scale words (key_tile_shape::value_bytes + a word a
  // key), then the scales as fp32 where the scorer reads them so.
  static constexpr int float_scales_offset = shape::value_bytes + shape::keys * 4;
  static constexpr int stage_bytes =
      float_scales_offset + (scorer::float_scales ? shape::keys * shape::blocks * 4 : 0);
  /// Pipeline depth (logits_config::stages; none for a direct scorer).
  static constexpr int stages = scorer::direct_keys ? 0 : config.stages;
  // In order: the stages, each column's token then page id (int32, max_chunk each), each unit's
  // query scratch.
  static constexpr int tokens_offset = stages * stage_bytes;
  static constexpr int pages_offset = tokens_offset + max_chunk * 4;
  static constexpr int scratch_offset = pages_offset + max_chunk * 4;
  /// Shared scratch of one unit for groups of `group` rows, 16-byte aligned.
  static constexpr int scratch_stride(int group) { return align_up(scorer::scratch_bytes(group), 16); }
  static constexpr int bytes(int units, int group) {
    return scratch_offset + units * scratch_stride(group);
  }
};

// Units (a wave) split a group's rows into sets of at most max_rows rows, one set a unit; the
// units of a set split each tile's keys (each 16-key step's, for a direct scorer). Staged: one
// block barrier a tile (two when the scorer reads fp32 key scales, converted in shared memory once
// per tile); the key-tile loader (arch::load_key_tile, cp.async) fills the tile addressing the
// scorer reads. Direct (gfx950): each unit fetches its keys' operands from the pages itself,
// `lookahead` steps before it scores them, with no tile and no barrier a tile. One barrier an
// item either way.
template <class Layout, class Policy, int Heads, int Waves, class KeyMap>
__global__ __launch_bounds__(
    Waves* Policy::wave_size,
    (logits_smem<Policy, Heads>::resident_blocks)) void paged_logits_kernel(paged_logits_args a,
                                                                            KeyMap map, int group,
                                                                            plan_view plan) {
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
    const int sets = (group + max_rows - 1) / max_rows;  // the host keeps units % sets == 0
    const int set = unit % sets, slices = units / sets, slice = unit / sets;
    auto* column_token = reinterpret_cast<int32_t*>(smem + smem_t::tokens_offset);
    auto* column_page = reinterpret_cast<int32_t*>(smem + smem_t::pages_offset);
    using tile_t = typename scorer_t::template tile<Layout>;
    void* scratch = smem + smem_t::scratch_offset + unit * smem_t::scratch_stride(group);
    platform::wait_for_prior_grid();  // launched chained
    platform::allow_next_grid();
    const int num_groups = plan.header[0], num_items = plan.header[1], chunk = plan.header[2];

    [[maybe_unused]] uint32_t staged = 0;  // tiles staged so far: stage staged % stages
    scorer_t scorer;
    int64_t loaded_row = -1;
    item_walk walk(num_items);
    for (int item = walk.begin; item < walk.end; ++item) {
      const int lo = walk.template group_of<Policy::wave_size>(plan, num_groups, item);
      const plan_item it(plan, lo, item, chunk);
      const int64_t first = it.first;
      const int k_begin = it.k_begin;
      const int group_limit = it.valid_end(a, map);
      const page_table table =
          page_table::of(a.block_table, a.block_table_stride, a.rows[first].request, a.num_pages);
      const int32_t stage_visible = a.rows[first].visible;  // candidate mode: the one row

      // The page and token in the page of every column, so the tile loop issues its copies
      // without dependent loads or divisions. Token -1: a column not to read. Dense keys stop at
      // the group's widest valid row (row_info checked its pages); candidate positions are
      // bounded by the row's own visible length.
#pragma unroll 4
      for (int c = tid; c < group_limit - k_begin; c += threads) {
        const int64_t pos = map.position(first, k_begin + c);
        const bool ok = pos >= 0 && (!KeyMap::candidate || pos < stage_visible);
        const int2 slot =
            ok ? table.slot(static_cast<int32_t>(pos), a.block_size) : make_int2(0, -1);
        column_token[c] = slot.y;
        column_page[c] = slot.x;
      }

      // This unit's rows and the columns each writes.
      const int64_t set_row = first + set * max_rows;
      const int set_rows = min(max_rows, plan.rows[lo] - set * max_rows);
      const row_limits<max_rows> limits(it, a, map, set_row, set_rows);
      const int set_limit = limits.largest;
      if (set_limit > k_begin && set_row != loaded_row) {
        const int64_t qh = set_row * a.num_heads;
        scorer.load(a.q_values + qh * (shape::head_dim / 2), a.q_scales + qh * shape::blocks,
                    a.weights + qh, a.num_heads, set_rows, scratch);
        loaded_row = set_row;
      }
      platform::block_barrier();  // column tables and the units' queries ready
      // Where the item's column c lives (token -1: a column not to read).
      const auto column_key = [&](int c) {
        return arch::key_source{a.cache + layout::page_offset(column_page[c], a.page_stride),
                                column_token[c]};
      };

      if constexpr (scorer_t::direct_keys) {
        // A ring of `ahead` steps' operands in registers. Step j's slot is refilled with step
        // j + ahead right after step j's MFMAs read it (before, the slot would need a second
        // register set, and copies that wait for the loads). Every step fetches, scored or not,
        // and the loop's bounds are the wave's (wave_uniform): a load that some paths skip makes
        // the compiler wait for every load in flight (tools/isa-gates.py checks the stream).
        constexpr int ahead = scorer_t::row_type::lookahead, step = scorer_t::step_keys;
        const int stride = slices * step;
        const int last = platform::wave_uniform(set_limit) - 1;  // the set's last column
        float* out_set = a.out + (set_row - a.row_begin) * a.ld;
        // Lanes past the last column read its key again (their scores are not stored).
        const auto fetch = [&](int k0) {
          return scorer_t::template fetch<Layout>(
              a.block_size, [&](int n) { return column_key(min(k0 + n, last) - k_begin); });
        };
        int k0 = platform::wave_uniform(k_begin + slice * step);
        if (last >= k0) {
          decltype(fetch(k0)) ring[ahead];
#pragma unroll
          for (int u = 0; u < ahead; ++u) ring[u] = fetch(k0 + u * stride);
          for (; k0 <= last; k0 += ahead * stride) {
#pragma unroll
            for (int u = 0; u < ahead; ++u) {
              const int s0 = k0 + u * stride;
              if (s0 <= last) {  // not a break: see above
                scorer.score(ring[u], [&](int r, int n, float v) {
                  if (s0 + n < limits[r]) out_set[r * a.ld + s0 + n] = v;
                });
              }
              ring[u] = fetch(s0 + ahead * stride);
            }
          }
        }
      } else {
        // The key-tile loader.
        static_assert(threads >= 2 * shape::keys, "one pass of the loader");
        const auto stage = [&](int k0, int s) {
          arch::load_key_tile<Layout, tile_t, arch::async_copies>(
              smem + s * smem_t::stage_bytes, a.block_size, group_limit - k0, tid, threads,
              [&](int n) { return column_key(k0 + n - k_begin); });
          arch::copy_commit();
        };

        const int tiles = it.tiles(group_limit);
        for (int s = 0; s < smem_t::stages - 1; ++s) {
          if (s < tiles)
            stage(k_begin + s * shape::keys, (staged + s) % smem_t::stages);
          else
            arch::copy_commit();
        }
        float* out_set = a.out + (set_row - a.row_begin) * a.ld;
        for (int i = 0; i < tiles; ++i, ++staged) {
          const int k0 = k_begin + i * shape::keys;
          const int s = static_cast<int>(staged % smem_t::stages);
          unsigned char* base = smem + s * smem_t::stage_bytes;
          const auto* words = reinterpret_cast<const uint32_t*>(base);
          auto* scales = reinterpret_cast<float*>(base + smem_t::float_scales_offset);
          arch::copy_wait<smem_t::stages - 2>();
          // Tile i is in; every unit is done with tile i - 1, whose stage the next copy refills.
          platform::block_barrier();
          const int next = i + smem_t::stages - 1;
          if (next < tiles)
            stage(k_begin + next * shape::keys, (staged + smem_t::stages - 1) % smem_t::stages);
          else
            arch::copy_commit();
          if constexpr (scorer_t::float_scales) {
            for (int n = tid; n < shape::keys; n += threads)
              for (int b = 0; b < shape::blocks; ++b)
                scales[n * shape::blocks + b] =
                    format::decode_e8m0(arch::tile_scale<tile_t>(words, n, b));
            platform::block_barrier();
          }
          if (set_limit > k0) {
            const arch::key_tile tile{words, scales};
            for (int n0 = slice * scorer_t::step_keys; n0 < shape::keys;
                 n0 += slices * scorer_t::step_keys) {
              if (k0 + n0 >= set_limit) break;
              scorer.template score<tile_t>(tile, n0, [&](int r, int n, float v) {
                if (k0 + n < limits[r]) out_set[r * a.ld + k0 + n] = v;
              });
            }
          }
        }
      }
      platform::block_barrier();  // the item's stages, column tables and queries are free
    }
  }
}

#if MXI_ARCH_HAS_SM90
/// Each candidate column's page id and token, token -1 past the row's valid columns (the plan's
/// items reach the bound of a row's columns, KeyMap::column_bound):
/// slots[(t - row_begin) * stride + col], a thread a column (blockIdx.y strides over the rows).
/// For the sm90 kernel's staging warps, where the caller gave no slots from candidate prep.
__global__ void candidate_slots_kernel(paged_logits_args a, candidate_keys map, int2* slots,
                                       int64_t stride) {
  platform::wait_for_prior_grid();  // launched chained
  platform::allow_next_grid();
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= stride) return;
  for (int64_t t = a.row_begin + blockIdx.y; t < a.row_end; t += gridDim.y) {
    const row_info info = a.rows[t];
    int2 slot = make_int2(0, -1);
    if (info.visible > 0 && col < map.columns(t, info.visible)) {
      const page_table table =
          page_table::of(a.block_table, a.block_table_stride, info.request, a.num_pages);
      slot = table.slot(static_cast<int32_t>(map.position(t, col)), a.block_size);
    }
    slots[(t - a.row_begin) * stride + col] = slot;
  }
}
#endif

/// -inf on [max(visible, 0), width) of each dense row; a block a row.
__global__ void clean_logits(const row_info* rows, int64_t row_begin, float* out, int64_t ld,
                             int64_t width) {
  platform::wait_for_prior_grid();  // launched chained
  platform::allow_next_grid();
  const int64_t t = row_begin + blockIdx.x;
  const int64_t visible = rows[t].visible;
  float* row = out + static_cast<int64_t>(blockIdx.x) * ld;
  for (int64_t c = (visible > 0 ? visible : 0) + threadIdx.x; c < width; c += blockDim.x)
    row[c] = -__int_as_float(0x7F800000);
}

#endif  // MXI_GPU_COMPILER

}  // namespace detail

namespace detail {
/// launch_paged_logits' workspace, in order: the plan (at the start: the launchers read it as
/// plan_view(workspace, ...)), then each candidate column's page id and token (two int32, `rows`
/// rows of `candidate_columns`: the sm90 kernel's staging reads them). Over a null base it only
/// sizes it.
struct paged_logits_layout {
  void* plan;
  int32_t* slots;
  size_t bytes;
  paged_logits_layout(void* base, int64_t rows, int num_requests, int64_t candidate_columns) {
    platform::workspace_carver w(base);
    plan = w.take<unsigned char>(plan_view::bytes(rows, num_requests));
    slots = w.take<int32_t>(static_cast<size_t>(rows * candidate_columns) * 2);
    bytes = w.bytes();
  }
};
}  // namespace detail

/// Where launch_paged_logits keeps the candidate columns' slots in its workspace (for `rows` rows
/// of `num_requests` requests): candidate prep may write them there (candidate_slot_sink) and
/// pass them on as paged_logits_args::candidate_slots.
inline int32_t* candidate_slots_in(void* workspace, int64_t rows, int num_requests) {
  return detail::paged_logits_layout(workspace, rows, num_requests, 0).slots;
}

/// Workspace bytes launch_paged_logits needs for `rows` rows of `num_requests` requests, with
/// `candidate_columns` (NCB x cbs) columns a row in candidate mode (detail::paged_logits_layout).
inline size_t paged_logits_workspace(int64_t rows, int num_requests,
                                     int64_t candidate_columns = 0) {
  return detail::paged_logits_layout(nullptr, rows, num_requests, candidate_columns).bytes;
}

#if MXI_GPU_COMPILER

namespace detail {

template <class Layout, class Policy, int Heads, class KeyMap>
platform::error_t launch_logits_with(const paged_logits_args& a, const KeyMap& map, int group,
                                     void* workspace, platform::stream_t stream) {
  using smem_t = logits_smem<Policy, Heads>;
  constexpr int waves = smem_t::config.waves;
  constexpr int threads = waves * Policy::wave_size;
  constexpr int units = threads / smem_t::scorer::unit_threads;
  constexpr int max_rows = smem_t::scorer::max_rows;
  if (group > units * max_rows || units % ((group + max_rows - 1) / max_rows) != 0)
    return platform::invalid_value;
  auto* kernel = &paged_logits_kernel<Layout, Policy, Heads, waves, KeyMap>;
  const int smem = smem_t::bytes(units, group);
  platform::kernel_limits k;
  int per_sm = 0;
  platform::error_t e = platform::prepare_kernel(kernel, smem, &k);
  if (e == platform::success) e = platform::max_active_blocks(&per_sm, kernel, threads, smem);
  if (e != platform::success) return e;
  const int grid = k.multiprocessors * std::max(per_sm, 1);
  const int64_t rows = a.row_end - a.row_begin;
  plan_view plan(workspace, rows, a.num_requests);
  const int items = smem_t::config.items_per_block * grid;
  e = launch_plan(a, map, group, items, plan, a.plan_overlaps_prior, stream);
  if (e != platform::success) return e;
  return platform::launch(kernel,
                          {dim3(grid), threads, static_cast<size_t>(smem), 1, /*chained=*/true},
                          stream, a, map, group, plan);
}

/// Calls f(std::integral_constant<int, H>{}) with the padded head count the kernels are built for.
template <class F>
platform::error_t with_heads(int num_heads, F&& f) {
  return platform::with_constant<32, 64, 128>([&](int h) { return num_heads <= h; }, f);
}

template <class Layout, class Policy, class KeyMap>
platform::error_t launch_logits_heads(const paged_logits_args& a, const KeyMap& map, int group,
                                      void* ws, platform::stream_t stream) {
  return with_heads(a.num_heads, [&](auto heads) {
    return launch_logits_with<Layout, Policy, decltype(heads)::value>(a, map, group, ws, stream);
  });
}

#if MXI_ARCH_HAS_SM90
/// The sm90 kernel (detail/pipelined_logits_kernel.hpp). Candidate keys stage from their slots:
/// the caller's (candidate prep wrote them), else candidate_slots_kernel resolves them first.
template <class Layout, class KeyMap>
platform::error_t launch_sm90_logits(const paged_logits_args& a, const KeyMap& map, int group,
                                     void* ws, platform::stream_t stream) {
  KeyMap keys = map;
  bool overlap = a.plan_overlaps_prior;
  if constexpr (KeyMap::candidate) {
    keys.slot_stride = a.candidate_stride * a.candidate_block_size;
    keys.slots = reinterpret_cast<const int2*>(a.candidate_slots);
    if (keys.slots == nullptr) {
      const int64_t rows = a.row_end - a.row_begin;
      auto* slots = reinterpret_cast<int2*>(candidate_slots_in(ws, rows, a.num_requests));
      keys.slots = slots;
      overlap = true;  // the slots kernel touches no plan and waited for the kernels before
      constexpr int threads = logits_config_for(arch::target::sm90).slot_threads;
      const dim3 grid(static_cast<unsigned>((keys.slot_stride + threads - 1) / threads),
                      static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
      const platform::error_t e =
          platform::launch(&candidate_slots_kernel, {grid, threads, 0, 1, /*chained=*/true}, stream,
                           a, keys, slots, keys.slot_stride);
      if (e != platform::success) return e;
    }
  }
  return with_heads(a.num_heads, [&](auto heads) {
    return launch_pipelined_logits<Layout, decltype(heads)::value>(a, keys, group, ws, overlap,
                                                                   stream);
  });
}
#endif

template <class KeyMap>
platform::error_t launch_logits(const paged_logits_args& a, const KeyMap& map, void* ws,
                                platform::stream_t stream, const arch::target* force) {
  const int64_t rows = a.row_end - a.row_begin;
  if (rows <= 0) return platform::success;
  int device = 0, wave_size = 0;
  arch::target target = arch::target::generic;
  platform::error_t e = platform::get_device(&device);
  if (e == platform::success) e = platform::device_wave_size(device, &wave_size);
  if (e == platform::success) e = arch::choose_target(device, &target);
  if (e != platform::success) return e;
  if (force) target = *force;
  // The sm90 kernel stages page tiles, which the aiter orders have none of (a key's scales are
  // not one word: arch::has_page_tile); their keys take the generic scorer's tiles there.
  if (target == arch::target::sm90 &&
      !layout::dispatch(a.layout, [](auto l) { return arch::has_page_tile<decltype(l)>; }))
    target = arch::target::generic;
  const logits_config config = logits_config_for(target);
  const int group = rows_per_group(rows, a.num_requests, KeyMap::candidate, config, a.num_heads);
  e = layout::dispatch(a.layout, [&](auto layout_policy) {
    using L = decltype(layout_policy);
#if MXI_ARCH_HAS_SM90
    if constexpr (arch::has_page_tile<L>)
      if (target == arch::target::sm90) return launch_sm90_logits<L>(a, map, group, ws, stream);
#endif
    platform::error_t r = platform::success;
    const bool known = arch::with_row_policy(target, wave_size, [&](auto policy) {
      r = launch_logits_heads<L, decltype(policy)>(a, map, group, ws, stream);
    });
    return known ? r : platform::invalid_value;
  });
  if (e != platform::success || KeyMap::candidate || !a.clean) return e;
  return platform::launch(&clean_logits,
                          {dim3(static_cast<unsigned>(rows)),
                           static_cast<unsigned>(config.clean_threads), 0, 1, /*chained=*/true},
                          stream, a.rows, a.row_begin, a.out, a.ld, a.width);
}

}  // namespace detail

/// Whether the current device's candidate logits stage their keys from column slots (the sm90
/// kernel does), so that candidate prep had better write them (candidate_slots_in).
inline platform::error_t candidate_slots_wanted(bool* wanted) {
  arch::target target = arch::target::generic;
  const platform::error_t e = current_target(&target);
  *wanted = e == platform::success && target == arch::target::sm90;  // never where no sm90 tile
  return e;
}

/// Dense or candidate logits (see the file comment). `workspace`: paged_logits_workspace bytes.
/// `force` picks a tile other than the device's best (tests run the generic path on an H200).
inline platform::error_t launch_paged_logits(const paged_logits_args& a, void* workspace,
                                             platform::stream_t stream,
                                             const arch::target* force = nullptr) {
  if (a.candidate_ids) {
    const detail::candidate_keys map{{a.candidate_ids, a.candidate_stride, a.candidate_block_size},
                                     a.candidate_counts};
    return detail::launch_logits(a, map, workspace, stream, force);
  }
  return detail::launch_logits(a, detail::dense_keys{}, workspace, stream, force);
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device
