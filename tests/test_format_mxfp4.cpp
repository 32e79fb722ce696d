// The MXFP4 codec (include/mxi/format/mxfp4.hpp) against the format rules of docs/semantics.md,
// with expected values derived independently in double precision (no call into the code under
// test); the score's relu (format/relu.hpp) beside it.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "catch.hpp"
#include "mxfp4_oracle.hpp"
#include "mxi/format/bf16_pairs.hpp"
#include "mxi/format/mxfp4.hpp"
#include "mxi/format/relu.hpp"

namespace fmt = mxi::format;

namespace {

using mxi::testing::e2m1_magnitudes;
using mxi::testing::expected_code;
using mxi::testing::expected_exponent;

// Quantizes 32 values through the library; returns the scale byte, codes unpacked.
uint8_t quantize(const std::vector<float>& x, fmt::scale_rule rule, std::vector<uint8_t>& codes) {
  uint8_t packed[fmt::block_bytes];
  const uint8_t scale = fmt::quantize_block([&](int i) { return x[i]; }, packed, rule);
  codes.resize(fmt::block_elems);
  for (int i = 0; i < fmt::block_elems; ++i) codes[i] = fmt::packed_code(packed, i);
  return scale;
}

// Checks the library's block against the independent derivation.
void check_block(const std::vector<float>& x, fmt::scale_rule rule) {
  double amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(static_cast<double>(v)));
  const int e = expected_exponent(amax, rule);
  std::vector<uint8_t> codes;
  REQUIRE(static_cast<int>(quantize(x, rule, codes)) == e + 127);
  for (int i = 0; i < fmt::block_elems; ++i) {
    INFO("element " << i << " = " << x[i] << ", e = " << e);
    CHECK(static_cast<int>(codes[i]) == expected_code(std::ldexp(static_cast<double>(x[i]), -e)));
  }
}

const fmt::scale_rule both_rules[] = {fmt::scale_rule::ceil, fmt::scale_rule::floor};

}  // namespace

TEST_CASE("E2M1: all 16 codes decode to the contract's values", "[format]") {
  for (unsigned code = 0; code < 16; ++code) {
    const double magnitude = e2m1_magnitudes[code & 7];
    const float v = fmt::decode_e2m1(code);
    CHECK(std::fabs(v) == magnitude);
    CHECK(std::signbit(v) == (code >= 8));  // code 8 is -0
    CHECK(fmt::e2m1_twice_magnitude(code) == static_cast<int>(2 * magnitude));
  }
}

TEST_CASE("E8M0: all 256 scale bytes", "[format]") {
  for (int e = 0; e < 255; ++e) {
    INFO("e = " << e);
    CHECK(static_cast<double>(fmt::decode_e8m0(static_cast<uint8_t>(e))) ==
          std::ldexp(1.0, e - 127));
  }
  CHECK(std::fpclassify(fmt::decode_e8m0(0)) == FP_SUBNORMAL);  // 2^-127, exact
  CHECK(std::isnan(fmt::decode_e8m0(255)));
}

TEST_CASE("Dequantizing every code and scale pair", "[format]") {
  // Exact for every finite pair wherever the product fits fp32.
  // For e >= 253 with large codes (|value| >= 2^128) it cannot: decode gives +-inf there.
  int overflowing = 0;
  for (unsigned code = 0; code < 16; ++code) {
    for (int e = 0; e < 256; ++e) {
      INFO("code " << code << ", e " << e);
      const float v = fmt::decode_element(code, static_cast<uint8_t>(e));
      if (e == 255) {
        CHECK(std::isnan(v));
        continue;
      }
      const double exact = (code & 8 ? -1 : 1) * e2m1_magnitudes[code & 7] * std::ldexp(1.0, e - 127);
      if (std::fabs(exact) > FLT_MAX) {
        ++overflowing;
        CHECK(e >= 253);
        CHECK(std::isinf(v));
        CHECK(std::signbit(v) == (code >= 8));
      } else {
        CHECK(static_cast<double>(v) == exact);
      }
    }
  }
  // 2^128 and up: e = 254 with magnitudes 2, 3, 4, 6 and e = 253 with 4, 6, each signed.
  CHECK(overflowing == 2 * (4 + 2));
}

