// K-cache writer and its sibling the Q quantizer share one job: quantize rows of fp32 or bf16 into
// MXFP4 blocks, bit for bit what the host's format::quantize_block gives (block::quantize_blocks:
// the writer a lane a block, the Q quantizer 4, coalesced loads). Writer: k [N][D], row i written
// at slot_mapping[i] (page * BS + offset) in the cache's layout; -1 skips the row, any other slot
// outside [0, NB * BS) is skipped and raises device_error_slot_mapping.
#pragma once

#include <cstdint>
#include <type_traits>

#include "mxi/block/group_quantize.hpp"
#include "mxi/device/tuning.hpp"
#include "mxi/format/mxfp4.hpp"
#include "mxi/layout/cache_layout.hpp"
#include "mxi/platform/divide.hpp"
#include "mxi/platform/intrinsics.hpp"
#include "mxi/platform/runtime.hpp"
#include "mxi/types.hpp"

namespace mxi::device {

struct k_cache_write_problem {
  block::float_source k;  ///< [N][D]
  int64_t num_tokens = 0;
  int head_dim = 128;
  const int64_t* slot_mapping = nullptr;
  uint8_t* cache = nullptr;
  int64_t num_pages = 0;
  int64_t page_stride = 0;
  int block_size = 64;
  format::scale_rule rule = format::scale_rule::ceil;
};

#if MXI_GPU_COMPILER

namespace detail {

/// Calls f(std::integral_constant<arch::target, T>{}) with the current device's target, whose
/// quantize_config_for(T) the kernels are built with, and returns what f returns.
template <class F>
platform::error_t with_quantize_target(F&& f) {
  arch::target t = arch::target::generic;
  const platform::error_t e = current_target(&t);
  if (e != platform::success) return e;
  return with_target(t, f);
}

/// Thread blocks of `threads` that cover `num_blocks` quantized blocks, `Lanes` lanes a block and
/// `blocks_a_group` blocks a group.
template <int Lanes>
unsigned quantize_grid(int64_t num_blocks, int threads, int blocks_a_group) {
  const int64_t per = static_cast<int64_t>(threads / Lanes) * blocks_a_group;
  return static_cast<unsigned>((num_blocks + per - 1) / per);
}

/// Runs block::quantize_blocks over a grid from quantize_grid: thread block x takes Blocks runs of
/// Threads / Lanes consecutive blocks, each run one coalesced sweep of the source.
template <int Threads, int Lanes, int Blocks, class Destination>
MXI_DEVICE void quantize_grid_blocks(const block::float_source& src, int64_t num_blocks,
                                     format::scale_rule rule, const Destination& dest) {
  constexpr int groups = Threads / Lanes;
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t first = static_cast<int64_t>(blockIdx.x) * groups * Blocks + tid / Lanes;
  block::quantize_blocks<Lanes, Blocks>(src, num_blocks, first, groups, tid % Lanes, rule, dest);
}

/// Where the writer puts block b (row b / chunks, its chunk b % chunks): the cache slot
/// slot_mapping[row], Lanes lanes a block (quantize_config::write_lanes). The divisions by the
/// chunk count and the block size use dividers the host made (platform/divide.hpp): a run-time
/// 32-bit division is about twenty instructions.
template <class Layout, int Lanes>
struct cache_slots_destination {
  k_cache_write_problem p;  // by value: a reference would take the kernel parameter's address
  uint32_t* error_word;
  platform::divider chunks;      ///< D / 32
  platform::divider block_size;  ///< BS

  struct place {
    int64_t slot;
    int chunk;
  };

  MXI_DEVICE place locate(int64_t b) const {
    if (b > UINT32_MAX) {  // past 2^37 elements: no GPU holds such a batch, but stay exact
      const int64_t row = b / chunks.divisor;
      return {p.slot_mapping[row], static_cast<int>(b - row * chunks.divisor)};
    }
    const uint32_t row = chunks.quotient(static_cast<uint32_t>(b));
    return {p.slot_mapping[row], static_cast<int>(chunks.remainder(static_cast<uint32_t>(b), row))};
  }
  MXI_DEVICE void store(const place& at, int lane, const block::quantized_lane<Lanes>& q) const {
    if (at.slot == -1) return;
    if (at.slot < 0 || at.slot >= p.num_pages * p.block_size) {
      if (at.chunk == 0 && lane == 0 && error_word) atomicOr(error_word, device_error_slot_mapping);
      return;
    }
    int64_t page;
    int offset;
    if (at.slot <= UINT32_MAX) {
      const uint32_t s = static_cast<uint32_t>(at.slot), q32 = block_size.quotient(s);
      page = q32;
      offset = static_cast<int>(block_size.remainder(s, q32));
    } else {
      page = at.slot / p.block_size;
      offset = static_cast<int>(at.slot % p.block_size);
    }
    const layout::page_shape shape{p.block_size, p.head_dim};
    uint8_t* base = p.cache + layout::page_offset(page, p.page_stride);
    block::store_packed(base + Layout::value_offset(shape, offset, at.chunk) +
                            lane * block::quantize_group<Lanes>::bytes,
                        q);
    // A token's scale bytes are part of a sector that other tokens' writes complete (in any
    // order of slots): kept in the L2 until they do.
    if (lane == 0)
      platform::store_byte_kept_in_l2(base + Layout::scale_offset(shape, offset, at.chunk),
                                      q.scale);
  }
};

template <int Threads, int Lanes, int Blocks, class Layout>
__global__ __launch_bounds__(Threads) void write_k_cache_kernel(
    cache_slots_destination<Layout, Lanes> dest) {
  const k_cache_write_problem& p = dest.p;
  quantize_grid_blocks<Threads, Lanes, Blocks>(
      p.k, p.num_tokens * (p.head_dim / format::block_elems), p.rule, dest);
}

}  // namespace detail

/// Writes the rows; `error_word` may be null.
inline platform::error_t launch_k_cache_write(const k_cache_write_problem& p, cache_layout kind,
                                              uint32_t* error_word, platform::stream_t stream) {
  if (p.num_tokens == 0) return platform::success;
  const int64_t blocks = p.num_tokens * (p.head_dim / format::block_elems);
  return detail::with_quantize_target([&](auto target) {
    constexpr arch::target t = decltype(target)::value;
    constexpr int threads = quantize_config_for(t).threads;
    constexpr int lanes = quantize_config_for(t).write_lanes;
    constexpr int group = quantize_config_for(t).write_blocks;
    layout::dispatch(kind, [&](auto l) {
      using dest_t = detail::cache_slots_destination<decltype(l), lanes>;
      const dest_t dest{p, error_word,
                        platform::divider(static_cast<uint32_t>(p.head_dim / format::block_elems)),
                        platform::divider(static_cast<uint32_t>(p.block_size))};
      detail::write_k_cache_kernel<threads, lanes, group, decltype(l)>
          <<<detail::quantize_grid<lanes>(blocks, threads, group), threads, 0, stream>>>(dest);
    });
    return platform::last_error();
  });
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device
