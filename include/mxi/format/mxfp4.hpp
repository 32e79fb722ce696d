// MXFP4 (OCP Microscaling): E2M1 elements, one E8M0 scale per block of 32, two elements a byte
// with the even element in the low nibble. Host and device code; bit-exact per docs/semantics.md.
#pragma once

#include <cmath>
#include <cstdint>

#include "mxi/config.hpp"
#include "mxi/types.hpp"  // scale_rule, which query_view carries

namespace mxi::format {

inline constexpr int block_elems = 32;              ///< elements sharing one scale byte
inline constexpr int block_bytes = block_elems / 2;  ///< packed bytes of one block
inline constexpr uint8_t nan_scale = 255;           ///< E8M0 NaN: the whole block decodes to NaN
inline constexpr uint8_t negative_zero_code = 8;

/// Magnitude of an E2M1 code times two: an integer, so E2M1 products and sums stay exact.
MXI_HOST_DEVICE int e2m1_twice_magnitude(unsigned code) {
  // 0, 0.5, 1, 1.5, 2, 3, 4, 6 doubled, packed as nibbles.
  return static_cast<int>((0xC8643210u >> (4 * (code & 7u))) & 0xFu);
}

/// Value of an E2M1 code; exact in fp32.
MXI_HOST_DEVICE float decode_e2m1(unsigned code) {
  const float magnitude = 0.5f * static_cast<float>(e2m1_twice_magnitude(code));
  return (code & 8u) ? -magnitude : magnitude;
}

/// Value of an E8M0 byte: 2^(e-127); 255 is NaN. Built from bits, so it is exact for e = 0 too
/// (2^-127 is an fp32 subnormal).
MXI_HOST_DEVICE float decode_e8m0(uint8_t e) {
  const uint32_t normal = static_cast<uint32_t>(e) << 23;
  return bit_cast<float>(e == 0 ? 0x00400000u : (e == nan_scale ? 0x7FC00000u : normal));
}

/// One element of a block: code times scale. Exact whenever the product is representable; the
/// few pairs with e >= 253 and a large code exceed FLT_MAX and give +-inf.
MXI_HOST_DEVICE float decode_element(unsigned code, uint8_t scale) {
  return decode_e2m1(code) * decode_e8m0(scale);
}

/// Nearest E2M1 code of a finite value already divided by the block scale: ties to the even code,
/// saturating at +-6, the sign kept (a negative value that rounds to zero gives -0).
MXI_HOST_DEVICE uint8_t encode_e2m1(float scaled) {
  const bool negative = std::signbit(scaled);
  const float a = std::fabs(scaled);
  // Midpoints between neighbouring magnitudes; at a midpoint the even code wins, which is the
  // lower neighbour at 0.25, 1.25, 2.5 and 5 (even lower code) and the upper at 0.75, 1.75, 3.5.
  uint8_t code;
  if (a <= 0.25f) code = 0;
  else if (a < 0.75f) code = 1;
  else if (a <= 1.25f) code = 2;
  else if (a < 1.75f) code = 3;
  else if (a <= 2.5f) code = 4;
  else if (a < 3.5f) code = 5;
  else if (a <= 5.0f) code = 6;
  else code = 7;  // (5, inf): 6, saturating
  return negative ? static_cast<uint8_t>(code | 8u) : code;
}

/// Shared exponent of a block with largest magnitude `amax` (finite, >= 0), before biasing.
MXI_HOST_DEVICE int block_exponent(float amax, scale_rule rule) {
  // Double holds every fp32 (subnormals too) as a normal number, so ilogb and the comparison
  // below are exact: no rounding of amax / 6 can move the exponent.
  const double a = amax;
  int e;
  if (rule == scale_rule::ceil) {
    const double floored = a < 0x1.8p-124 ? 0x1.8p-124 : a;  // 6 * 2^-126
    e = ::ilogb(floored) - 3;
    while (::ldexp(6.0, e) < floored) ++e;
  } else {
    e = a == 0.0 ? -127 : ::ilogb(a) - 2;
  }
  return e < -127 ? -127 : (e > 127 ? 127 : e);
}

// The same two steps from a float's bits, for the GPU quantizers (block/group_quantize.hpp),
// where block_exponent's double arithmetic and encode_e2m1's comparison chain cost more
// instructions than the bytes take to move. Equal to them for every input (test_format_mxfp4).

/// block_exponent of the finite amax >= 0 whose bits are `amax_bits`.
MXI_HOST_DEVICE int block_exponent_from_bits(uint32_t amax_bits, scale_rule rule) {
  int e;
  if (rule == scale_rule::ceil) {
    // amax = m * 2^E, m in [1, 2): 6 * 2^e >= amax first at e = E - 2, or E - 1 when m > 1.5.
    const uint32_t floored = amax_bits < 0x01C00000u ? 0x01C00000u : amax_bits;  // 6 * 2^-126
    e = static_cast<int>(floored >> 23) - 129 + ((floored & 0x7FFFFFu) > 0x400000u ? 1 : 0);
  } else {
    // Zero and subnormals (exponent field 0) clamp to -127 as floor(log2 amax) - 2 does.
    e = static_cast<int>(amax_bits >> 23) - 129;
  }
  return e < -127 ? -127 : (e > 127 ? 127 : e);
}

/// encode_e2m1 by rounding: |scaled| plus 2^22, 2^23 or 2^24 (for magnitudes below 2, below 4,
/// and above) rounds it once, to nearest even, onto the E2M1 grid's spacing there (0.5, 1, 2), so
/// the sum's low bits count grid steps; codes above 7 saturate.
MXI_HOST_DEVICE uint8_t encode_e2m1_by_rounding(float scaled) {
  const uint32_t bits = bit_cast<uint32_t>(scaled);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  int binade = static_cast<int>(magnitude >> 23) - 127;  // 0: below 2, 1: [2, 4), 2: 4 and up
  binade = binade < 0 ? 0 : (binade > 2 ? 2 : binade);
  const uint32_t magic = 0x4A800000u + (static_cast<uint32_t>(binade) << 23);  // 2^(22 + binade)
  const float rounded = bit_cast<float>(magnitude) + bit_cast<float>(magic);
  const uint32_t code = bit_cast<uint32_t>(rounded) - magic + 2u * static_cast<uint32_t>(binade);
  return static_cast<uint8_t>((code < 7u ? code : 7u) | ((bits >> 28) & 8u));
}

/// Quantizes one block of 32 values into 16 packed bytes; returns the E8M0 scale byte. A block
/// holding a NaN or an infinity gets scale 255 and zero codes.
template <class Load>
MXI_HOST_DEVICE uint8_t quantize_block(Load&& load, uint8_t* packed, scale_rule rule) {
  float amax = 0.0f;
  bool finite = true;
  for (int i = 0; i < block_elems; ++i) {
    const float x = load(i);
    finite = finite && std::isfinite(x);
    amax = std::fmax(amax, std::fabs(x));
  }
  if (!finite) {
    for (int i = 0; i < block_bytes; ++i) packed[i] = 0;
    return nan_scale;
  }
  const int e = block_exponent(amax, rule);
  // 2^-e is a power of two in [2^-127, 2^127]: the product below is exact unless it is subnormal,
  // and then it lies far below the first rounding boundary (0.25).
  const float inverse_scale = decode_e8m0(static_cast<uint8_t>(127 - e));
  for (int i = 0; i < block_bytes; ++i) {
    const uint8_t lo = encode_e2m1(load(2 * i) * inverse_scale);
    const uint8_t hi = encode_e2m1(load(2 * i + 1) * inverse_scale);
    packed[i] = static_cast<uint8_t>(lo | (hi << 4));
  }
  return static_cast<uint8_t>(e + 127);
}

/// Quantizes a row of `n` floats (n a multiple of 32) into n/2 packed bytes and n/32 scales.
template <class Load>
MXI_HOST_DEVICE void quantize_row(Load&& load, int n, uint8_t* values, uint8_t* scales,
                                  scale_rule rule) {
  for (int b = 0; b < n / block_elems; ++b) {
    scales[b] = quantize_block([&](int i) { return load(b * block_elems + i); },
                               values + b * block_bytes, rule);
  }
}

/// Code of element `i` of a packed row.
MXI_HOST_DEVICE unsigned packed_code(const uint8_t* values, int i) {
  return (values[i / 2] >> (4 * (i & 1))) & 0xFu;
}

}  // namespace mxi::format