TEST_CASE("E2M1 encode: every rounding midpoint goes to the even code", "[format]") {
  const double midpoints[] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  const uint8_t even[] = {0, 2, 2, 4, 4, 6, 6};
  for (int i = 0; i < 7; ++i) {
    for (int sign : {1, -1}) {
      const float m = static_cast<float>(sign * midpoints[i]);
      INFO("midpoint " << m);
      const uint8_t sign_bit = sign < 0 ? 8 : 0;
      CHECK(fmt::encode_e2m1(m) == (even[i] | sign_bit));
      CHECK(fmt::encode_e2m1(m) == expected_code(m));
      // One ulp either side leaves the tie and goes to the nearer neighbour.
      CHECK(fmt::encode_e2m1(std::nextafter(m, 0.0f)) == expected_code(std::nextafter(m, 0.0f)));
      const float away = std::nextafter(m, sign * 100.0f);
      CHECK(fmt::encode_e2m1(away) == expected_code(away));
    }
  }
  SECTION("midpoints scaled by the block exponent") {
    for (fmt::scale_rule rule : both_rules) {
      for (int k = -120; k <= 120; k += 7) {
        // amax = 6 * 2^k gives e = k under both rules (floor: floor(log2 6) - 2 = 0).
        std::vector<float> x(32, 0.0f);
        x[0] = std::ldexp(6.0f, k);
        for (int i = 0; i < 7; ++i) {
          x[1 + 2 * i] = std::ldexp(static_cast<float>(midpoints[i]), k);
          x[2 + 2 * i] = -x[1 + 2 * i];
        }
        INFO("k = " << k);
        check_block(x, rule);
      }
    }
  }
}

TEST_CASE("E2M1 encode saturates and keeps the sign of zero", "[format]") {
  CHECK(fmt::encode_e2m1(6.0f) == 7);
  CHECK(fmt::encode_e2m1(7.9f) == 7);
  CHECK(fmt::encode_e2m1(-1e30f) == 15);
  CHECK(fmt::encode_e2m1(0.0f) == 0);
  CHECK(fmt::encode_e2m1(-0.0f) == fmt::negative_zero_code);
  CHECK(fmt::encode_e2m1(-0.25f) == fmt::negative_zero_code);  // tie to even: -0
  CHECK(fmt::encode_e2m1(-1e-30f) == fmt::negative_zero_code);

  SECTION("floor rule: elements above 6 after scaling saturate") {
    std::vector<float> x(32, 1.0f);
    x[3] = 7.5f;  // log2 7.5 = 2.9: e = 0, 7.5 > 6
    x[4] = -7.9f;
    std::vector<uint8_t> codes;
    CHECK(quantize(x, fmt::scale_rule::floor, codes) == 127);
    CHECK(codes[3] == 7);
    CHECK(codes[4] == 15);
    check_block(x, fmt::scale_rule::floor);
    // The ceil rule never saturates: it picks e = 1 and 7.9 / 2 = 3.95 -> 4.
    CHECK(quantize(x, fmt::scale_rule::ceil, codes) == 128);
    CHECK(codes[4] == (8 | 6));
  }
  SECTION("a negative element that rounds to zero in a block keeps its sign") {
    std::vector<float> x(32, 0.0f);
    x[0] = 6.0f;
    x[1] = -0.1f;
    x[2] = -0.0f;
    std::vector<uint8_t> codes;
    quantize(x, fmt::scale_rule::ceil, codes);
    CHECK(codes[1] == 8);
    CHECK(codes[2] == 8);
    CHECK(codes[3] == 0);
  }
}

