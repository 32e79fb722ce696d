// sm90 (Hopper; also sm_89) logits tile: FP8 e4m3 tensor cores after an exact in-register
// E2M1 -> e4m3 expand. One mma.sync.m16n8k32 covers 16 heads x 8 keys x one MXFP4 block (K = 32),
// started from zero, so its sum of E2M1 products is exact (multiples of 1/4 below 2^11).
//
// Scales, exactly and cheaply: the query side is folded once per row. For each head h,
// M_h = max_b e[h][b]; Q' = q * 2^-(M_h - e[h][b]) is still exact in e4m3 when every head's
// exponent spread is <= 8, and relu(x * 2^(M_h-127)) = relu(x) * 2^(M_h-127) moves the rest into
// the head weight. So per (head, key, block) the epilogue is one FMA by the key's block scale:
//   logit[s] = sum_h w[h] 2^(M_h-127) relu(sum_b P'_b[h][s] * sk[s][b]).
// A row with a wider spread (or a NaN scale) takes the unfolded path (scale product per block),
// chosen once per row for the whole wave, so identical keys always give identical bits.
//
// Lane (g = lane/4, t = lane%4) feeds, per block, bytes 4t .. 4t+3 (elements 8t .. 8t+7) of head
// g / g+8 (A) and of key g (B); the mma's K order is permuted identically on both sides. Its
// accumulators are heads g, g+8 x keys 2t, 2t+1.
#pragma once

#include <cstdint>

#include "mxi/arch/fp4_to_fp8.hpp"
#include "mxi/arch/key_tile.hpp"
#include "mxi/config.hpp"
#include "mxi/platform/intrinsics.hpp"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define MXI_ARCH_SM90_MMA 1
#else
#define MXI_ARCH_SM90_MMA 0
#endif

namespace mxi::arch::sm90 {

inline constexpr int wave_size = 32;

#if MXI_GPU_COMPILER

/// d = A(16x32 e4m3, row) * B(32x8 e4m3, col), f32, from zero.
MXI_DEVICE void mma_e4m3(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if MXI_ARCH_SM90_MMA
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%10,%10,%10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
#else
  __trap();  // the host selects this path only where the instruction exists
#endif
}

MXI_DEVICE float relu(float x) { return x < 0.0f ? 0.0f : x; }  // keeps NaN

/// Scores one query row (Heads heads, D = 128) against staged key tiles, 8 keys a step.
template <int Heads>
struct row_scorer {
  static_assert(Heads % 16 == 0 && Heads >= 16 && Heads <= 128, "H: a multiple of 16, 16..128");
  static constexpr int step_keys = 8;
  static constexpr int m_tiles = Heads / 16;
  static constexpr int blocks = key_tile_shape::blocks;
  /// Shared memory a wave lends the scorer: the unfolded path's query scales [blocks][Heads].
  static constexpr int scratch_bytes = blocks * Heads * 4;

  uint32_t a[m_tiles][blocks][4];
  float weight[m_tiles][2];  // heads g, g+8 of each m-tile
  bool folded;
  const float* q_scale;  // unfolded path

