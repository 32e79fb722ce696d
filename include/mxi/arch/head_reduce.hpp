// The per-head fp32 logit reduce every tile ends with: a key's logit is the sum over heads h of
// w[h] * relu(dot[h]), from the per-head dot products an MMA or a loop produced. The order is
// part of the result (fp32 addition does not associate), so it is fixed here: each lane adds the
// heads it holds in ascending order onto its share, one fused multiply-add a head after relu;
// then the shares of the lanes that hold the same key are summed by an XOR butterfly, which
// leaves the same bits on every one of those lanes.
#pragma once

#include <cmath>

#include "mxi/config.hpp"
#include "mxi/format/relu.hpp"
#if MXI_GPU_COMPILER
#include "mxi/platform/intrinsics.hpp"
#endif

namespace mxi::arch {

/// One head's term: acc + w * relu(dot), fused (relu keeps NaN, as the reference does).
MXI_HOST_DEVICE float add_head(float acc, float w, float dot) {
  return fmaf(w, format::relu(dot), acc);
}

/// acc + the sum over i = 0, 1, ..., N-1 of w[i] * relu(dot[i]), in that order.
template <int N>
MXI_HOST_DEVICE float add_heads(const float (&dot)[N], const float (&w)[N], float acc = 0.0f) {
#pragma unroll
  for (int i = 0; i < N; ++i) acc = add_head(acc, w[i], dot[i]);
  return acc;
}

#if MXI_GPU_COMPILER

/// The sum of `share` over the `Lanes` lanes l ^ (Stride * j), j < Lanes, that hold one key's
/// heads between them: XOR butterfly with strides Stride, 2 Stride, ... Every lane of the wave
/// calls it, and the lanes of one key end with identical bits (each adds the same pairs).
template <int WaveSize, int Stride, int Lanes>
MXI_DEVICE float lane_head_sum(float share) {
  static_assert(Lanes >= 1 && (Lanes & (Lanes - 1)) == 0, "a power of two of lanes");
  static_assert(Stride >= 1 && Stride * Lanes <= WaveSize, "the lanes lie in one wave");
#pragma unroll
  for (int s = Stride; s < Stride * Lanes; s *= 2)
    share += platform::shuffle_xor<WaveSize>(share, s);
  return share;
}

/// Two keys' shares summed over the `Lanes` lanes l ^ j, j < Lanes, that hold both keys' heads:
/// the lanes with l & 1 == 0 end with key 0's sum, the others with key 1's, the bits of
/// lane_head_sum<WaveSize, 1, Lanes> on each key in half the shuffles (the first exchange sends
/// each lane the share it keeps of the pair's other key).
template <int WaveSize, int Lanes>
MXI_DEVICE float lane_head_sum_pair(float share0, float share1, int lane) {
  static_assert(Lanes >= 2 && (Lanes & (Lanes - 1)) == 0 && Lanes <= WaveSize, "2, 4, ... lanes");
  const bool odd = (lane & 1) != 0;
  float share = (odd ? share1 : share0) + platform::shuffle_xor<WaveSize>(odd ? share0 : share1, 1);
#pragma unroll
  for (int s = 2; s < Lanes; s *= 2) share += platform::shuffle_xor<WaveSize>(share, s);
  return share;
}

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::arch
