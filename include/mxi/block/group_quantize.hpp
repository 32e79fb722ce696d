// MXFP4 quantization of 32-element blocks by groups of 8 lanes, bit for bit what
// format::quantize_block gives: each lane takes 4 consecutive elements (one 16-byte fp32 or 8-byte
// bf16 load, so a wave reads its blocks' bytes coalesced), the block's largest magnitude and
// finiteness come from three shuffles, each lane encodes its 4 elements with the format's own
// exponent and rounding, and the group's first lane gathers the 16 packed bytes. The K-cache
// writer and the Q quantizer are built on it.
//
// Contract: every lane of the wave calls it (groups are aligned: lanes 8g .. 8g+7 hold one block,
// lane 8g + i elements 4i .. 4i+3); a lane with nothing to quantize passes zeros and ignores the
// result. Works for any wave size (32, 64).
#pragma once

#include <cstdint>

#include "mxi/format/mxfp4.hpp"
#include "mxi/platform/intrinsics.hpp"

namespace mxi::block {

inline constexpr int quantize_group_lanes = format::block_elems / 4;  ///< 8 lanes a block

/// Rows of `row_elems` elements that a block of `threads` quantizes at once (quantize_rows:
/// `row_elems / 4` lanes a row); times Rows, the rows a block takes.
MXI_HOST_DEVICE constexpr int quantize_block_rows(int threads, int row_elems) {
  return threads / (row_elems / 4);
}

/// A row of fp32 or bf16 values (bf16 widens exactly).
struct float_source {
  const void* data;
  bool bf16;
#if MXI_GPU_COMPILER
  /// Elements [i, i + 4), i a multiple of 4: one vector load where the row is aligned for it.
  MXI_DEVICE void load4(int64_t i, float (&x)[4]) const {
    if (!bf16) {
      const float* f = static_cast<const float*>(data) + i;
      if (reinterpret_cast<uintptr_t>(f) % 16 == 0) {
        const float4 v = *reinterpret_cast<const float4*>(f);
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
      } else {
        for (int j = 0; j < 4; ++j) x[j] = f[j];
      }
      return;
    }
    const uint16_t* h = static_cast<const uint16_t*>(data) + i;
    uint32_t lo, hi;
    if (reinterpret_cast<uintptr_t>(h) % 8 == 0) {
      const uint2 v = *reinterpret_cast<const uint2*>(h);
      lo = v.x, hi = v.y;
    } else {
      lo = h[0] | (static_cast<uint32_t>(h[1]) << 16);
      hi = h[2] | (static_cast<uint32_t>(h[3]) << 16);
    }
    x[0] = bit_cast<float>(lo << 16), x[1] = bit_cast<float>(lo & 0xFFFF0000u);
    x[2] = bit_cast<float>(hi << 16), x[3] = bit_cast<float>(hi & 0xFFFF0000u);
  }
#endif
};

/// One quantized block, complete on the group's first lane.
struct quantized_block {
  uint4 packed;   ///< the 16 packed bytes, element 2i in the low nibble of byte i
  uint8_t scale;  ///< E8M0
};

#if MXI_GPU_COMPILER

/// Quantizes the block held by this lane's group (see the file comment).
MXI_DEVICE quantized_block group_quantize(const float (&x)[4], format::scale_rule rule) {
  constexpr int g = quantize_group_lanes;
  // Largest magnitude as bits: for non-negative floats the integer order is the float order, and
  // every NaN lies above infinity, so one integer max finds amax and whether the block is finite.
  uint32_t amax = 0;
  for (int j = 0; j < 4; ++j) amax = max(amax, bit_cast<uint32_t>(x[j]) & 0x7FFFFFFFu);
  for (int m = 1; m < g; m *= 2) amax = max(amax, platform::group_shuffle_xor<g>(amax, m));
  const bool finite = amax < 0x7F800000u;
  const int e = finite ? format::block_exponent_from_bits(amax, rule) : 0;
  uint32_t half = 0;  // this lane's 2 packed bytes
  if (finite) {
    const float inverse_scale = format::decode_e8m0(static_cast<uint8_t>(127 - e));
    for (int j = 0; j < 4; ++j)
      half |= static_cast<uint32_t>(format::encode_e2m1_by_rounding(x[j] * inverse_scale))
              << (4 * j);
  }
  // Lanes 2w and 2w + 1 make word w; the first lane gathers the four words.
  const uint32_t word = half | (platform::group_shuffle_xor<g>(half, 1) << 16);
  quantized_block b;
  b.packed.x = word;
  b.packed.y = platform::group_shuffle_idx<g>(word, 2);
  b.packed.z = platform::group_shuffle_idx<g>(word, 4);
  b.packed.w = platform::group_shuffle_idx<g>(word, 6);
  b.scale = finite ? static_cast<uint8_t>(e + 127) : format::nan_scale;
  return b;
}

/// Quantizes rows of `row_elems` elements (a multiple of 32, at most 4 * Threads), `row_elems / 4`
/// lanes a row, Rows rows a thread at a stride of the block's row count. Each thread issues its
/// Rows loads and asks `dest.locate(row)` where each row goes (the writer loads its slot there)
/// before it quantizes, so that all those loads are in flight together; then it calls
/// `dest.store(place, block, quantized_block)` on each block's first lane. Every thread of the
/// block calls it.
template <int Threads, int Rows, class Destination>
MXI_DEVICE void quantize_rows(const float_source& src, int64_t num_rows, int row_elems,
                              int64_t first_row, format::scale_rule rule, const Destination& dest) {
  const int row_lanes = row_elems / 4;
  const int block_rows = quantize_block_rows(Threads, row_elems);
  const int slot = static_cast<int>(threadIdx.x) / row_lanes,
            lane = static_cast<int>(threadIdx.x) % row_lanes;
  float x[Rows][4];
  bool live[Rows];
  decltype(dest.locate(int64_t{0})) place[Rows];
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    const int64_t row = first_row + static_cast<int64_t>(r) * block_rows + slot;
    live[r] = slot < block_rows && row < num_rows;
    x[r][0] = x[r][1] = x[r][2] = x[r][3] = 0.0f;
    if (live[r]) {
      src.load4(row * row_elems + 4 * lane, x[r]);
      place[r] = dest.locate(row);
    }
  }
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    const quantized_block q = group_quantize(x[r], rule);
    if (live[r] && lane % quantize_group_lanes == 0)
      dest.store(place[r], lane / quantize_group_lanes, q);
  }
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::block
