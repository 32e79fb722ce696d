// MXFP4 encode of bf16 inputs two elements an instruction, with sm90's packed bf16x2 and u16x2
// arithmetic: the quantizers' bf16 path (block/group_quantize.hpp), which is bound by issued
// instructions, takes about half of the float path's per element. Bit for bit
// format::encode_e2m1_by_rounding of the widened value. Host and device code: elsewhere than on
// sm90 the packed operations are portable stand-ins with the hardware's results, so the host test
// (test_format_mxfp4) checks the very functions the kernels run, and test_gpu_logits runs every
// bf16 value at six scales through both quantizers on the GPU.
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
#include "mxi/format/bf16.hpp"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !MXI_PLATFORM_HIP
#define MXI_FORMAT_BF16X2_NATIVE 1
#include <cuda_bf16.h>
#else
#define MXI_FORMAT_BF16X2_NATIVE 0
#endif

namespace mxi::format {

/// Whether the quantizers take the bf16 pairs path here (sm90); elsewhere the float path serves.
inline constexpr bool bf16_pairs_native = MXI_FORMAT_BF16X2_NATIVE;

namespace detail {

/// bf16 bits of v in both halves.
MXI_HOST_DEVICE constexpr uint32_t both(uint32_t v) { return v | (v << 16); }

#if MXI_FORMAT_BF16X2_NATIVE
MXI_DEVICE __nv_bfloat162 as_pair(uint32_t w) { return bit_cast<__nv_bfloat162>(w); }
MXI_DEVICE uint32_t as_bits(__nv_bfloat162 p) { return bit_cast<uint32_t>(p); }
MXI_DEVICE uint32_t mul2(uint32_t a, uint32_t b) {
  return as_bits(__hmul2(as_pair(a), as_pair(b)));
}
MXI_DEVICE uint32_t add2(uint32_t a, uint32_t b) {
  return as_bits(__hadd2(as_pair(a), as_pair(b)));
}
MXI_DEVICE uint32_t min2(uint32_t a, uint32_t b) {
  return as_bits(__hmin2(as_pair(a), as_pair(b)));
}
MXI_DEVICE uint32_t max2(uint32_t a, uint32_t b) {
  return as_bits(__hmax2(as_pair(a), as_pair(b)));
}
#else
// Each lane widened to float, where the sums (at most 6 + 256) and products (by a power of two)
// below are exact, or lie below 2^-126 and so below the first rounding boundary; then rounded to
// the nearest even bf16, as the hardware rounds. No NaN reaches them.
MXI_HOST_DEVICE uint32_t to_bf16(float f) {
  const uint32_t bits = bit_cast<uint32_t>(f);
  return (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
}
struct times {
  MXI_HOST_DEVICE float operator()(float x, float y) const { return x * y; }
};
struct plus {
  MXI_HOST_DEVICE float operator()(float x, float y) const { return x + y; }
};
struct smaller {
  MXI_HOST_DEVICE float operator()(float x, float y) const { return y < x ? y : x; }
};
struct larger {
  MXI_HOST_DEVICE float operator()(float x, float y) const { return y > x ? y : x; }
};
template <class Op>
MXI_HOST_DEVICE uint32_t lanes(uint32_t a, uint32_t b) {
  return to_bf16(Op{}(widen_bf16_half(a, 0), widen_bf16_half(b, 0))) |
         (to_bf16(Op{}(widen_bf16_half(a, 1), widen_bf16_half(b, 1))) << 16);
}
MXI_HOST_DEVICE uint32_t mul2(uint32_t a, uint32_t b) { return lanes<times>(a, b); }
MXI_HOST_DEVICE uint32_t add2(uint32_t a, uint32_t b) { return lanes<plus>(a, b); }
MXI_HOST_DEVICE uint32_t min2(uint32_t a, uint32_t b) { return lanes<smaller>(a, b); }
MXI_HOST_DEVICE uint32_t max2(uint32_t a, uint32_t b) { return lanes<larger>(a, b); }
#endif

}  // namespace detail

/// Each half's larger of a and b as unsigned 16-bit integers: for bf16 magnitudes (sign bits
/// cleared) the order of their values, NaN above infinity.
MXI_HOST_DEVICE uint32_t max_u16x2(uint32_t a, uint32_t b) {
#if MXI_FORMAT_BF16X2_NATIVE
  return __vmaxu2(a, b);
#else
  const uint32_t lo = (a & 0xFFFFu) > (b & 0xFFFFu) ? a & 0xFFFFu : b & 0xFFFFu;
  const uint32_t hi = (a >> 16) > (b >> 16) ? a >> 16 : b >> 16;
  return lo | (hi << 16);
#endif
}

/// The code pair of the bf16 pair `w` scaled by `inverse_scale` (2^-e, a normal power of two, in
/// both halves as bf16): the product is exact but for subnormals, which lie below the first
/// rounding boundary, 0.25, as in the float path.
MXI_HOST_DEVICE uint32_t encode_e2m1_pair(uint32_t w, uint32_t inverse_scale) {
  using detail::add2, detail::both, detail::max2, detail::min2;
  constexpr uint32_t two = both(0x4000u), four = both(0x4080u), six = both(0x40C0u);
  constexpr uint32_t magic1 = both(0x4280u), magic2 = both(0x4300u), magic4 = both(0x4380u);
  // Each term's bits less its magic, and u2 and u3 less the 2 steps their clamps start at.
  constexpr uint32_t offset = both(0x4280u + 0x4300u + 2u + 0x4380u + 2u);
  const uint32_t m = min2(detail::mul2(w, inverse_scale) & 0x7FFF7FFFu, six);
  const uint32_t low = add2(min2(m, two), magic1);
  const uint32_t mid = add2(max2(min2(m, four), two), magic2);
  const uint32_t high = add2(max2(m, four), magic4);
  const uint32_t code = low + mid + high - offset;  // each half below 2^16: no carry between them
  return code | ((w >> 12) & 0x00080008u);          // the signs, bits 15 and 31, to bits 3 and 19
}

/// Eight codes, the code pairs of elements 0-1, 2-3, 4-5, 6-7, as one word of packed nibbles
/// (element i in bits 4i .. 4i + 3).
MXI_HOST_DEVICE uint32_t pack_code_pairs(uint32_t c01, uint32_t c23, uint32_t c45, uint32_t c67) {
  // c | c << 8 puts a second pair in bits 8-11 and 24-27; v | v >> 12 then folds bits 16-27 onto
  // 4-15, so the low 16 bits hold four nibbles in order.
  uint32_t lo = c01 | (c23 << 8), hi = c45 | (c67 << 8);
  lo |= lo >> 12;
  hi |= hi >> 12;
#if MXI_FORMAT_BF16X2_NATIVE
  return __byte_perm(lo, hi, 0x5410);
#else
  return (lo & 0xFFFFu) | (hi << 16);
#endif
}

}  // namespace mxi::format
