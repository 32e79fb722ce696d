// MXFP4 quantization of 32-element blocks by groups of 1, 2 or 4 lanes, bit for bit what
// format::quantize_block gives: each lane of a group takes 32 / Lanes consecutive elements
// (16-byte loads: 8 bf16 or 4 fp32 elements each, so a wave reads its blocks' bytes whole), the
// block's largest magnitude and finiteness come from log2(Lanes) shuffles, and each lane encodes
// its elements into the 16 / Lanes packed bytes it then stores itself.
//
// Why whole blocks a lane: the K-cache writer is bound by issued instructions, not by bandwidth
// (Nsight Compute on the H200: 226 instructions a token with 8 lanes a block, issue slots 79%
// busy; 138 with 4). Everything but the per-element encode is paid once a lane (the loads'
// addresses, the scale, the destination's slot and addresses), so more elements a lane pay it
// less often. A small job (the Q quantizer's 16K blocks) wants the opposite: more lanes, shorter
// chains.
//
// Contract: every lane of the wave calls group_quantize (groups are aligned: lanes Lanes*g ..
// Lanes*g + Lanes - 1 hold one block, lane i of the group its elements [i n, (i + 1) n),
// n = 32 / Lanes); a lane with nothing to quantize passes zeros and ignores the result. Works for
// any wave size (32, 64).
#pragma once

#include <cstdint>

#include "mxi/format/mxfp4.hpp"
#include "mxi/platform/intrinsics.hpp"

namespace mxi::block {

/// A group of Lanes lanes quantizes one block: Lanes in {1, 2, 4}.
template <int Lanes>
struct quantize_group {
  static_assert(Lanes == 1 || Lanes == 2 || Lanes == 4, "1, 2 or 4 lanes a block");
  static constexpr int elems = format::block_elems / Lanes;  ///< a lane's elements
  static constexpr int bytes = format::block_bytes / Lanes;  ///< a lane's packed bytes
  static constexpr int words = bytes / 4;                    ///< the same as 32-bit words
};

/// A buffer of fp32 or bf16 values (bf16 widens exactly), read a multiple of 8 elements at a time.
struct float_source {
  const void* data = nullptr;
  bool bf16 = false;
  bool vectors = false;  ///< data is 16-byte aligned: a lane's 8 elements are 16-byte loads