  /// Loads the row: q_values [H][64], q_scales [H][4], weights [H] for the first `heads` <=
  /// Heads heads; the rest score zero.
  MXI_DEVICE void load(const uint8_t* q_values, const uint8_t* q_scales, const float* weights,
                       int heads, float* scratch) {
    const int lane = platform::lane_id<wave_size>();
    const int g = lane >> 2, t = lane & 3;
    uint32_t scale_word[m_tiles][2];
    bool fits = true;
#pragma unroll
    for (int m = 0; m < m_tiles; ++m) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int h = 16 * m + g + 8 * r;
        const uint32_t s =
            h < heads ? *reinterpret_cast<const uint32_t*>(q_scales + h * blocks) : 0x7F7F7F7Fu;
        scale_word[m][r] = s;
        unsigned hi = 0, lo = 255;
#pragma unroll
        for (int b = 0; b < blocks; ++b) {
          const unsigned e = (s >> (8 * b)) & 0xFFu;
          hi = e > hi ? e : hi;
          lo = e < lo ? e : lo;
        }
        fits = fits && hi != 255u && hi - lo <= 8u;
      }
    }
    folded = platform::all<wave_size>(fits);
#pragma unroll
    for (int m = 0; m < m_tiles; ++m) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int h = 16 * m + g + 8 * r;
        const uint32_t s = scale_word[m][r];
        unsigned hi = 0;
#pragma unroll
        for (int b = 0; b < blocks; ++b) {
          const unsigned e = (s >> (8 * b)) & 0xFFu;
          hi = e > hi ? e : hi;
        }
#pragma unroll
        for (int b = 0; b < blocks; ++b) {
          const unsigned e = (s >> (8 * b)) & 0xFFu;
          const uint32_t packed =
              h < heads ? *reinterpret_cast<const uint32_t*>(q_values + h * key_tile_shape::row_bytes +
                                                             16 * b + 4 * t)
                        : 0u;
          const fp8x8 x = folded ? expand_e2m1x8_shifted(packed, static_cast<int>(hi - e))
                                 : expand_e2m1x8(packed);
          a[m][b][r] = x.lo;
          a[m][b][2 + r] = x.hi;
          if (!folded && t == 0) scratch[b * Heads + h] = e8m0_to_float(e);
        }
        const float w = h < heads ? weights[h] : 0.0f;
        weight[m][r] = folded ? w * e8m0_to_float(hi) : w;
      }
    }
    q_scale = scratch;
    platform::wave_barrier<wave_size>();
  }

  /// Scores tile keys [n0, n0 + 8); calls out(key, score) on the lanes holding a result (each
  /// key once).
  template <class Out>
  MXI_DEVICE void score(const key_tile& tile, int n0, Out&& out) const {
    if (folded) score_impl<true>(tile, n0, out);
    else score_impl<false>(tile, n0, out);
  }

 private:
  template <bool Folded, class Out>
  MXI_DEVICE void score_impl(const key_tile& tile, int n0, Out& out) const {
    const int lane = platform::lane_id<wave_size>();
    const int g = lane >> 2, t = lane & 3;
    const int n = n0 + g;
    uint32_t b0[blocks], b1[blocks];
#pragma unroll
    for (int b = 0; b < blocks; ++b) {
      const fp8x8 x = expand_e2m1x8(tile.values[key_tile_shape::word(n, b, t)]);
      b0[b] = x.lo;
      b1[b] = x.hi;
    }
    const float4 s0 = reinterpret_cast<const float4*>(tile.scales)[n0 + 2 * t];
    const float4 s1 = reinterpret_cast<const float4*>(tile.scales)[n0 + 2 * t + 1];
    const float sk0[4] = {s0.x, s0.y, s0.z, s0.w};
    const float sk1[4] = {s1.x, s1.y, s1.z, s1.w};
    float part0 = 0.0f, part1 = 0.0f;
#pragma unroll
    for (int m = 0; m < m_tiles; ++m) {
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int b = 0; b < blocks; ++b) {
        float p[4];
        mma_e4m3(p, a[m][b], b0[b], b1[b]);
        if constexpr (Folded) {
          acc[0] = fmaf(p[0], sk0[b], acc[0]);
          acc[1] = fmaf(p[1], sk1[b], acc[1]);
          acc[2] = fmaf(p[2], sk0[b], acc[2]);
          acc[3] = fmaf(p[3], sk1[b], acc[3]);
        } else {
          const float q0 = q_scale[b * Heads + 16 * m + g], q1 = q_scale[b * Heads + 16 * m + g + 8];
          acc[0] = fmaf(p[0], sk0[b] * q0, acc[0]);
          acc[1] = fmaf(p[1], sk1[b] * q0, acc[1]);
          acc[2] = fmaf(p[2], sk0[b] * q1, acc[2]);
          acc[3] = fmaf(p[3], sk1[b] * q1, acc[3]);
        }
      }
      part0 = fmaf(weight[m][0], relu(acc[0]), part0);
      part0 = fmaf(weight[m][1], relu(acc[2]), part0);
      part1 = fmaf(weight[m][0], relu(acc[1]), part1);
      part1 = fmaf(weight[m][1], relu(acc[3]), part1);
    }
    // Heads live on the 8 lanes of equal t: sum them in a fixed order.
#pragma unroll
    for (int mask = 4; mask < 32; mask *= 2) {
      part0 += platform::shuffle_xor<wave_size>(part0, mask);
      part1 += platform::shuffle_xor<wave_size>(part1, mask);
    }
    if (g == 0) {
      out(n0 + 2 * t, part0);
      out(n0 + 2 * t + 1, part1);
    }
  }
};

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::arch::sm90
