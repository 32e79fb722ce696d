// The sm90 logits kernel, warp-specialised: a block is one producer warpgroup and Consumers
// consumer warpgroups around a ring of Stages page tiles in shared memory.
//   producer warps 0, 3 walk the block's items (logits_plan.hpp) and stage the 64-token tiles
//                       in turn once a tile's stage is free. Dense keys: bulk copies
//                       (arch::stage_dense_tile: one for a whole page, else a copy a lane;
//                       where every page is read once, their L2 lines go first).
//                       Candidate keys (a gather of scattered tokens): each key's page and token
//                       from the slots resolved beforehand (by candidate prep, or else by
//                       candidate_slots_kernel: resolving them here, two dependent loads and two
//                       divisions a key, held one warp so long that it set the pace), a
//                       cp.async a key and block
//                       (arch::load_key_tile), the lanes' arrivals counted on the stage's barrier
//                       as their copies land;
//   producer warps 1, 2 prepare the landed tiles in turn, a thread two keys
//                       (tile_scorer::prepare_key: the blocks' table shifts and the factor, and
//                       whether the key does not fold).
// Each of the four works on every other tile: a tile's staging or preparing is a dependent chain
// of a few hundred cycles, which one warp alone could not keep up with;
//   consumer c          scores tiles c, c + Consumers, ... of the block's sequence against its
//                       own copy of the group's query (tile_scorer: wgmma and the head reduce),
//                       writes the scores, and frees the stage.
// Three mbarriers a stage order it: full (the copies landed), ready (the keys are prepared),
// empty (the consumer is done). Each thread that read a stage arrives itself on its barrier: an
// arrival releases only the arriving thread's accesses (with one lane a warp arriving after a
// warp barrier, compute-sanitizer's racecheck saw the other lanes' reads unordered against the
// ring's next lap). There is no block-wide barrier after the start, so the producer
// runs up to Stages tiles ahead and the consumers never wait for one another; the consumers run
// none of the staging or preparing (in the single-warpgroup kernel they took a third of its
// instructions and most of its barrier stalls).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "mxi/arch/async_copy.hpp"
#include "mxi/arch/key_tile.hpp"
#include "mxi/arch/sm90.hpp"
#include "mxi/device/logits_plan.hpp"
#include "mxi/device/page_table.hpp"
#include "mxi/platform/device_limits.hpp"
#include "mxi/platform/dispatch.hpp"
#include "mxi/platform/intrinsics.hpp"
#include "mxi/platform/launch.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::device::detail {

/// The kernel's shape: consumer warpgroups and pipeline depth (pipelined_logits_build picks it).
/// Three consumers and a producer fill an SM's 64K registers at 128 a thread (one block an SM).
template <int Consumers, int Stages>
struct pipelined_logits_config {
  static constexpr int consumers = Consumers;
  static constexpr int stages = Stages;
  static constexpr int threads = arch::sm90::warpgroup_threads * (1 + consumers);
  /// Registers a thread: the block's share of the SM's 64K at launch (one block an SM), then the
  /// producer's gives most of its own to the consumers, which hold the accumulators.
  static constexpr int launch_registers =
      (65536 / threads) / 8 * 8 < 255 ? (65536 / threads) / 8 * 8 : 255;
  static constexpr int producer_registers = 56;
  static constexpr int consumer_share =
      (launch_registers * threads - producer_registers * arch::sm90::warpgroup_threads) /
      (consumers * arch::sm90::warpgroup_threads) / 8 * 8;
  static constexpr int consumer_registers = consumer_share < 256 ? consumer_share : 256;
};

