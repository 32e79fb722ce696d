// MXFP4 encode of bf16 inputs two elements an instruction, with sm90's packed bf16x2 and u16x2
// arithmetic: the quantizers' bf16 path (block/group_quantize.hpp), which is bound by issued
// instructions, takes about half of the float path's per element. Bit for bit
// format::encode_e2m1_by_rounding of the widened value (test_gpu_logits: every bf16 value at six
// scales, both rules).
//
// A word holds two bf16 elements: element 2j in bits 0-15, 2j + 1 in bits 16-31. A code pair is
// the two E2M1 codes in bits 0-3 and 16-19.
//
// The rounding: with m = min(|x| / scale, 6), the code is u1 + u2 + u3, where u1 counts steps of
// 0.5 in min(m, 2), u2 steps of 1 in clamp(m, 2, 4) past 2, and u3 steps of 2 in max(m, 4) past 4,
// each rounded to nearest even by adding 64, 128 or 256 (bf16 ulps 0.5, 1 and 2): the sum's bits
// less the magic's count the steps. Where m lies in one binade the other two terms are 0 or full,
// so the sum is the binade's code, as the float path's per-binade magic gives.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"

#if defined(__CUDACC__) && !MXI_PLATFORM_HIP
#include <cuda_bf16.h>
#endif

namespace mxi::format {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !MXI_PLATFORM_HIP
inline constexpr bool bf16_pairs_native = true;
#else
inline constexpr bool bf16_pairs_native = false;  // the float path serves
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !MXI_PLATFORM_HIP

/// Each half's larger of a and b as unsigned 16-bit integers: for bf16 magnitudes (sign bits
/// cleared) the order of their values, NaN above infinity.
MXI_DEVICE uint32_t max_u16x2(uint32_t a, uint32_t b) { return __vmaxu2(a, b); }

namespace detail {

/// bf16 bits of v in both halves.
MXI_HOST_DEVICE constexpr uint32_t both(uint32_t v) { return v | (v << 16); }

MXI_DEVICE __nv_bfloat162 as_pair(uint32_t w) { return bit_cast<__nv_bfloat162>(w); }
MXI_DEVICE uint32_t as_bits(__nv_bfloat162 p) { return bit_cast<uint32_t>(p); }

}  // namespace detail

/// The code pair of the bf16 pair `w` scaled by `inverse_scale` (2^-e, a normal power of two, in
/// both halves as bf16): the product is exact but for subnormals, which lie below the first
/// rounding boundary, 0.25, as in the float path.
MXI_DEVICE uint32_t encode_e2m1_pair(uint32_t w, uint32_t inverse_scale) {
  using detail::both;
  constexpr uint32_t two = both(0x4000u), four = both(0x4080u), six = both(0x40C0u);
  constexpr uint32_t magic1 = both(0x4280u), magic2 = both(0x4300u), magic4 = both(0x4380u);
  // Each term's bits less its magic, and u2 and u3 less the 2 steps their clamps start at.
  constexpr uint32_t offset = both(0x4280u + 0x4300u + 2u + 0x4380u + 2u);
  using detail::as_bits, detail::as_pair;
  const __nv_bfloat162 m =
      __hmin2(__habs2(__hmul2(as_pair(w), as_pair(inverse_scale))), as_pair(six));
  const uint32_t low = as_bits(__hadd2(__hmin2(m, as_pair(two)), as_pair(magic1)));
  const uint32_t mid =
      as_bits(__hadd2(__hmax2(__hmin2(m, as_pair(four)), as_pair(two)), as_pair(magic2)));
  const uint32_t high = as_bits(__hadd2(__hmax2(m, as_pair(four)), as_pair(magic4)));
  const uint32_t code = low + mid + high - offset;  // each half below 2^16: no carry between them
  return code | ((w >> 12) & 0x00080008u);          // the signs, bits 15 and 31, to bits 3 and 19
}

/// Eight codes, the code pairs of elements 0-1, 2-3, 4-5, 6-7, as one word of packed nibbles
/// (element i in bits 4i .. 4i + 3).
MXI_DEVICE uint32_t pack_code_pairs(uint32_t c01, uint32_t c23, uint32_t c45, uint32_t c67) {
  // c | c << 8 puts a second pair in bits 8-11 and 24-27; v | v >> 12 then folds bits 16-27 onto
  // 4-15, so the low 16 bits hold four nibbles in order.
  uint32_t lo = c01 | (c23 << 8), hi = c45 | (c67 << 8);
  lo |= lo >> 12;
  hi |= hi >> 12;
  return __byte_perm(lo, hi, 0x5410);
}

#endif

}  // namespace mxi::format
