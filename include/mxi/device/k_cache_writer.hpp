// K-cache writer and its sibling the Q quantizer share one job: quantize rows of fp32 or bf16 into
// MXFP4 blocks, bit for bit what the host's format::quantize_block gives (block/group_quantize.hpp:
// 8 lanes a block, coalesced loads). Writer: k [N][D], row i written at slot_mapping[i]
// (page * BS + offset) in the cache's layout; -1 skips the row, any other slot outside
// [0, NB * BS) is skipped and raises device_error_slot_mapping.
#pragma once

#include <cstdint>
#include <type_traits>

#include "mxi/block/group_quantize.hpp"
#include "mxi/device/tuning.hpp"
#include "mxi/format/mxfp4.hpp"
#include "mxi/layout/cache_layout.hpp"
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

/// Calls f(std::integral_constant<int, Threads>{}) with the current device's quantizer block
/// (quantize_tuned) and returns what f returns.
template <class F>
platform::error_t with_quantize_threads(F&& f) {
  arch::target t = arch::target::generic;
  const platform::error_t e = current_target(&t);
  if (e != platform::success) return e;
  return with_target(t, [&](auto target) {
    return f(std::integral_constant<int, quantize_tuned(decltype(target)::value).threads>{});
  });
}

/// Blocks of `threads` that cover `lanes` lanes.
inline unsigned quantize_blocks(int64_t lanes, int threads) {
  return static_cast<unsigned>((lanes + threads - 1) / threads);
}

template <int Threads, class Layout>
__global__ __launch_bounds__(Threads) void write_k_cache_kernel(k_cache_write_problem p,
                                                                uint32_t* error_word) {
  const int chunks = p.head_dim / format::block_elems;
  const int64_t lane = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t b = lane / block::quantize_group_lanes;  // (token, chunk) block of k
  const int part = static_cast<int>(lane % block::quantize_group_lanes);
  const bool live = b < p.num_tokens * chunks;
  float x[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (live) p.k.load4(b * format::block_elems + 4 * part, x);
  const block::quantized_block q = block::group_quantize(x, p.rule);
  if (!live || part != 0) return;
  const int64_t token = b / chunks;
  const int chunk = static_cast<int>(b % chunks);
  const int64_t slot = p.slot_mapping[token];
  if (slot == -1) return;
  if (slot < 0 || slot >= p.num_pages * p.block_size) {
    if (chunk == 0 && error_word) atomicOr(error_word, device_error_slot_mapping);
    return;
  }
  const layout::page_shape shape{p.block_size, p.head_dim};
  uint8_t* page = p.cache + layout::page_offset(slot / p.block_size, p.page_stride);
  const int offset = static_cast<int>(slot % p.block_size);
  *reinterpret_cast<uint4*>(page + Layout::value_offset(shape, offset, chunk)) = q.packed;
  page[Layout::scale_offset(shape, offset, chunk)] = q.scale;
}

}  // namespace detail

/// Writes the rows; `error_word` may be null.
inline platform::error_t launch_k_cache_write(const k_cache_write_problem& p, cache_layout kind,
                                              uint32_t* error_word, platform::stream_t stream) {
  const int64_t lanes = p.num_tokens * (p.head_dim / format::block_elems) * block::quantize_group_lanes;
  if (lanes == 0) return platform::success;
  return detail::with_quantize_threads([&](auto threads) {
    constexpr int n = decltype(threads)::value;
    layout::dispatch(kind, [&](auto l) {
      detail::write_k_cache_kernel<n, decltype(l)>
          <<<detail::quantize_blocks(lanes, n), n, 0, stream>>>(p, error_word);
    });
    return platform::last_error();
  });
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device