  float_source() = default;
  MXI_HOST_DEVICE float_source(const void* d, bool is_bf16)
      : data(d), bf16(is_bf16), vectors(reinterpret_cast<uintptr_t>(d) % 16 == 0) {}

#if MXI_GPU_COMPILER
  /// Elements [i, i + N), i and N multiples of 8: 16-byte loads where the buffer is aligned for
  /// them (the same branch in every lane), else element loads.
  template <int N>
  MXI_DEVICE void load(int64_t i, float (&x)[N]) const {
    static_assert(N % 8 == 0, "whole 16-byte vectors of bf16");
    if (!bf16) {
      const float* f = static_cast<const float*>(data) + i;
      if (vectors) {
#pragma unroll
        for (int v = 0; v < N / 4; ++v) {
          const float4 q = reinterpret_cast<const float4*>(f)[v];
          x[4 * v] = q.x, x[4 * v + 1] = q.y, x[4 * v + 2] = q.z, x[4 * v + 3] = q.w;
        }
      } else {
#pragma unroll
        for (int j = 0; j < N; ++j) x[j] = f[j];
      }
      return;
    }
    const uint16_t* h = static_cast<const uint16_t*>(data) + i;
    uint32_t w[N / 2];
    if (vectors) {
#pragma unroll
      for (int v = 0; v < N / 8; ++v) {
        const uint4 q = reinterpret_cast<const uint4*>(h)[v];
        w[4 * v] = q.x, w[4 * v + 1] = q.y, w[4 * v + 2] = q.z, w[4 * v + 3] = q.w;
      }
    } else {
#pragma unroll
      for (int j = 0; j < N / 2; ++j) w[j] = h[2 * j] | (static_cast<uint32_t>(h[2 * j + 1]) << 16);
    }
#pragma unroll
    for (int j = 0; j < N / 2; ++j) {
      x[2 * j] = bit_cast<float>(w[j] << 16);
      x[2 * j + 1] = bit_cast<float>(w[j] & 0xFFFF0000u);
    }
  }
#endif
};

/// One lane's share of a quantized block.
template <int Lanes>
struct quantized_lane {
  /// Bytes [16 i / Lanes, 16 (i + 1) / Lanes) of the block's 16 (lane i of the group), as words:
  /// element 2j in the low nibble of byte j.
  uint32_t packed[quantize_group<Lanes>::words];
  uint8_t scale;  ///< E8M0, the same in every lane of the group
};

#if MXI_GPU_COMPILER

/// Quantizes the block held by this lane's group (see the file comment).
template <int Lanes>
MXI_DEVICE quantized_lane<Lanes> group_quantize(const float (&x)[quantize_group<Lanes>::elems],
                                                format::scale_rule rule) {
  using group = quantize_group<Lanes>;
  // Largest magnitude as bits: for non-negative floats the integer order is the float order, and
  // every NaN lies above infinity, so one integer max finds amax and whether the block is finite.
  uint32_t amax = 0;
#pragma unroll
  for (int j = 0; j < group::elems; ++j) amax = max(amax, bit_cast<uint32_t>(x[j]) & 0x7FFFFFFFu);
  if constexpr (Lanes > 1) {
    for (int m = 1; m < Lanes; m *= 2)
      amax = max(amax, platform::group_shuffle_xor<Lanes>(amax, m));
  }
  quantized_lane<Lanes> q{};
  q.scale = format::nan_scale;
  if (amax >= 0x7F800000u) return q;  // a NaN or an infinity: the group agrees, no shuffle follows
  const int e = format::block_exponent_from_bits(amax, rule);
  const float inverse_scale = format::decode_e8m0(static_cast<uint8_t>(127 - e));
#pragma unroll
  for (int j = 0; j < group::elems; ++j)
    q.packed[j / 8] |= static_cast<uint32_t>(format::encode_e2m1_by_rounding(x[j] * inverse_scale))
                       << (4 * (j % 8));
  q.scale = static_cast<uint8_t>(e + 127);
  return q;
}

/// Stores a lane's packed words at `to` (aligned to their size): one 4-, 8- or 16-byte store.
template <int Lanes>
MXI_DEVICE void store_packed(uint8_t* to, const quantized_lane<Lanes>& q) {
  if constexpr (Lanes == 1) {
    *reinterpret_cast<uint4*>(to) = make_uint4(q.packed[0], q.packed[1], q.packed[2], q.packed[3]);
  } else if constexpr (Lanes == 2) {
    *reinterpret_cast<uint2*>(to) = make_uint2(q.packed[0], q.packed[1]);
  } else {
    *reinterpret_cast<uint32_t*>(to) = q.packed[0];
  }
}

/// Quantizes 32-element blocks [0, num_blocks) of `src` (block b: elements [32b, 32b + 32)),
/// a group of Lanes lanes a block, Blocks blocks a group: blocks first + r * stride, r < Blocks.
/// Each lane issues its Blocks loads and asks `dest.locate(block)` where each block goes (the
/// writer loads its slot there) before it quantizes, so that all those loads are in flight
/// together; then it calls `dest.store(place, lane, quantized_lane<Lanes>)` (lane: its index in
/// the group) for each block in range. Every lane of the wave calls it.
template <int Lanes, int Blocks, class Destination>
MXI_DEVICE void quantize_blocks(const float_source& src, int64_t num_blocks, int64_t first,
                                int64_t stride, int lane, format::scale_rule rule,
                                const Destination& dest) {
  using group = quantize_group<Lanes>;
  float x[Blocks][group::elems];
  decltype(dest.locate(int64_t{0})) place[Blocks];
#pragma unroll
  for (int r = 0; r < Blocks; ++r) {
    const int64_t b = first + r * stride;
#pragma unroll
    for (int j = 0; j < group::elems; ++j) x[r][j] = 0.0f;
    if (b < num_blocks) {
      src.load(b * format::block_elems + lane * group::elems, x[r]);
      place[r] = dest.locate(b);
    }
  }
#pragma unroll
  for (int r = 0; r < Blocks; ++r) {
    const quantized_lane<Lanes> q = group_quantize<Lanes>(x[r], rule);
    if (first + r * stride < num_blocks) dest.store(place[r], lane, q);
  }
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::block
