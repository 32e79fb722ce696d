// Q quantizer: q [T][H][D] (fp32 or bf16) into q_values [T][H][D/2] and q_scales [T][H][D/32],
// 8 lanes a 32-element block, a row a thread (block::quantize_rows: bit-exact with the CPU).
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

/// Where the quantizer puts row `row`: its blocks' bytes and scales in order.
struct q_rows_destination {
  q_quantize_problem p;  // by value (see cache_slots_destination)

  MXI_DEVICE int64_t locate(int64_t row) const { return row * (p.head_dim / format::block_elems); }
  MXI_DEVICE void store(int64_t first_block, int chunk, const block::quantized_block& q) const {
    p.scales[first_block + chunk] = q.scale;
    *reinterpret_cast<uint4*>(p.values + (first_block + chunk) * format::block_bytes) = q.packed;
  }
};

/// One row a thread: Q is small (a decode step's T x H rows), so the most threads win.
template <int Threads>
__global__ __launch_bounds__(Threads) void quantize_q_kernel(q_quantize_problem p) {
  block::quantize_rows<Threads, 1>(p.q, p.num_rows, p.head_dim,
                                   quantize_first_row<Threads, 1>(p.head_dim), p.rule,
                                   q_rows_destination{p});
}

}  // namespace detail

inline platform::error_t launch_quantize_q(const q_quantize_problem& p, platform::stream_t stream) {
  if (p.num_rows == 0) return platform::success;
  return detail::with_quantize_threads([&](auto threads) {
    constexpr int n = decltype(threads)::value;
    detail::quantize_q_kernel<n>
        <<<detail::quantize_blocks(p.num_rows, p.head_dim, n, 1), n, 0, stream>>>(p);
    return platform::last_error();
  });
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device
