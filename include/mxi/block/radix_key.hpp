// Order-preserving uint32 images of fp32 scores and the digit plan the radix select walks, so
// selection is plain integer comparison. Host and device.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"

namespace mxi::block {

/// Monotone image of a score under the contract's ranking NaN < -inf < finite < +inf: every NaN
/// maps to 0 and -0 maps onto +0 (the same score, so ties break by position).
MXI_HOST_DEVICE uint32_t score_key(float x) {
  if (x != x) return 0u;
  const uint32_t bits = bit_cast<uint32_t>(x) == 0x80000000u ? 0u : bit_cast<uint32_t>(x);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

inline constexpr uint32_t key_positive_infinity = 0xFF800000u;  ///< score_key(+inf)

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

}  // namespace mxi::block