/// Dynamic shared memory, in order: the stages (a page tile, what prepare_key wrote for its keys,
/// the preparing warp's flag), three barriers a stage, the item's page ids (each staging warp's),
/// and each consumer's query scratch.
template <int Heads, int Consumers, int Stages>
struct pipelined_logits_smem {
  using config = pipelined_logits_config<Consumers, Stages>;
  using scorer = arch::sm90::tile_scorer<Heads>;
  using shape = arch::key_tile_shape;
  static constexpr int tile_bytes = shape::value_bytes + shape::keys * 4;  // values, scale words
  static constexpr int prepared_offset = tile_bytes;
  static constexpr int flags_offset = prepared_offset + align_up(scorer::prepared_bytes, 16);
  static constexpr int stage_bytes = align_up(flags_offset + 16, 128);
  static constexpr int barrier_offset = config::stages * stage_bytes;
  static constexpr int pages_offset = barrier_offset + align_up(3 * config::stages * 8, 16);
  /// An item spans at most max_chunk / 16 pages from a tile boundary (pages hold multiples of 16
  /// tokens), one more for larger pages.
  static constexpr int max_pages = max_chunk / 16 + 1;
  static constexpr int scratch_offset =
      align_up(pages_offset + 2 * max_pages * 4, 128);  // two stagers
  static constexpr int scratch_stride(int group) { return align_up(scorer::scratch_bytes(group), 128); }
  static constexpr int bytes(int group) { return scratch_offset + config::consumers * scratch_stride(group); }
};

/// The build for groups of at most Rows rows at H = Heads: three consumers with the deepest ring
/// whose queries fit an sm90 block's shared memory, else fewer consumers with 8 stages (H = 128,
/// 2 rows). One row's queries leave room for 32 stages, which hide more of the gathers' latency
/// (bench_logits decode 64 x 32K, H200, 2026-12-02: 95.7 -> 93.5 us); 16 (about twelve tiles in
/// flight beside the three being scored) serve two rows (20: no faster); three rows' queries
/// leave room for 8, enough where every tile takes three rows' work (bench_indexer, H200,
/// 2026-12-03: prefill 32K with groups of three and 8 stages 16.5 ms, of two and 16 stages 17.3;
/// 8 stages for groups of two made next_n 2 and 4 slower). A ring whose depth is a run-time power of two cost the
/// multi-row groups 2-3% (next_n 2, prefill), so the depth is a constant of the build.
template <int Heads, int Rows, int Consumers = 3, int Stages = (Rows == 1 ? 32 : 16)>
constexpr auto pick_pipelined_logits_build() {
  constexpr bool fits =
      pipelined_logits_smem<Heads, Consumers, Stages>::bytes(Rows) <= arch::sm90::max_shared_bytes;
  if constexpr (fits || (Consumers == 1 && Stages == 8))
    return pipelined_logits_config<Consumers, Stages>{};
  else if constexpr (Stages > 8)
    return pick_pipelined_logits_build<Heads, Rows, Consumers, Stages / 2>();
  else
    return pick_pipelined_logits_build<Heads, Rows, Consumers - 1, 8>();
}
template <int Heads, int Rows>
using pipelined_logits_build = decltype(pick_pipelined_logits_build<Heads, Rows>());

#if MXI_GPU_COMPILER

