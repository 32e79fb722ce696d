// The MXFP4 rules of docs/semantics.md computed the slow, obvious way (a nearest-value search, an
// exponent found by stepping), for the codec's tests and its fuzzer to judge format/mxfp4.hpp by.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "mxi/format/mxfp4.hpp"

namespace mxi::testing {

/// The E2M1 magnitudes of codes 0..7.
inline constexpr double e2m1_magnitudes[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};

/// Nearest E2M1 code of a finite scaled value: the closest magnitude, ties to the even code,
/// saturating at 6, the sign in bit 3 (so a negative value that rounds to zero is code 8).
inline uint8_t expected_code(double x) {
  const double a = std::fabs(x);
  int best = 7;
  if (a <= 6) {
    best = 0;
    for (int c = 1; c < 8; ++c) {
      const double d = std::fabs(a - e2m1_magnitudes[c]), d_best = std::fabs(a - e2m1_magnitudes[best]);
      if (d < d_best || (d == d_best && c % 2 == 0)) best = c;
    }
  }
  return static_cast<uint8_t>(std::signbit(x) ? best | 8 : best);
}

/// The block exponent by its definitions, searched rather than computed with logarithms.
inline int expected_exponent(double amax, format::scale_rule rule) {
  int e;
  if (rule == format::scale_rule::ceil) {
    const double floored = std::max(amax, 6 * std::ldexp(1.0, -126));
    e = -127;
    while (e < 127 && 6 * std::ldexp(1.0, e) < floored) ++e;  // smallest e with amax <= 6 * 2^e
  } else if (amax == 0) {
    e = -127;
  } else {
    int x;
    std::frexp(amax, &x);  // amax = m * 2^x, m in [0.5, 1): floor(log2 amax) = x - 1
    e = x - 1 - 2;
  }
  return std::min(127, std::max(-127, e));
}

}  // namespace mxi::testing
