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
#include "mxfp4_oracle.hpp"
#include "mxi/format/mxfp4.hpp"

namespace fmt = mxi::format;

namespace {

using mxi::testing::e2m1_magnitudes;
using mxi::testing::expected_code;
using mxi::testing::expected_exponent;

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
