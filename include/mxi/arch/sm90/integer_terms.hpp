// The integer scheme's arithmetic outside the tensor cores (see arch/sm90.hpp): the epilogue's
// two instructions a (head, key) (relu of the s32 dot read as a subnormal, then a fused multiply-
// add against the scaled weight, both without .ftz), the bias operand and B column that start
// each accumulator at -48 x the head's query column sum, and a key's fold into table shifts and
// a factor.
#pragma once

#include <cstdint>

#include "mxi/arch/fp4_to_int8.hpp"
#include "mxi/config.hpp"

namespace mxi::arch::sm90 {

#if MXI_GPU_COMPILER

/// relu(x) * 2^-149 for an s32 dot x (see the file comment): x's bits as an fp32, times 1,
/// saturated to [0, 1]. A multiply runs on the FMA pipe; a max would take the half-rate ALU pipe,
/// which the key expand keeps busy (Nsight Compute: math-pipe throttle stalls).
MXI_DEVICE float relu_subnormal(int32_t x) {
  float r;
  asm("mul.rn.sat.f32 %0, %1, 0f3F800000;" : "=f"(r) : "f"(__int_as_float(x)));
  return r;
}

/// a * b + c rounded once, subnormals kept whatever the caller's -ftz.
MXI_DEVICE float fma_subnormal(float a, float b, float c) {
  float r;
  asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
  return r;
}

/// The A operand of the bias wgmma: byte 1 in K slot 0, 255 in the other 31 (so any |n| <= 127 +
/// 255 * 31 * 127 is one column of s8 B: bias_column_word).
MXI_DEVICE void bias_operand(uint32_t (&a)[4], int t) {
  const uint32_t first = t == 0 ? 0xFFFFFF01u : 0xFFFFFFFFu;  // slot 0: thread t = 0 of a quad
  a[0] = first;
  a[1] = first;
  a[2] = 0xFFFFFFFFu;
  a[3] = 0xFFFFFFFFu;
}

/// K slots 4q .. 4q + 3 (q in [0, 8)) of the s8 B column that bias_operand turns into n: slot 0
/// holds n's residue mod 255 in [-127, 127], slots 1 .. 31 share the quotient evenly.
MXI_HOST_DEVICE uint32_t bias_column_word(int32_t n, int q) {
  const int32_t quotient = (n >= 0 ? n + 127 : n - 127) / 255;
  const int32_t residue = n - 255 * quotient;
  const int32_t base = quotient / 31, extra = quotient - 31 * base;  // |extra| < 31, sign of n
  uint32_t word = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int slot = 4 * q + i;
    const int32_t v =
        slot == 0 ? residue
                  : base + (slot <= (extra < 0 ? -extra : extra) ? (extra < 0 ? -1 : 1) : 0);
    word |= (static_cast<uint32_t>(v) & 0xFFu) << (8 * i);
  }
  return word;
}

/// A key's four block shifts e_b - low, byte b each (which u8 table block b's expand takes), from
/// its scale word and fold; 0 (every block any valid table) where the key does not fold. Every
/// byte e_b >= low, so one subtraction makes all four, with no borrow between bytes.
MXI_HOST_DEVICE uint32_t key_shift_word(uint32_t raw_scales, int8_fold f) {
  return f.fits ? raw_scales - f.low * 0x01010101u : 0u;
}

/// 2^(e - 127) for e in [1, 254] (no NaN or subnormal case: callers checked the range).
MXI_DEVICE float exp2_biased(uint32_t e) { return __int_as_float(static_cast<int>(e << 23)); }

#endif  // MXI_GPU_COMPILER

}  // namespace mxi::arch::sm90
