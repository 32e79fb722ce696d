// Division by a divisor fixed at launch: the host works out a magic multiplier once, and the
// kernel divides with a multiply-high, an add and a shift (Granlund and Montgomery, "Division by
// invariant integers using multiplication", 1994). A 32-bit division by a run-time value is about
// twenty instructions on either vendor; per element of a bandwidth-bound kernel that is the
// kernel's cost.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"

namespace mxi::platform {

/// n / d and n % d for every 32-bit n, d in [1, 2^31] fixed when constructed.
struct divider {
  uint32_t divisor = 1;
  uint32_t magic = 1;  ///< floor(2^(32 + shift) / d) + 1 - 2^32
  int shift = 0;       ///< ceil(log2(d))

  divider() = default;
  /// d in [1, 2^31] (the caller checks).
  MXI_HOST_DEVICE explicit divider(uint32_t d) : divisor(d) {
    while ((uint64_t{1} << shift) < d) ++shift;
    magic = static_cast<uint32_t>((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d) / d + 1);
  }
  /// With m' = magic + 2^32, m' d - 2^(32 + shift) is in (0, d], so n m' / 2^(32 + shift) floors
  /// to n / d for every n < 2^32; the sum below is that product's high part, in 64 bits.
  MXI_HOST_DEVICE uint32_t quotient(uint32_t n) const {
    const uint64_t high = (static_cast<uint64_t>(n) * magic) >> 32;
    return static_cast<uint32_t>((high + n) >> shift);
  }
  MXI_HOST_DEVICE uint32_t remainder(uint32_t n, uint32_t q) const { return n - q * divisor; }
};

}  // namespace mxi::platform