TEST_CASE("Ceil rule is exact at 6 * 2^k and one step up just above", "[format]") {
  for (int k = -126; k <= 125; ++k) {
    const float at = std::ldexp(6.0f, k);
    const float above = std::nextafter(at, INFINITY);
    INFO("k = " << k);
    CHECK(fmt::block_exponent(at, fmt::scale_rule::ceil) == k);
    CHECK(fmt::block_exponent(above, fmt::scale_rule::ceil) == k + 1);
    CHECK(fmt::block_exponent(at, fmt::scale_rule::ceil) ==
          expected_exponent(at, fmt::scale_rule::ceil));
    CHECK(fmt::block_exponent(above, fmt::scale_rule::ceil) ==
          expected_exponent(above, fmt::scale_rule::ceil));
    std::vector<float> x(32, 0.0f);
    x[5] = -at;
    std::vector<uint8_t> codes;
    CHECK(quantize(x, fmt::scale_rule::ceil, codes) == 127 + k);
    CHECK(codes[5] == 15);  // -6 exactly
  }
}

TEST_CASE("Block exponent at the amax floor and for subnormals and zero and the largest float",
          "[format]") {
  using fmt::scale_rule;
  // Ceil: amax is floored at 6 * 2^-126, so tiny, subnormal and zero blocks all get e = -126.
  for (float amax : {0.0f, 1e-45f, 1e-40f, std::ldexp(1.0f, -130), std::ldexp(6.0f, -127),
                     std::ldexp(6.0f, -126)}) {
    INFO("amax = " << amax);
    CHECK(fmt::block_exponent(amax, scale_rule::ceil) == -126);
  }
  CHECK(fmt::block_exponent(std::nextafter(std::ldexp(6.0f, -126), 1.0f), scale_rule::ceil) ==
        -125);
  // Floor: zero and subnormals clamp to -127; the largest float gives 127 - 2.
  CHECK(fmt::block_exponent(0.0f, scale_rule::floor) == -127);
  CHECK(fmt::block_exponent(1e-45f, scale_rule::floor) == -127);
  CHECK(fmt::block_exponent(std::ldexp(1.0f, -124), scale_rule::floor) == -126);
  CHECK(fmt::block_exponent(FLT_MAX, scale_rule::floor) == 125);
  CHECK(fmt::block_exponent(FLT_MAX, scale_rule::ceil) ==
        expected_exponent(FLT_MAX, scale_rule::ceil));
  SECTION("subnormal elements quantize exactly under a subnormal-range scale") {
    for (scale_rule rule : both_rules) {
      std::vector<float> x(32, 0.0f);
      x[0] = std::ldexp(1.0f, -127);  // subnormal
      x[1] = -std::ldexp(1.5f, -128);
      x[2] = std::ldexp(1.0f, -140);
      check_block(x, rule);
      x[3] = std::ldexp(6.0f, -127);
      check_block(x, rule);
    }
  }
}

