// The MXFP4 codec on arbitrary blocks of 32 floats (every bit pattern: NaN, infinities,
// subnormals), both scale rules: the scale and every code match a brute-force derivation of the
// format (docs/semantics.md, "The MXFP4 format"), decoding is exact or overflows only past
// FLT_MAX, and quantizing the decoded block again decodes to the same values bit for bit.
// Input: a rule byte, then the 32 floats.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "fuzz_support.hpp"
#include "mxi/format/mxfp4.hpp"

namespace fmt = mxi::format;

namespace {

constexpr double magnitudes[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};

// Nearest magnitude of |x| (x already divided by the scale), ties to the even code, saturating.
uint8_t expected_code(double x) {
  const double a = std::fabs(x);
  int best = 7;
  if (a <= 6) {
    best = 0;
    for (int c = 1; c < 8; ++c) {
      const double d = std::fabs(a - magnitudes[c]), d_best = std::fabs(a - magnitudes[best]);
      if (d < d_best || (d == d_best && c % 2 == 0)) best = c;
    }
  }
  return static_cast<uint8_t>(std::signbit(x) ? best | 8 : best);
}

// The block exponent by its definition, searched rather than computed with logarithms.
int expected_exponent(double amax, fmt::scale_rule rule) {
  int e;
  if (rule == fmt::scale_rule::ceil) {
    const double floored = std::max(amax, 6 * std::ldexp(1.0, -126));
    for (e = -127; e < 127 && 6 * std::ldexp(1.0, e) < floored;) ++e;
  } else if (amax == 0) {
    e = -127;
  } else {
    int x;
    std::frexp(amax, &x);  // amax = m * 2^x, m in [0.5, 1)
    e = x - 3;
  }
  return std::min(127, std::max(-127, e));
}

uint8_t quantize(const float* x, fmt::scale_rule rule, uint8_t* packed) {
  return fmt::quantize_block([&](int i) { return x[i]; }, packed, rule);
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 + sizeof(float) * fmt::block_elems) return 0;
  const auto rule = (data[0] & 1) ? fmt::scale_rule::floor : fmt::scale_rule::ceil;
  float x[fmt::block_elems];
  std::memcpy(x, data + 1, sizeof x);

  uint8_t packed[fmt::block_bytes];
  const uint8_t scale = quantize(x, rule, packed);
  const bool finite = std::all_of(x, x + fmt::block_elems, [](float v) { return std::isfinite(v); });
  if (!finite) {
    FUZZ_REQUIRE(scale == fmt::nan_scale);
    FUZZ_REQUIRE(std::all_of(packed, packed + fmt::block_bytes, [](uint8_t b) { return b == 0; }));
    FUZZ_REQUIRE(std::isnan(fmt::decode_element(fmt::packed_code(packed, 0), scale)));
    return 0;
  }
  double amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(static_cast<double>(v)));
  const int e = expected_exponent(amax, rule);
  FUZZ_REQUIRE(scale == e + 127);

  float decoded[fmt::block_elems];
  bool overflow = false;
  for (int i = 0; i < fmt::block_elems; ++i) {
    const unsigned code = fmt::packed_code(packed, i);
    FUZZ_REQUIRE(code == expected_code(std::ldexp(static_cast<double>(x[i]), -e)));
    decoded[i] = fmt::decode_element(code, scale);
    const double exact = std::ldexp(static_cast<double>(fmt::decode_e2m1(code)), e);
    if (std::fabs(exact) > FLT_MAX) {
      FUZZ_REQUIRE(std::isinf(decoded[i]) && std::signbit(decoded[i]) == std::signbit(exact));
      overflow = true;
    } else {
      FUZZ_REQUIRE(bits(decoded[i]) == bits(static_cast<float>(exact)));
    }
  }
  if (overflow) return 0;  // the decoded block holds an infinity: it would quantize to NaN

  // Quantizing what was decoded loses nothing more.
  uint8_t again_packed[fmt::block_bytes];
  const uint8_t again_scale = quantize(decoded, rule, again_packed);
  for (int i = 0; i < fmt::block_elems; ++i) {
    const float v = fmt::decode_element(fmt::packed_code(again_packed, i), again_scale);
    FUZZ_REQUIRE(bits(v) == bits(decoded[i]));
  }
  return 0;
}
