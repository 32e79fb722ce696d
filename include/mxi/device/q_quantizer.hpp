// Q quantizer: q [T][H][D] (fp32 or bf16) into q_values [T][H][D/2] and q_scales [T][H][D/32],
// 4 lanes a 32-element block, a block a group (block::quantize_blocks: bit-exact with the CPU).
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

/// Where the quantizer puts block b: its packed bytes and scale in order, Lanes lanes a block
/// (quantize_config::q_lanes).
template <int Lanes>
struct q_blocks_destination {
  q_quantize_problem p;  // by value (see cache_slots_destination)

  MXI_DEVICE int64_t locate(int64_t b) const { return b; }
  MXI_DEVICE void store(int64_t b, int lane, const block::quantized_lane<Lanes>& q) const {
    block::store_packed(
        p.values + b * format::block_bytes + lane * block::quantize_group<Lanes>::bytes, q);
    if (lane == 0) p.scales[b] = q.scale;
  }
};

template <int Threads, int Lanes, int Blocks>
__global__ __launch_bounds__(Threads) void quantize_q_kernel(q_quantize_problem p) {
  quantize_grid_blocks<Threads, Lanes, Blocks>(p.q,
                                               p.num_rows * (p.head_dim / format::block_elems),
                                               p.rule, q_blocks_destination<Lanes>{p});
}

}  // namespace detail

inline platform::error_t launch_quantize_q(const q_quantize_problem& p, platform::stream_t stream) {
  if (p.num_rows == 0) return platform::success;
  return detail::with_quantize_target([&](auto target) {
    constexpr arch::target t = decltype(target)::value;
    constexpr int threads = quantize_config_for(t).threads;
    constexpr int lanes = quantize_config_for(t).q_lanes;
    constexpr int group = quantize_config_for(t).q_blocks;
    detail::quantize_q_kernel<threads, lanes, group>
        <<<detail::quantize_grid<lanes>(p.num_rows * (p.head_dim / format::block_elems), threads,
                                        group),
           threads, 0, stream>>>(p);
    return platform::last_error();
  });
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device