TEST_CASE("The GPU quantizers' bitwise exponent and encode equal block_exponent and encode_e2m1",
          "[format]") {
  // Every exponent field with every top 11 mantissa bits and four patterns of the low 12 (4M
  // floats a sign), then a band of ulps around each E2M1 midpoint and grid value scaled by
  // 2^-1 .. 2^3: each comparison can fail on one rounding step.
  const uint32_t low_bits[] = {0u, 1u, 0x800u, 0xFFFu};
  int64_t compared = 0;
  const auto compare = [&](uint32_t bits) {
    const float x = mxi::bit_cast<float>(bits);
    if (fmt::encode_e2m1_by_rounding(x) != fmt::encode_e2m1(x)) {
      FAIL_CHECK("encode of bits " << bits);
    }
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude < 0x7F800000u) {
      const float amax = mxi::bit_cast<float>(magnitude);
      for (fmt::scale_rule rule : both_rules)
        if (fmt::block_exponent_from_bits(magnitude, rule) != fmt::block_exponent(amax, rule))
          FAIL_CHECK("exponent of bits " << magnitude);
    }
    ++compared;
  };
  for (uint32_t top = 0; top < (1u << 20); ++top)
    for (uint32_t low : low_bits)
      for (uint32_t sign : {0u, 0x80000000u}) compare(sign | (top << 12) | low);
  const double grid[] = {0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0,
                         2.5,  3.0, 3.5,  4.0, 5.0,  6.0, 7.0,  8.0};
  for (double g : grid)
    for (int k = -1; k <= 3; ++k) {
      const uint32_t at = mxi::bit_cast<uint32_t>(static_cast<float>(std::ldexp(g, k)));
      for (uint32_t d = 0; d < 2048; ++d) compare(at - 1024 + d);
    }
  CHECK(compared == (int64_t{1} << 23) + 16 * 5 * 2048);
}

TEST_CASE("The bf16 pairs encode equals the independent rounding for every finite bf16 value",
          "[format]") {
  // format/bf16_pairs.hpp, the sm90 quantizers' bf16 path (here its portable stand-ins, the same
  // functions): every finite bf16 pattern beside its neighbour, at block exponents from 10 below
  // its own (saturated) to 3 above (scaled into [2^-4, 2^-3)) and at both extremes.
  const auto from_bf16 = [](uint32_t b) { return mxi::bit_cast<float>(b << 16); };
  int64_t compared = 0;
  for (uint32_t p = 0; p < 0x10000u; p += 2) {
    if (((p >> 7) & 0xFFu) == 0xFFu) continue;  // NaN and infinity: the quantizers stop before
    const uint32_t w = p | ((p + 1) << 16);
    const int own = static_cast<int>((p >> 7) & 0xFFu) - 127;
    std::vector<int> exponents{-127, 126};
    for (int e = own - 10; e <= own + 3; ++e)
      if (e > -127 && e < 126) exponents.push_back(e);
    for (int e : exponents) {
      const uint32_t inverse = static_cast<uint32_t>(127 - e) << 7;  // 2^-e as bf16
      const uint32_t pair = fmt::encode_e2m1_pair(w, inverse | (inverse << 16));
      if ((pair & 0xFFF0FFF0u) != 0)
        FAIL_CHECK("bits outside the codes, pattern " << p << " e " << e);
      for (uint32_t i = 0; i < 2; ++i) {
        const double scaled = std::ldexp(static_cast<double>(from_bf16(p + i)), -e);
        if (((pair >> (16 * i)) & 0xFu) != expected_code(scaled))
          FAIL_CHECK("pattern " << p + i << " at e " << e << ": code "
                                << ((pair >> (16 * i)) & 0xFu) << ", want "
                                << int(expected_code(scaled)));
        ++compared;
      }
    }
  }
  CHECK(compared > 2 * 32000 * 14);
}

TEST_CASE("bf16 pairs: code pairs pack into nibbles in element order, u16 lanes max apart",
          "[format]") {
  std::mt19937 rng(7);
  for (int t = 0; t < 10000; ++t) {
    uint32_t code[8], pairs[4];
    for (uint32_t& c : code) c = rng() % 16;
    for (int j = 0; j < 4; ++j) pairs[j] = code[2 * j] | (code[2 * j + 1] << 16);
    const uint32_t packed = fmt::pack_code_pairs(pairs[0], pairs[1], pairs[2], pairs[3]);
    for (int i = 0; i < 8; ++i) REQUIRE(((packed >> (4 * i)) & 0xFu) == code[i]);
    const uint32_t a = rng(), b = rng(), m = fmt::max_u16x2(a, b);
    REQUIRE((m & 0xFFFFu) == std::max(a & 0xFFFFu, b & 0xFFFFu));
    REQUIRE((m >> 16) == std::max(a >> 16, b >> 16));
  }
}