/// Rows: the most rows a group of the launch holds (1 for candidate keys).
template <class Layout, int Heads, int Rows, class KeyMap>
__global__ __launch_bounds__(pipelined_logits_build<Heads, Rows>::threads,
                             1) void pipelined_logits_kernel(paged_logits_args a, KeyMap map,
                                                             plan_view plan, bool pages_read_once) {
#if !MXI_ARCH_SM90_WGMMA
  platform::trap();
#else
  using config = pipelined_logits_build<Heads, Rows>;
  using smem_t = pipelined_logits_smem<Heads, config::consumers, config::stages>;
  using scorer_t = typename smem_t::scorer;
  static_assert(Rows >= 1 && Rows <= scorer_t::max_rows, "a group the scorer takes");
  using shape = arch::key_tile_shape;
  using tile_t = arch::page_tile<Layout>;
  constexpr int stages = config::stages, keys = shape::keys;
  extern __shared__ __align__(128) unsigned char pipeline_smem[];
  unsigned char* smem = pipeline_smem;
  auto* full = reinterpret_cast<uint64_t*>(smem + smem_t::barrier_offset);
  uint64_t* ready = full + stages;
  uint64_t* empty = ready + stages;
  const int tid = threadIdx.x, warpgroup = tid / arch::sm90::warpgroup_threads;
  const int warp = tid / arch::sm90::wave_size, lane = tid % arch::sm90::wave_size;
  if (tid == 0) {
    for (int s = 0; s < stages; ++s) {
      // Dense: the staging lane's arrival and the copies' bytes; candidate: each lane's copies.
      arch::barrier_init(full + s, KeyMap::candidate ? arch::sm90::wave_size : 1);
      arch::barrier_init(ready + s, 32);  // every thread of the preparing warp
      // Every consumer thread: an arrival releases only its own thread's reads of the stage.
      arch::barrier_init(empty + s, arch::sm90::warpgroup_threads);
    }
  }
  platform::block_barrier();
  platform::wait_for_prior_grid();  // launched chained: the barriers' set-up overlapped the plan
  platform::allow_next_grid();
  const int num_groups = plan.header[0], num_items = plan.header[1], chunk = plan.header[2];
  // Tile j of the block's sequence sits in stage j % stages, in that stage's use j / stages.
  const auto stage_of = [&](uint32_t j) { return smem + (j % stages) * smem_t::stage_bytes; };
  const auto parity = [](uint32_t j) { return (j / stages) & 1u; };
  item_walk walk(num_items);

  if (warpgroup == 0) {
    arch::sm90::set_registers<config::producer_registers, false>();
    if (warp == 0 || warp == 3) {  // the copies: warp 0 even tiles, warp 3 odd ones
      const uint32_t mine = warp == 0 ? 0u : 1u;
      uint32_t j = 0;
      for (int item = walk.begin; item < walk.end; ++item) {
        const plan_item it(plan,
                           walk.template group_of<arch::sm90::wave_size>(plan, num_groups, item),
                           item, chunk);
        if constexpr (KeyMap::candidate) {
          // Lane l stages keys l and l + 32 of each of this warp's tiles; the next tile's slots
          // are loaded before this one's stage is awaited.
          const int2* slots = map.slots + (it.first - a.row_begin) * map.slot_stride;
          const auto load = [&](int k0, int2(&s)[2]) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int c = k0 + lane + h * arch::sm90::wave_size;
              s[h] = c < it.k_end ? slots[c] : make_int2(0, -1);
            }
          };
          int2 next[2];
          load(it.k_begin + static_cast<int>((j + mine) % 2) * keys, next);
          for (int k0 = it.k_begin; k0 < it.k_end; k0 += keys, ++j) {
            if (j % 2 != mine) continue;
            const int2 low = next[0], high = next[1];  // keys lane and lane + 32
            load(k0 + 2 * keys, next);
            if (j >= stages) arch::barrier_wait(empty + j % stages, parity(j) ^ 1u);
            arch::load_key_tile<Layout, tile_t, arch::async_copies>(
                stage_of(j), a.block_size, min(it.k_end - k0, keys), lane, arch::sm90::wave_size,
                [&](int n) {
                  const int2 s = n < arch::sm90::wave_size ? low : high;
                  return arch::key_source{a.cache + layout::page_offset(s.x, a.page_stride), s.y};
                });
            arch::copy_arrive(full + j % stages);
          }
        } else {
          auto* pages =
              reinterpret_cast<int32_t*>(smem + smem_t::pages_offset) + mine * smem_t::max_pages;
          // A dense plan keeps the items of rows row_info rejected (launch_plan), whose request
          // (-1 for a broken batch) and page ids may be anything: reads of them stay inside the
          // block table and the cache, and the consumers score none of their keys.
          const page_table table = page_table::of(a.block_table, a.block_table_stride,
                                                  a.rows[it.first].request, a.num_pages);
          const uint64_t policy = arch::l2_policy(pages_read_once);
          arch::tile_start at = arch::tile_start::of(it.k_begin, a.block_size);
          const int first_page = at.page;
          platform::wave_barrier<arch::sm90::wave_size>();  // the last item's page ids are used
          for (int p = lane; p <= (it.k_end - 1) / a.block_size - first_page;
               p += arch::sm90::wave_size)
            pages[p] = table.page(first_page + p);
          platform::wave_barrier<arch::sm90::wave_size>();
          // This warp's tiles of the item: every other one from the first of its parity.
          const uint32_t item_end = j + static_cast<uint32_t>(it.tiles(it.k_end));
          int k0 = it.k_begin;
          if (j % 2 != mine) {
            ++j;
            k0 += keys;
            at.next(a.block_size);
          }
          for (; j < item_end; j += 2, k0 += 2 * keys) {
            if (j >= stages) arch::barrier_wait(empty + j % stages, parity(j) ^ 1u);
            arch::fence_proxy_async();  // the consumer's reads of this stage come first
            arch::stage_dense_tile<Layout>(
                stage_of(j), a.cache, a.page_stride, a.block_size, at, min(it.k_end - k0, keys),
                [&](int p) { return pages[p - first_page]; }, full + j % stages, policy);
            at.next(a.block_size);
            at.next(a.block_size);
          }
          j = item_end;
        }
      }
    } else {  // the key preparation: warp w takes tiles j = w - 1 (mod 2), a thread two keys
      constexpr int preparers = 2;
      uint32_t j = 0;
      for (int item = walk.begin; item < walk.end; ++item) {
        const plan_item it(plan,
                           walk.template group_of<arch::sm90::wave_size>(plan, num_groups, item),
                           item, chunk);
        // This warp's tiles of the item: every other one from the first of its parity.
        const uint32_t item_begin = j, item_end = j + static_cast<uint32_t>(it.tiles(it.k_end));
        for (j += (static_cast<uint32_t>(warp - 1) + preparers - j % preparers) % preparers;
             j < item_end; j += preparers) {
          const int k0 = it.k_begin + static_cast<int>(j - item_begin) * keys;
          arch::barrier_wait(full + j % stages, parity(j));
          unsigned char* base = stage_of(j);
          bool flag = false;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int n = lane + h * arch::sm90::wave_size;
            if (k0 + n < it.k_end)
              flag |= scorer_t::prepare_key(reinterpret_cast<const uint32_t*>(base)[tile_t::scale_word(n)], n,
                                            base + smem_t::prepared_offset);
          }
          const bool any = platform::any<arch::sm90::wave_size>(flag);
          if (lane == 0) *reinterpret_cast<uint32_t*>(base + smem_t::flags_offset) = any ? 1u : 0u;
          arch::barrier_arrive(ready + j % stages);
        }
        j = item_end;
      }
    }
    return;
  }

  // Consumer c takes the tiles j with j % consumers == c.
  arch::sm90::set_registers<config::consumer_registers, true>();
  // The shuffle tells the compiler what is true anyway, that c is the same in every lane, so it
  // keeps the scratch address and the wgmma descriptors in uniform registers.
  const int c = platform::shuffle_idx<arch::sm90::wave_size>(warpgroup - 1, 0);
  scorer_t scorer;
  void* scratch = smem + smem_t::scratch_offset + c * smem_t::scratch_stride(Rows);
  int64_t loaded_row = -1;
  uint32_t j = 0;
  for (int item = walk.begin; item < walk.end; ++item) {
    const plan_item it(plan, walk.template group_of<arch::sm90::wave_size>(plan, num_groups, item),
                       item, chunk);
    const uint32_t end = j + static_cast<uint32_t>(it.tiles(it.k_end));
    uint32_t mine = j + (static_cast<uint32_t>(c) + config::consumers - j % config::consumers) % config::consumers;
    const uint32_t first_tile = j;
    j = end;
    if (mine >= end) continue;
    // The item's rows (at most Rows) and the columns each writes.
    const row_limits<Rows> limits(it, a, map, it.first, it.rows);
    const int item_limit = limits.largest;
    if (item_limit > it.k_begin && it.first != loaded_row) {
      const int64_t qh = it.first * a.num_heads;
      scorer.load(a.q_values + qh * (shape::head_dim / 2), a.q_scales + qh * shape::blocks, a.weights + qh,
                  a.num_heads, it.rows, scratch);
      loaded_row = it.first;
    }
    float* out = a.out + (it.first - a.row_begin) * a.ld;
    // The item's tiles, with its row count a constant: what a row needs (its bias operand, scale
    // and limit) then stays in registers from tile to tile, where a run-time row loop remade it
    // every tile (bench_logits on the H200: decode 64 x 32K 101 -> 96 us, next_n 2 151 -> 146 us,
    // prefill 32K 18.3 -> 17.9 ms).
    const auto score_tiles = [&](auto rows) {
      for (; mine < end; mine += config::consumers) {
        const int k0 = it.k_begin + static_cast<int>(mine - first_tile) * keys;
        arch::barrier_wait(ready + mine % stages, parity(mine));
        const unsigned char* base = stage_of(mine);
        if (item_limit > k0) {
          const bool flagged =
              *reinterpret_cast<const uint32_t*>(base + smem_t::flags_offset) != 0u;
          const arch::key_tile tile{reinterpret_cast<const uint32_t*>(base), nullptr,
                                    base + smem_t::prepared_offset, flagged};
          scorer.template score<tile_t, decltype(rows)::value>(tile, 0, [&](int r, int n, float v) {
            if (k0 + n < limits[r]) out[r * a.ld + k0 + n] = v;
          });
        }
        arch::barrier_arrive(empty + mine % stages);  // this thread's reads of the stage are done
      }
    };
    // A request's last group may hold fewer rows than the others.
    static_assert(Rows <= 3, "one call a row count");
    if (Rows == 1 || it.rows == 1) {
      score_tiles(std::integral_constant<int, 1>{});
    } else if (Rows == 2 || it.rows == 2) {
      score_tiles(std::integral_constant<int, std::min(Rows, 2)>{});
    } else {
      score_tiles(std::integral_constant<int, Rows>{});
    }
  }
