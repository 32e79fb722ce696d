// Q quantizer: q [T][H][D] (fp32 or bf16) into q_values [T][H][D/2] and q_scales [T][H][D/32],
// 8 lanes a 32-element block, two rows a thread (block::quantize_rows: bit-exact with the CPU).
#pragma once

#include <cstdint>

#include "mxi/device/k_cache_writer.hpp"
#include "mxi/format/mxfp4.hpp"
#include "mxi/platform/runtime.hpp"

namespace mxi::device {

struct q_quantize_problem {
  block::float_source q;
  int64_t num_rows = 0;  ///< T * H
  int head_dim = 128;
  uint8_t* values = nullptr;
  uint8_t* scales = nullptr;
  format::scale_rule rule = format::scale_rule::ceil;
};

#if MXI_GPU_COMPILER

namespace detail {

template <int Threads>
__global__ __launch_bounds__(Threads) void quantize_q_kernel(q_quantize_problem p) {
  const int chunks = p.head_dim / format::block_elems;
  block::quantize_rows<Threads, quantize_rows_a_thread>(
      p.q, p.num_rows, p.head_dim, quantize_first_row<Threads>(p.head_dim), p.rule,
      [&](int64_t row, int chunk, const block::quantized_block& q) {
        const int64_t b = row * chunks + chunk;
        p.scales[b] = q.scale;
        *reinterpret_cast<uint4*>(p.values + b * format::block_bytes) = q.packed;
      });
}

}  // namespace detail

inline platform::error_t launch_quantize_q(const q_quantize_problem& p, platform::stream_t stream) {
  if (p.num_rows == 0) return platform::success;
  return detail::with_quantize_threads([&](auto threads) {
    constexpr int n = decltype(threads)::value;
    detail::quantize_q_kernel<n><<<detail::quantize_blocks(p.num_rows, p.head_dim, n), n, 0, stream>>>(p);
    return platform::last_error();
  });
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device
