// K-cache writer and its sibling the Q quantizer share one job: quantize rows of fp32 or bf16 into
// MXFP4 blocks with format::quantize_block (the host code's own function, so results are
// bit-exact with the CPU backends). Writer: one thread per (token, block) of k [N][D], written at
// slot_mapping[i] (page * BS + offset) in the cache's layout; -1 skips the row, any other slot
// outside [0, NB * BS) is skipped and raises device_error_slot_mapping.
#pragma once

#include <cstdint>

#include "mxi/format/mxfp4.hpp"
#include "mxi/layout/cache_layout.hpp"
#include "mxi/platform/runtime.hpp"
#include "mxi/types.hpp"

namespace mxi::device {

/// A row of fp32 or bf16 values as fp32 (bf16 widens exactly).
struct float_row {
  const void* data;
  bool bf16;
  MXI_HOST_DEVICE float operator()(int64_t i) const {
    if (!bf16) return static_cast<const float*>(data)[i];
    const uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(data)[i]) << 16;
    return bit_cast<float>(bits);
  }
};

struct k_cache_write_problem {
  float_row k;  ///< [N][D]
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

template <class Layout>
__global__ void write_k_cache_kernel(k_cache_write_problem p, uint32_t* error_word) {
  const int chunks = p.head_dim / format::block_elems;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p.num_tokens * chunks) return;
  const int64_t token = i / chunks;
  const int chunk = static_cast<int>(i % chunks);
  const int64_t slot = p.slot_mapping[token];
  if (slot == -1) return;
  if (slot < 0 || slot >= p.num_pages * p.block_size) {
    if (chunk == 0 && error_word) atomicOr(error_word, device_error_slot_mapping);
    return;
  }
  const layout::page_shape shape{p.block_size, p.head_dim};
  uint8_t* page = p.cache + layout::page_offset(slot / p.block_size, p.page_stride);
  const int offset = static_cast<int>(slot % p.block_size);
  const int64_t base = token * p.head_dim + chunk * format::block_elems;
  alignas(16) uint8_t packed[format::block_bytes];
  const uint8_t scale =
      format::quantize_block([&](int e) { return p.k(base + e); }, packed, p.rule);
  *reinterpret_cast<uint4*>(page + Layout::value_offset(shape, offset, chunk)) =
      *reinterpret_cast<const uint4*>(packed);
  page[Layout::scale_offset(shape, offset, chunk)] = scale;
}

}  // namespace detail

/// Writes the rows; `error_word` may be null.
inline platform::error_t launch_k_cache_write(const k_cache_write_problem& p, cache_layout kind,
                                              uint32_t* error_word, platform::stream_t stream) {
  const int64_t threads_total = p.num_tokens * (p.head_dim / format::block_elems);
  if (threads_total == 0) return platform::success;
  constexpr int threads = 256;
  const auto blocks = static_cast<unsigned>((threads_total + threads - 1) / threads);
  layout::dispatch(kind, [&](auto l) {
    detail::write_k_cache_kernel<decltype(l)><<<blocks, threads, 0, stream>>>(p, error_word);
  });
  return platform::last_error();
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device