TEST_CASE("Blocks holding NaN or infinity", "[format]") {
  for (fmt::scale_rule rule : both_rules) {
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY}) {
      std::vector<float> x(32, 1.0f);
      x[17] = bad;
      uint8_t packed[fmt::block_bytes];
      const uint8_t scale = fmt::quantize_block([&](int i) { return x[i]; }, packed, rule);
      CHECK(scale == fmt::nan_scale);
      for (uint8_t b : packed) CHECK(b == 0);
      for (int i = 0; i < fmt::block_elems; ++i)
        CHECK(std::isnan(fmt::decode_element(fmt::packed_code(packed, i), scale)));
    }
  }
}

TEST_CASE("Packing puts element 2i in the low nibble and 2i+1 in the high", "[format]") {
  std::vector<float> row(64);
  for (int i = 0; i < 64; ++i)
    row[i] = static_cast<float>(e2m1_magnitudes[i % 8] * (i % 16 < 8 ? 1 : -1));
  row[63] = 6.0f;  // every block's amax is 6: e = 0 under the ceil rule
  row[31] = 6.0f;
  uint8_t values[32], scales[2];
  fmt::quantize_row([&](int i) { return row[i]; }, 64, values, scales, fmt::scale_rule::ceil);
  CHECK(scales[0] == 127);
  CHECK(scales[1] == 127);
  for (int i = 0; i < 32; ++i) {
    INFO("byte " << i);
    CHECK((values[i] & 0xF) == expected_code(row[2 * i]));
    CHECK((values[i] >> 4) == expected_code(row[2 * i + 1]));
  }
  CHECK(values[0] == 0x10);  // elements 0 (code 0) and 1 (0.5: code 1)
}

TEST_CASE("Quantize then dequantize: bit-exact codes and error bounds on random data", "[format]") {
  std::mt19937_64 rng(42);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> exponent(-130, 120);
  for (fmt::scale_rule rule : both_rules) {
    for (int block = 0; block < 2000; ++block) {
      const float spread = std::ldexp(1.0f, exponent(rng));
      std::vector<float> x(32);
      for (float& v : x) v = normal(rng) * spread;
      check_block(x, rule);

      std::vector<uint8_t> codes;
      const uint8_t scale = quantize(x, rule, codes);
      const double step = std::ldexp(1.0, scale - 127);
      for (int i = 0; i < 32; ++i) {
        const double a = std::fabs(static_cast<double>(x[i])) / step;  // scaled magnitude
        const double decoded = fmt::decode_element(codes[i], scale);
        const double error = std::fabs(x[i] - decoded) / step;
        // Half the gap between neighbouring E2M1 values, or the overshoot past 6 (floor rule).
        const double bound = a > 6 ? a - 6 : a > 4 ? 1.0 : a > 2 ? 0.5 : 0.25;
        INFO("x = " << x[i] << ", scaled " << a);
        CHECK(error <= bound);
        if (rule == fmt::scale_rule::ceil)
          CHECK(a <= 6);
        else
          CHECK(a < 8);
      }
    }
  }
}

TEST_CASE("relu zeroes negatives and keeps NaN, in float, double and vector lanes", "[format]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(fmt::relu(-2.5f) == 0.0f);
  CHECK(fmt::relu(3.0f) == 3.0f);
  CHECK(std::isnan(fmt::relu(nan)));  // a NaN key must score NaN, which ranks lowest
  CHECK(fmt::relu(-std::numeric_limits<double>::infinity()) == 0.0);
  typedef float lanes __attribute__((vector_size(16)));
  const lanes r = fmt::relu(lanes{-1.0f, 2.0f, nan, 0.5f});
  CHECK(r[0] == 0.0f);
  CHECK(r[1] == 2.0f);
  CHECK(std::isnan(r[2]));
  CHECK(r[3] == 0.5f);
}
