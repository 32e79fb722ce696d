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
// chains. On sm90 a bf16 source is quantized as it lies, two elements a word, with packed bf16x2
// arithmetic (format/bf16_pairs.hpp): about half the float path's instructions an element.
//
// Contract: every lane of the wave calls group_quantize (groups are aligned: lanes Lanes*g ..
// Lanes*g + Lanes - 1 hold one block, lane i of the group its elements [i n, (i + 1) n),
// n = 32 / Lanes); a lane with nothing to quantize passes zeros and ignores the result. Works for
// any wave size (32, 64).
#pragma once

#include <cstdint>
#include <type_traits>

#include "mxi/format/bf16.hpp"
#include "mxi/format/bf16_pairs.hpp"
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
    uint32_t w[N / 2];
    load(i, w);
#pragma unroll
    for (int j = 0; j < N / 2; ++j) {
      x[2 * j] = format::widen_bf16_half(w[j], 0);
      x[2 * j + 1] = format::widen_bf16_half(w[j], 1);
    }
  }

  /// bf16 elements [i, i + 2M) as M words of two (element i + 2j in the low half of word j).
  template <int M>
  MXI_DEVICE void load(int64_t i, uint32_t (&w)[M]) const {
    static_assert(M % 4 == 0, "whole 16-byte vectors");
    const uint16_t* h = static_cast<const uint16_t*>(data) + i;
    if (vectors) {
#pragma unroll
      for (int v = 0; v < M / 4; ++v) {
        const uint4 q = reinterpret_cast<const uint4*>(h)[v];
        w[4 * v] = q.x, w[4 * v + 1] = q.y, w[4 * v + 2] = q.z, w[4 * v + 3] = q.w;
      }
    } else {
#pragma unroll
      for (int j = 0; j < M; ++j) w[j] = h[2 * j] | (static_cast<uint32_t>(h[2 * j + 1]) << 16);
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

namespace detail {

/// The block's largest magnitude as fp32 bits (NaN above infinity above every finite value),
/// from the group's lanes, each holding its own (integer max: the float order for magnitudes).
template <int Lanes>
MXI_DEVICE uint32_t group_amax_bits(uint32_t amax) {
  if constexpr (Lanes > 1) {
    for (int m = 1; m < Lanes; m *= 2)
      amax = max(amax, platform::group_shuffle_xor<Lanes>(amax, m));
  }
  return amax;
}

template <int Lanes>
MXI_DEVICE uint32_t lane_amax_bits(const float (&x)[quantize_group<Lanes>::elems]) {
  uint32_t amax = 0;
#pragma unroll
  for (int j = 0; j < quantize_group<Lanes>::elems; ++j)
    amax = max(amax, bit_cast<uint32_t>(x[j]) & 0x7FFFFFFFu);
  return amax;
}

template <int Lanes>
MXI_DEVICE uint32_t lane_amax_bits(const uint32_t (&w)[quantize_group<Lanes>::elems / 2]) {
  uint32_t pairs = 0;
#pragma unroll
  for (int j = 0; j < quantize_group<Lanes>::elems / 2; ++j)
    pairs = format::max_u16x2(pairs, w[j] & 0x7FFF7FFFu);
  return max(pairs << 16, pairs & 0xFFFF0000u);  // bf16 bits are the top half of fp32's
}

template <int Lanes>
MXI_DEVICE void encode_lane(const float (&x)[quantize_group<Lanes>::elems], int e,
                            quantized_lane<Lanes>& q) {
  const float inverse_scale = format::decode_e8m0(static_cast<uint8_t>(127 - e));
#pragma unroll
  for (int j = 0; j < quantize_group<Lanes>::elems; ++j)
    q.packed[j / 8] |= static_cast<uint32_t>(format::encode_e2m1_by_rounding(x[j] * inverse_scale))
                       << (4 * (j % 8));
}

template <int Lanes>
MXI_DEVICE void encode_lane(const uint32_t (&w)[quantize_group<Lanes>::elems / 2], int e,
                            quantized_lane<Lanes>& q) {
  // 2^-e (a normal power of two) as bf16, in both halves.
  const uint32_t inverse_scale = (static_cast<uint32_t>(127 - e) << 7) * 0x00010001u;
#pragma unroll
  for (int k = 0; k < quantize_group<Lanes>::words; ++k) {
    uint32_t c[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) c[j] = format::encode_e2m1_pair(w[4 * k + j], inverse_scale);
    q.packed[k] = format::pack_code_pairs(c[0], c[1], c[2], c[3]);
  }
}

}  // namespace detail

/// Quantizes the block held by this lane's group (see the file comment): `x` is the lane's
/// elements as floats, or as bf16 pairs (uint32_t; quantize_blocks takes them where
/// format::bf16_pairs_native, the portable stand-ins being slower than the float path).
template <int Lanes, class Lane>
MXI_DEVICE quantized_lane<Lanes> group_quantize(const Lane& x, format::scale_rule rule) {
  // Largest magnitude as bits: for non-negative floats the integer order is the float order, and
  // every NaN lies above infinity, so one integer max finds amax and whether the block is finite.
  const uint32_t amax = detail::group_amax_bits<Lanes>(detail::lane_amax_bits<Lanes>(x));
  quantized_lane<Lanes> q{};
  q.scale = format::nan_scale;
  if (amax >= 0x7F800000u) return q;  // a NaN or an infinity: the group agrees, no shuffle follows
  const int e = format::block_exponent_from_bits(amax, rule);
  detail::encode_lane<Lanes>(x, e, q);
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
namespace detail {

/// quantize_blocks with each lane's share held as Element: float, or uint32_t (bf16 pairs).
template <int Lanes, int Blocks, class Element, class Destination>
MXI_DEVICE void quantize_runs(const float_source& src, int64_t num_blocks, int64_t first,
                              int64_t stride, int lane, format::scale_rule rule,
                              const Destination& dest) {
  using group = quantize_group<Lanes>;
  constexpr int n = std::is_same_v<Element, float> ? group::elems : group::elems / 2;
  Element x[Blocks][n];
  decltype(dest.locate(int64_t{0})) place[Blocks];
#pragma unroll
  for (int r = 0; r < Blocks; ++r) {
    const int64_t b = first + r * stride;
#pragma unroll
    for (int j = 0; j < n; ++j) x[r][j] = Element{};
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

}  // namespace detail

template <int Lanes, int Blocks, class Destination>
MXI_DEVICE void quantize_blocks(const float_source& src, int64_t num_blocks, int64_t first,
                                int64_t stride, int lane, format::scale_rule rule,
                                const Destination& dest) {
  if constexpr (format::bf16_pairs_native) {
    if (src.bf16)
      return detail::quantize_runs<Lanes, Blocks, uint32_t>(src, num_blocks, first, stride, lane,
                                                            rule, dest);
  }
  detail::quantize_runs<Lanes, Blocks, float>(src, num_blocks, first, stride, lane, rule, dest);
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::block
