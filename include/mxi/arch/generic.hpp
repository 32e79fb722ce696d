// Generic SIMT logits tile for every GPU without a faster path (sm_80, gfx942, ...): one lane per
// key, integer dot products of twice-magnitude int8 codes (dp4a), exact per block, then the two
// block scales (times 1/4) in fp32. The query row sits in the wave's shared scratch.
#pragma once

#include <cstdint>

#include "mxi/arch/fp4_to_int8.hpp"
#include "mxi/arch/head_reduce.hpp"
#include "mxi/arch/key_tile.hpp"
#include "mxi/config.hpp"
#include "mxi/platform/intrinsics.hpp"

namespace mxi::arch::generic {

#if MXI_GPU_COMPILER

template <int WaveSize, int Heads>
struct row_scorer {
  static constexpr int step_keys = WaveSize;
  static constexpr bool direct_keys = false;  ///< scores staged key tiles
  static constexpr bool float_scales = true;  ///< reads key_tile::scales
  static constexpr int blocks = key_tile_shape::blocks;
  static constexpr int words = key_tile_shape::head_dim / 4;  // int8x4 words a row
  /// The query's scratch, in order: int8 codes [Heads][words] as words, then scales
  /// [Heads][blocks] and weights [Heads] as fp32 (byte offsets).
  struct scratch_layout {
    static constexpr int codes = 0;
    static constexpr int scales = codes + Heads * words * 4;
    static constexpr int weights = scales + Heads * blocks * 4;
    static constexpr int bytes = weights + Heads * 4;
  };
  static constexpr int scratch_bytes = scratch_layout::bytes;

  const uint32_t* q;
  const float* q_scale;
  const float* weight;

  /// Loads the first `heads` <= Heads heads of a row into the wave's scratch; the rest score zero.
  /// The caller's barrier publishes the scratch before the first score: the logits kernel's block
  /// barrier follows every load (a wave barrier here would be met only by the waves that load).
  MXI_DEVICE void load(const uint8_t* q_values, const uint8_t* q_scales, const float* weights,
                       int heads, float* scratch) {
    auto* base = reinterpret_cast<unsigned char*>(scratch);
    auto* codes = reinterpret_cast<uint32_t*>(base + scratch_layout::codes);
    auto* scales = reinterpret_cast<float*>(base + scratch_layout::scales);
    auto* w = reinterpret_cast<float*>(base + scratch_layout::weights);
    const int lane = platform::lane_id<WaveSize>();
    for (int i = lane; i < Heads * words / 2; i += WaveSize) {
      const bool live = i < heads * words / 2;
      const fp8x8 x = expand_e2m1x8_int8(live ? reinterpret_cast<const uint32_t*>(q_values)[i] : 0u);
      codes[2 * i] = x.lo;
      codes[2 * i + 1] = x.hi;
    }
    for (int i = lane; i < Heads * blocks; i += WaveSize)
      scales[i] = i < heads * blocks ? format::decode_e8m0(q_scales[i]) * 0.25f : 0.0f;
    for (int i = lane; i < Heads; i += WaveSize) w[i] = i < heads ? weights[i] : 0.0f;
    q = codes;
    q_scale = scales;
    weight = w;
  }

  template <class Out>
  MXI_DEVICE void score(const key_tile& tile, int n0, Out&& out) const {
    const int n = n0 + platform::lane_id<WaveSize>();
    if (n >= key_tile_shape::keys) return;
    uint32_t k[words];
#pragma unroll
    for (int b = 0; b < blocks; ++b) {
#pragma unroll
      for (int qw = 0; qw < 4; ++qw) {
        const fp8x8 x = expand_e2m1x8_int8(tile.values[key_tile_shape::word(n, b, qw)]);
        k[8 * b + 2 * qw] = x.lo;
        k[8 * b + 2 * qw + 1] = x.hi;
      }
    }
    float sk[blocks];
#pragma unroll
    for (int b = 0; b < blocks; ++b) sk[b] = tile.scales[n * blocks + b];
    float total = 0.0f;
    for (int h = 0; h < Heads; ++h) {
      float acc = 0.0f;
      // Unrolled so k and sk stay in registers (amdgcn otherwise puts sk in scratch).
#pragma unroll
      for (int b = 0; b < blocks; ++b) {
        int dot = 0;
#pragma unroll
        for (int j = 0; j < 8; ++j) dot = platform::dot4_i8(k[8 * b + j], q[h * words + 8 * b + j], dot);
        acc = fmaf(static_cast<float>(dot), q_scale[h * blocks + b] * sk[b], acc);
      }
      total = add_head(total, weight[h], acc);
    }
    out(n, total);
  }
};

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::arch::generic
