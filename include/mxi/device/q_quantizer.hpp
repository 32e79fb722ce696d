// Q quantizer: q [T][H][D] (fp32 or bf16) into q_values [T][H][D/2] and q_scales [T][H][D/32],
// q_quantize_config's lanes a 32-element block and blocks a group (block::quantize_blocks:
// bit-exact with the CPU).
// Two launches run it: its own kernel (launch_quantize_q), and the indexer's row checks, whose
// kernel quantizes a call's float queries in thread blocks of its own (q_quantize_job, a side
// job of launch_row_info), so that they cost no launch.
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

/// Lanes a block and blocks a group (q_quantize_config: one value for every target, since the row
/// checks' side job runs the quantizer in a kernel not built per target).
inline constexpr int quantize_q_lanes = q_quantize_config{}.lanes;
inline constexpr int quantize_q_blocks = q_quantize_config{}.blocks;

/// Where the quantizer puts block b: its packed bytes and scale in order.
struct q_blocks_destination {
  q_quantize_problem p;  // by value (see cache_slots_destination)

  MXI_DEVICE int64_t locate(int64_t b) const { return b; }
  MXI_DEVICE void store(int64_t b, int lane,
                        const block::quantized_lane<quantize_q_lanes>& q) const {
    block::store_packed(
        p.values + b * format::block_bytes + lane * block::quantize_group<quantize_q_lanes>::bytes,
        q);
    if (lane == 0) p.scales[b] = q.scale;
  }
};

MXI_HOST_DEVICE int64_t q_blocks(const q_quantize_problem& p) {
  return p.num_rows * (p.head_dim / format::block_elems);
}

/// Thread block `index` of a grid of quantize_grid<quantize_q_lanes>(q_blocks(p), threads,
/// quantize_q_blocks) blocks of `threads` threads: each group of quantize_q_lanes lanes quantizes
/// quantize_q_blocks 32-element blocks.
MXI_DEVICE void quantize_q_share(const q_quantize_problem& p, int64_t index, int threads) {
  const int groups = threads / quantize_q_lanes;
  const int tid = static_cast<int>(threadIdx.x);
  block::quantize_blocks<quantize_q_lanes, quantize_q_blocks>(
      p.q, q_blocks(p), index * groups * quantize_q_blocks + tid / quantize_q_lanes, groups,
      tid % quantize_q_lanes, p.rule, q_blocks_destination{p});
}

template <int Threads>
__global__ __launch_bounds__(Threads) void quantize_q_kernel(q_quantize_problem p) {
  quantize_q_share(p, blockIdx.x, Threads);
}

}  // namespace detail

/// The quantizer as launch_row_info's side job (row_info.hpp): the row kernel's thread blocks past
/// its own run quantize_q_share, each of its threads a lane. Nothing to do when p.num_rows is 0.
struct q_quantize_job {
  q_quantize_problem p;

  /// Thread blocks of `threads` that cover the queries.
  int64_t blocks(int threads) const {
    if (p.num_rows == 0) return 0;
    return detail::quantize_grid<detail::quantize_q_lanes>(detail::q_blocks(p), threads,
                                                           detail::quantize_q_blocks);
  }
  /// Every thread of the block calls it, after the kernel waited for the one before it.
  MXI_DEVICE void run(int64_t index) const {
    detail::quantize_q_share(p, index, static_cast<int>(blockDim.x));
  }
};

inline platform::error_t launch_quantize_q(const q_quantize_problem& p, platform::stream_t stream) {
  if (p.num_rows == 0) return platform::success;
  return detail::with_quantize_target([&](auto target) {
    constexpr int threads = quantize_config_for(decltype(target)::value).threads;
    const unsigned grid = detail::quantize_grid<detail::quantize_q_lanes>(
        detail::q_blocks(p), threads, detail::quantize_q_blocks);
    detail::quantize_q_kernel<threads><<<grid, threads, 0, stream>>>(p);
    return platform::last_error();
  });
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::device
