// E2M1 -> int8 in registers, exact: code value times 2 (0, ±1, ±2, ±3, ±4, ±6, ±8, ±12), times
// 2^shift for shift in [0, 3] (at most ±96, still int8). Integer dot products of these are exact,
// which the sm90 integer tile and the generic SIMT tile build on. Host and device code.
#pragma once

#include <cstdint>

#include "mxi/arch/fp4_to_fp8.hpp"
#include "mxi/config.hpp"

namespace mxi::arch {

/// The largest block-scale spread an int8 fold takes (12 * 2^3 = 96 <= 127).
inline constexpr int int8_max_shift = 3;

/// Byte tables of the twice-magnitudes of codes 0..7 times 2^shift, and their negations.
struct int8_lut {
  uint32_t pos_lo, pos_hi, neg_lo, neg_hi;
};

/// The tables for one shift in [0, int8_max_shift]. No byte carries into its neighbour: the
/// magnitudes stay below 128, and the negation skips byte 0 (zero) of the low word.
MXI_HOST_DEVICE int8_lut int8_shifted_lut(uint32_t shift) {
  const uint32_t lo = 0x03020100u << shift, hi = 0x0C080604u << shift;  // 0 1 2 3 | 4 6 8 12
  return {lo, hi, (~lo + 0x01010100u) & 0xFFFFFF00u, ~hi + 0x01010101u};
}

/// Eight packed E2M1 codes (element 2i in the low nibble of byte i) to eight int8 bytes, byte i =
/// element i: elements 0..3 in `lo`, 4..7 in `hi`.
MXI_HOST_DEVICE fp8x8 expand_e2m1x8_int8(uint32_t packed, const int8_lut& lut = int8_shifted_lut(0)) {
  const uint32_t magnitude = packed & 0x77777777u;
  const uint32_t sign = (packed >> 3) & 0x11111111u;
  const auto one = [&](uint32_t mag, uint32_t sg) {
    const uint32_t p = byte_permute(lut.pos_lo, lut.pos_hi, mag);
    const uint32_t n = byte_permute(lut.neg_lo, lut.neg_hi, mag);
    const uint32_t mask = byte_permute(0x0000FF00u, 0, sg);  // 0xFF where the sign bit is set
    return (p & ~mask) | (n & mask);
  };
  return {one(magnitude, sign), one(magnitude >> 16, sign >> 16)};
}

/// Key side of the sm90 integer tile: E2M1 -> u8, 48 + 2 * code * 2^shift (0 .. 96), in 9
/// operations a word where the signed expand takes 13. The sign needs no mask: a PRMT selector
/// nibble with bit 3 set yields the selected byte's bit 7 in all eight bits (PTX's default
/// mode), 0 here, since every table byte stays below 128. One permute reads the codes as they
/// are (positive codes pick 48 + v, negative ones 0), the other with the sign bits flipped
/// (negative codes pick 48 - v, positive ones 0); adding joins them. The tile's integer MMA takes
/// keys as u8 and removes 48 * (sum of the query's int8 column) from each dot product.
inline constexpr int u8_key_bias = 48;
/// The largest block-scale spread the u8 key expand takes: 48 + 12 * 2^2 = 96 < 128.
inline constexpr int u8_key_max_shift = 2;

/// Tables of 48 +- 2 * code * 2^shift for magnitude codes 0..7 (shift in [0, u8_key_max_shift]).
MXI_HOST_DEVICE int8_lut u8_key_lut(uint32_t shift) {
  const uint32_t lo = 0x03020100u << shift, hi = 0x0C080604u << shift, bias = 0x30303030u;
  return {bias + lo, bias + hi, bias - lo, bias - hi};  // no byte carries or borrows
}

/// Eight packed E2M1 codes to eight u8 bytes 48 + 2 * code * 2^shift (byte order as
/// expand_e2m1x8_int8), through the tables of u8_key_lut(shift).
MXI_HOST_DEVICE fp8x8 expand_e2m1x8_u8(uint32_t packed, const int8_lut& lut) {
  const uint32_t flipped = packed ^ 0x88888888u;
  const auto half = [&](uint32_t codes, uint32_t flipped_codes) {
    // Each byte is 0 in one of the two, so the sum is their OR, and an add may take the FMA pipe
    // (IMAD) where the ALU pipe is busy.
    return byte_permute_signed(lut.pos_lo, lut.pos_hi, codes) +
           byte_permute_signed(lut.neg_lo, lut.neg_hi, flipped_codes);
  };
  return {half(packed, flipped), half(packed >> 16, flipped >> 16)};
}

/// The smallest and largest of a token's (or a query head's) four E8M0 block scales, one byte
/// each of a 32-bit word (255, NaN, is the largest).
struct scale_span {
  uint32_t low, high;
};

MXI_HOST_DEVICE scale_span scale_span_of(uint32_t scales) {
  scale_span s{255, 0};
  for (int b = 0; b < 4; ++b) {
    const uint32_t e = (scales >> (8 * b)) & 0xFFu;
    s.low = e < s.low ? e : s.low;
    s.high = e > s.high ? e : s.high;
  }
  return s;
}

/// How the four scales fold into one int8 scale: every block b becomes codes * 2^(e_b - low), and
/// the token's dot products carry 2^(low - 127) once. `fits` when no scale is NaN, the spread is
/// at most int8_max_shift, and `low` lies in [127 - 32, 127 + 32], so that the fp32 products built
/// on the fold never leave the normal range.
struct int8_fold {
  uint32_t low;
  bool fits;
};

MXI_HOST_DEVICE int8_fold int8_fold_of(scale_span s, int max_shift = int8_max_shift) {
  return {s.low, s.low >= 127 - 32 && s.low <= 127 + 32 && s.high - s.low <= static_cast<uint32_t>(max_shift)};
}
MXI_HOST_DEVICE int8_fold int8_fold_of(uint32_t scales, int max_shift = int8_max_shift) {
  return int8_fold_of(scale_span_of(scales), max_shift);
}

}  // namespace mxi::arch
