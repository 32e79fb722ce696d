// E2M1 -> FP8 e4m3 in registers, exact: every E2M1 value, and every E2M1 value times 2^-d for
// d in [0, 8], is an e4m3 value (the smallest, 0.5 * 2^-8, is e4m3's least subnormal 2^-9). Host
// and device code, so the host test checks the very functions the kernels run.
//
// Operand order: a lane expanding 4 packed bytes (8 codes, elements 8j .. 8j+7 of a block) gets
// two e4m3 words, elements 8j .. 8j+3 (`lo`) and 8j+4 .. 8j+7 (`hi`), byte i = element i.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"
#include "mxi/format/mxfp4.hpp"

namespace mxi::arch {

/// e4m3 bytes of the E2M1 magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0..7), as two words a
/// byte permute selects from.
inline constexpr uint32_t e4m3_lut_lo = 0x3C383000u;
inline constexpr uint32_t e4m3_lut_hi = 0x4C484440u;

/// Byte permute with 4-bit selectors, bit 3 replicating the selected byte's bit 7 (PTX prmt's
/// default mode; only the low 16 bits of `sel` are read).
MXI_HOST_DEVICE uint32_t byte_permute_signed(uint32_t lo, uint32_t hi, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(sel));
  return r;
#else
  const uint64_t bytes = (static_cast<uint64_t>(hi) << 32) | lo;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned s = (sel >> (4 * i)) & 0xFu;
    uint32_t byte = static_cast<uint32_t>(bytes >> (8 * (s & 7u))) & 0xFFu;
    if (s & 8u) byte = (byte & 0x80u) ? 0xFFu : 0u;
    r |= byte << (8 * i);
  }
  return r;
#endif
}

/// Byte permute with 3-bit selectors (selector nibble i picks byte i of the result from the 8
/// bytes {hi:lo}); only the low 16 bits of `sel` are read. Compiles to one PRMT / V_PERM.
MXI_HOST_DEVICE uint32_t byte_permute(uint32_t lo, uint32_t hi, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(lo, hi, sel);
#elif defined(__HIP_DEVICE_COMPILE__)
  // Not HIP's __byte_perm: it reads byte-wide selectors (CUDA's are nibbles) through a stack
  // array (scratch). Spread the nibbles to bytes 0..7 and issue v_perm_b32, whose selector byte
  // s picks byte s of {hi:lo} (0..3 from lo).
  uint32_t s = sel & 0xFFFFu;
  s = (s | (s << 8)) & 0x00FF00FFu;
  s = (s | (s << 4)) & 0x07070707u;
  return __builtin_amdgcn_perm(hi, lo, s);
#else
  return byte_permute_signed(lo, hi, sel & 0x7777u);  // no selector asks for a sign
#endif
}

struct fp8x8 {
  uint32_t lo, hi;
};

/// Eight packed E2M1 codes (one 32-bit word, element 2i in the low nibble of byte i) to eight
/// e4m3 bytes: magnitudes through the table {lut_hi:lut_lo} (byte c: magnitude code c), signs
/// moved from nibble bit 3 to byte bit 7.
MXI_HOST_DEVICE fp8x8 expand_e2m1x8(uint32_t packed, uint32_t lut_lo = e4m3_lut_lo,
                                    uint32_t lut_hi = e4m3_lut_hi) {
  const uint32_t magnitude = packed & 0x77777777u;
  const uint32_t sign = (packed >> 3) & 0x11111111u;  // one bit a nibble
  constexpr uint32_t sign_lut = 0x00008000u;          // byte 0: +, byte 1: 0x80
  fp8x8 r;
  r.lo = byte_permute(lut_lo, lut_hi, magnitude) | byte_permute(sign_lut, 0, sign);
  r.hi = byte_permute(lut_lo, lut_hi, magnitude >> 16) | byte_permute(sign_lut, 0, sign >> 16);
  return r;
}

/// The magnitude table of E2M1 times 2^-shift, shift in [0, 8] (a host test checks it against
/// e4m3_of_e2m1 below).
MXI_HOST_DEVICE fp8x8 e4m3_shifted_lut(int shift) {
  switch (shift) {
    case 0: return {0x3C383000u, 0x4C484440u};
    case 1: return {0x34302800u, 0x44403C38u};
    case 2: return {0x2C282000u, 0x3C383430u};
    case 3: return {0x24201800u, 0x34302C28u};
    case 4: return {0x1C181000u, 0x2C282420u};
    case 5: return {0x14100800u, 0x24201C18u};
    case 6: return {0x0C080400u, 0x1C181410u};
    case 7: return {0x06040200u, 0x14100C08u};
    default: return {0x03020100u, 0x0C080604u};
  }
}

/// e4m3 byte of E2M1 `code` times 2^-shift, shift in [0, 8]: exact (see the file comment).
MXI_HOST_DEVICE uint8_t e4m3_of_e2m1(unsigned code, int shift) {
  const int twice = format::e2m1_twice_magnitude(code);  // 0, 1, 2, 3, 4, 6, 8, 12
  const uint8_t sign = (code & 8u) ? 0x80 : 0x00;
  if (twice == 0) return sign;
  // value = twice * 2^(-1 - shift); twice = m * 2^k with m in {1, 3}.
  int k = 0, m = twice;
  while ((m & 1) == 0) {
    m >>= 1;
    ++k;
  }
  // m * 2^(k - 1 - shift): exponent of the leading bit and the e4m3 fields (bias 7).
  const int lead = (m == 3 ? 1 : 0) + k - 1 - shift;
  const int e = lead + 7;
  if (e >= 1) {
    const int mantissa = m == 3 ? 4 : 0;  // 1.1b -> 100b
    return static_cast<uint8_t>(sign | (e << 3) | mantissa);
  }
  // Subnormal: value / 2^-9 is the mantissa field.
  const int units = m << (k - 1 - shift + 9);
  return static_cast<uint8_t>(sign | units);
}

/// Like expand_e2m1x8, with every element times 2^-shift (shift in [0, 8]).
MXI_HOST_DEVICE fp8x8 expand_e2m1x8_shifted(uint32_t packed, int shift) {
  const fp8x8 lut = e4m3_shifted_lut(shift);
  return expand_e2m1x8(packed, lut.lo, lut.hi);
}

/// Value of an e4m3 byte (host checks; NaN for 0x7F/0xFF).
MXI_HOST_DEVICE float decode_e4m3(uint8_t b) {
  const int e = (b >> 3) & 0xF, m = b & 7;
  float v;
  if ((b & 0x7F) == 0x7F) v = bit_cast<float>(0x7FC00000u);
  else if (e == 0) v = static_cast<float>(m) * 0x1p-9f;
  else v = (1.0f + static_cast<float>(m) / 8.0f) * bit_cast<float>(static_cast<uint32_t>(e - 7 + 127) << 23);
  return (b & 0x80) ? -v : v;
}

}  // namespace mxi::arch
