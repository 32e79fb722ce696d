// Q quantizer: q [T][H][D] (fp32 or bf16) into q_values [T][H][D/2] and q_scales [T][H][D/32],
// one thread per 32-element block, with format::quantize_block (bit-exact with the CPU).
#pragma once

#include <cstdint>

#include "mxi/device/k_cache_writer.hpp"
#include "mxi/format/mxfp4.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::device {

struct q_quantize_problem {
  float_row q;
  int64_t num_rows = 0;  ///< T * H
  int head_dim = 128;
  uint8_t* values = nullptr;
  uint8_t* scales = nullptr;
  format::scale_rule rule = format::scale_rule::ceil;
};

#if MXI_GPU_COMPILER

namespace detail {

__global__ void quantize_q_kernel(q_quantize_problem p) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t blocks = p.num_rows * (p.head_dim / format::block_elems);
  if (i >= blocks) return;
  const int64_t base = i * format::block_elems;
  alignas(16) uint8_t packed[format::block_bytes];
  p.scales[i] = format::quantize_block([&](int e) { return p.q(base + e); }, packed, p.rule);
  *reinterpret_cast<uint4*>(p.values + i * format::block_bytes) =
      *reinterpret_cast<const uint4*>(packed);
}

}  // namespace detail

inline platform::error_t launch_quantize_q(const q_quantize_problem& p, platform::stream_t stream) {
  const int64_t blocks = p.num_rows * (p.head_dim / format::block_elems);
  if (blocks == 0) return platform::success;
  constexpr int threads = 256;
  detail::quantize_q_kernel<<<static_cast<unsigned>((blocks + threads - 1) / threads), threads, 0,
                              stream>>>(p);
  return platform::last_error();
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device