#endif
}

/// Plans (overlapped with the kernel before it where `plan_overlaps_prior`: launch_plan) and
/// launches the build for the launch's groups of `group` rows (pipelined_logits_build), one block
/// an SM.
template <class Layout, int Heads, int Rows, class KeyMap>
platform::error_t launch_pipelined_logits_rows(const paged_logits_args& a, const KeyMap& map,
                                               void* workspace, bool plan_overlaps_prior,
                                               platform::stream_t stream) {
  using config = pipelined_logits_build<Heads, Rows>;
  using smem_t = pipelined_logits_smem<Heads, config::consumers, config::stages>;
  auto* kernel = &pipelined_logits_kernel<Layout, Heads, Rows, KeyMap>;
  const int smem = smem_t::bytes(Rows);
  platform::kernel_limits limits;
  platform::error_t e = platform::prepare_kernel(kernel, smem, &limits);
  if (e != platform::success) return e;
  const int sms = limits.multiprocessors;
  plan_view plan(workspace, a.row_end - a.row_begin, a.num_requests);
  // Dense: items for four times the consumers, so that a block's run of items ends within a few
  // tiles of the others'. Candidate: one a consumer; each item costs every consumer a few
  // dependent loads (its row's candidate count, then its last id), which small items repeat
  // (four a consumer: 65.0 us against 62.5 for the 16 x 128K candidate call on the H200).
  e = launch_plan(a, map, Rows, (KeyMap::candidate ? 1 : 4) * config::consumers * sms, plan,
                  plan_overlaps_prior, stream);
  if (e != platform::success) return e;
  // Each request's rows in one group (decode): every page is read once, and L2 had better keep
  // the scores for the top-k than the pages (bench_indexer on the H200: 1-3 us less end to end,
  // 148 -> 145.5 us at 256 x 8K). Prefill groups read each page again: default eviction.
  const int64_t rows = a.row_end - a.row_begin;
  const bool pages_read_once =
      a.num_requests > 0 && (rows + a.num_requests - 1) / a.num_requests <= Rows;
  return platform::launch(
      kernel, {dim3(sms), config::threads, static_cast<size_t>(smem), 1, /*chained=*/true}, stream,
      a, map, plan, pages_read_once);
}

/// The launch for groups of `group` rows: 1 (candidate keys), up to tile_scorer::max_rows (dense).
template <class Layout, int Heads, class KeyMap>
platform::error_t launch_pipelined_logits(const paged_logits_args& a, const KeyMap& map, int group,
                                          void* workspace, bool plan_overlaps_prior,
                                          platform::stream_t stream) {
  constexpr int most = KeyMap::candidate ? 1 : arch::sm90::tile_scorer<Heads>::max_rows;
  const auto launch = [&](auto rows) {
    return launch_pipelined_logits_rows<Layout, Heads, decltype(rows)::value>(
        a, map, workspace, plan_overlaps_prior, stream);
  };
  return platform::with_constant<1, 2, 3>(
      [&](int rows) { return rows == group; },
      [&](auto rows) {
        if constexpr (decltype(rows)::value <= most) return launch(rows);
        else return platform::error_t{platform::invalid_value};
      },
      [] { return platform::error_t{platform::invalid_value}; });
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device::detail
