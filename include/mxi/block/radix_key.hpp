// Order-preserving uint32 images of fp32 scores and the digit plan the radix select walks, so
// selection is plain integer comparison. Host and device.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"

namespace mxi::block {

/// Monotone image of a score under the contract's ranking NaN < -inf < finite < +inf: every NaN
/// maps to 0 and -0 maps onto +0 (the same score, so ties break by position). A negative score's
/// bits are all flipped, a positive one's sign bit set: one xor with the sign spread over the
/// word. The top-k converts every score once (the stage), so the device form is five
/// instructions: an add of +0 (inline PTX without .ftz: subnormals are kept whatever the caller's
/// -ftz) turns -0 into +0, then the shift and the xor, and NaN's select.
MXI_HOST_DEVICE uint32_t score_key(float x) {
#if defined(__CUDA_ARCH__)
  float plus_zero;
  asm("add.rn.f32 %0, %1, 0f00000000;" : "=f"(plus_zero) : "f"(x));
  const uint32_t bits = __float_as_uint(plus_zero);
#else
  const uint32_t bits = bit_cast<uint32_t>(x) == 0x80000000u ? 0u : bit_cast<uint32_t>(x);
#endif
  const uint32_t key =
      bits ^ (static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31) | 0x80000000u);
  return x != x ? 0u : key;
}

inline constexpr uint32_t key_positive_infinity = 0xFF800000u;  ///< score_key(+inf)

/// A first digit of a key, 0 .. 2047 and never decreasing as the key grows, finer than its top 11
/// bits where scores lie: the sign, then |score| cut like fp16 (exponent and 5 mantissa bits) over
/// [2^-15, 2^17): 32 bins an octave against the top bits' 4. Smaller magnitudes share the bins
/// beside zero, larger and infinite ones (and NaN) the outermost. The cluster select's first pass
/// counts it, so the threshold's bin keeps few keys whatever the scores' spread.
MXI_HOST_DEVICE uint32_t fine_digit(uint32_t key) {
  const bool positive = key >= 0x80000000u;
  const uint32_t magnitude = (positive ? key : ~key) & 0x7FFFFFFFu;  // the bits of |score|
  // Exponent and top 5 mantissa bits, 3584 = 112 << 5 (2^-15) up to 4607 (2^17 less a step).
  uint32_t cut = magnitude >> 18;
  cut = (cut < 3584u ? 3584u : cut > 4607u ? 4607u : cut) - 3584u;
  return positive ? 1024u | cut : 1023u ^ cut;
}

/// The least key whose fine_digit is at least `digit` (2^32 for 2048): the keys of digit d are
/// [fine_digit_start(d), fine_digit_start(d + 1)), so a bin test is two comparisons.
MXI_HOST_DEVICE uint64_t fine_digit_start(uint32_t digit) {
  // The least magnitude whose cut is at least c, 0 .. 1024 (1024: past every magnitude).
  const auto magnitude_start = [](uint32_t c) -> uint64_t {
    return c == 0 ? 0u : c >= 1024u ? uint64_t{0x80000000u} : uint64_t{c + 3584u} << 18;
  };
  return digit >= 1024u ? uint64_t{0x80000000u} + magnitude_start(digit - 1024u)
                        : uint64_t{0x80000000u} - magnitude_start(1024u - digit);
}

/// Most significant digit first: 11, 11, then 10 bits. Each pass histograms one digit of the keys
/// whose higher digits equal the threshold's so far; three passes pin the threshold key exactly.
struct radix_digits {
  static constexpr int passes = 3;
  static constexpr int max_bins = 2048;
  static constexpr int total_bins = 2048 + 2048 + 1024;  ///< one histogram per pass, back to back

  MXI_HOST_DEVICE static constexpr int shift(int pass) { return pass == 0 ? 21 : pass == 1 ? 10 : 0; }
  MXI_HOST_DEVICE static constexpr int bins(int pass) { return pass == 2 ? 1024 : 2048; }
  MXI_HOST_DEVICE static constexpr int offset(int pass) { return pass == 0 ? 0 : pass == 1 ? 2048 : 4096; }

  MXI_HOST_DEVICE static uint32_t digit(uint32_t key, int pass) {
    return (key >> shift(pass)) & static_cast<uint32_t>(bins(pass) - 1);
  }
  /// Whether the digits above `pass` of `key` equal `prefix` (those digits of the threshold).
  MXI_HOST_DEVICE static bool matches(uint32_t key, int pass, uint32_t prefix) {
    return pass == 0 || (key >> (shift(pass) + (pass == 2 ? 10 : 11))) == prefix;
  }
};

/// The compaction's classes (block_radix_select::masks): keys above `hi` win, keys in [lo, hi]
/// tie, the rest lose.
struct key_range {
  uint32_t lo, hi;
  /// The keys whose bits from `shift` (< 32) up equal `prefix`: a threshold's digits so far.
  MXI_HOST_DEVICE static key_range of_digits(uint32_t prefix, uint32_t shift) {
    const uint32_t lo = prefix << shift;
    return {lo, lo | ((1u << shift) - 1u)};
  }
  MXI_HOST_DEVICE bool above(uint32_t key) const { return key > hi; }
  /// lo <= key <= hi in one unsigned comparison.
  MXI_HOST_DEVICE bool within(uint32_t key) const { return key - lo <= hi - lo; }
};

}  // namespace mxi::block
