// The K-cache writer and the Q quantizer (docs/semantics.md) on both CPU backends: bytes equal to
// format::quantize_row's, in either layout, from fp32 or bf16, skipping -1 slots, flagging bad
// slots, and touching nothing else.
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "catch.hpp"
#include "host_run.hpp"
#include "mxi/layout/convert.hpp"

using namespace mxi;
using namespace mxi::testing;

namespace {

uint16_t to_bf16(float x) { return static_cast<uint16_t>(bit_cast<uint32_t>(x) >> 16); }
float from_bf16(uint16_t b) { return bit_cast<float>(static_cast<uint32_t>(b) << 16); }

/// Gaussian rows with a few special values (zeros, a huge block, a NaN, an infinity).
std::vector<float> draw_rows(int64_t rows, int d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(static_cast<size_t>(rows * d));
  for (float& v : x) v = normal(rng);
  if (rows > 3) {
    std::fill(x.begin(), x.begin() + 32, 0.0f);
    x[d + 1] = 1e30f;
    x[2 * d + 40 % d] = std::nanf("");
    x[3 * d + 5] = -INFINITY;
  }
  return x;
}

/// Input buffer in `type` (bf16 truncates the fp32 draw).
std::vector<uint8_t> as_input(const std::vector<float>& x, float_type type) {
  std::vector<uint8_t> bytes;
  if (type == float_type::f32) {
    bytes.resize(x.size() * 4);
    std::memcpy(bytes.data(), x.data(), bytes.size());
  } else {
    bytes.resize(x.size() * 2);
    for (size_t i = 0; i < x.size(); ++i) {
      const uint16_t b = to_bf16(x[i]);
      std::memcpy(&bytes[2 * i], &b, 2);
    }
  }
  return bytes;
}

/// Bytes of a row quantized by format::quantize_row directly, from the input buffer. (Reading
/// the bf16 bits from memory matters: GCC 12 -O1 and up miscompiles `f32 ? v : bf16(v)` computed
/// in registers through bit_cast, dropping the truncation.)
void expected_row(const std::vector<uint8_t>& input, float_type type, int64_t row, int d,
                  format::scale_rule rule, uint8_t* values, uint8_t* scales) {
  std::vector<float> x(d);
  for (int j = 0; j < d; ++j) {
    if (type == float_type::f32) {
      std::memcpy(&x[j], &input[(row * d + j) * 4], 4);
    } else {
      uint16_t b;
      std::memcpy(&b, &input[(row * d + j) * 2], 2);
      x[j] = from_bf16(b);
    }
  }
  format::quantize_row([&](int j) { return x[j]; }, d, values, scales, rule);
}

}  // namespace

TEST_CASE("write_k_cache writes quantize_row's bytes at each slot and nothing else") {
  // D 128 (the models'), and the smallest and largest: 1 and 16 blocks a row.
  const int d = GENERATE(128, 32, 512);
  const int bs = 32;
  const int64_t pages = 5, stride = bs * (d / 2 + d / 32) + 32;  // padded pages
  const int64_t n = 70;
  const std::vector<float> x = draw_rows(n, d, 41);
  // Slots: a shuffled subset of the cache, some rows skipped with -1.
  std::vector<int64_t> slots(static_cast<size_t>(pages * bs));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), std::mt19937_64(42));
  slots.resize(n);
  for (int64_t i = 0; i < n; i += 9) slots[i] = -1;
  for (cache_layout lay : {cache_layout::linear, cache_layout::mfma16, cache_layout::aiter32, cache_layout::aiter16})
    for (format::scale_rule rule : {format::scale_rule::ceil, format::scale_rule::floor})
      for (float_type type : {float_type::f32, float_type::bf16})
        for (backend b : host_backends) {
          if (!layout::holds(lay, {bs, d})) continue;  // aiter16 splits D/32 over 4 lanes
          INFO("layout " << int(lay) << " rule " << int(rule) << " type " << int(type) << " backend "
                         << int(b));
          std::vector<uint8_t> cache(static_cast<size_t>(pages * stride), 0xA5);
          const std::vector<uint8_t> input = as_input(x, type);
          k_cache_write_args a;
          a.k = input.data();
          a.k_type = type;
          a.num_tokens = n;
          a.slot_mapping = slots.data();
          a.cache = {cache.data(), pages, stride, bs, d, lay};
          a.rule = rule;
          uint32_t word = 0;
          execution e;
          e.where = b;
          e.error_word = &word;
          REQUIRE(write_k_cache(a, e).ok());
          CHECK(word == 0);
          // Expected cache: untouched bytes stay 0xA5.
          std::vector<uint8_t> expect(cache.size(), 0xA5);
          const layout::page_shape shape{bs, d};
          std::vector<uint8_t> values(d / 2), scales(d / 32);
          for (int64_t i = 0; i < n; ++i) {
            if (slots[i] < 0) continue;
            expected_row(input, type, i, d, rule, values.data(), scales.data());
            layout::dispatch(lay, [&](auto L) {
              layout::write_token<decltype(L)>(&expect[slots[i] / bs * stride], shape,
                                               static_cast<int>(slots[i] % bs), values.data(),
                                               scales.data());
            });
          }
          CHECK(cache == expect);
        }
}

TEST_CASE("write_k_cache flags and skips slots outside the cache") {
  const int d = 64, bs = 16;
  const int64_t pages = 2, stride = bs * (d / 2 + d / 32);
  const std::vector<float> x = draw_rows(4, d, 43);
  const std::vector<int64_t> slots = {3, -2, pages * bs, 31};
  for (backend b : host_backends) {
    std::vector<uint8_t> cache(static_cast<size_t>(pages * stride), 0);
    k_cache_write_args a;
    a.k = x.data();
    a.num_tokens = 4;
    a.slot_mapping = slots.data();
    a.cache = {cache.data(), pages, stride, bs, d, cache_layout::linear};
    uint32_t word = 0;
    execution e;
    e.where = b;
    e.error_word = &word;
    REQUIRE(write_k_cache(a, e).ok());
    CHECK(word == device_error_slot_mapping);
    std::vector<uint8_t> expect(cache.size(), 0);
    const layout::page_shape shape{bs, d};
    uint8_t values[32], scales[2];
    for (int64_t i : {0, 3}) {
      expected_row(as_input(x, float_type::f32), float_type::f32, i, d, format::scale_rule::ceil,
                   values, scales);
      layout::write_token<layout::linear>(&expect[slots[i] / bs * stride], shape,
                                          static_cast<int>(slots[i] % bs), values, scales);
    }
    CHECK(cache == expect);
  }
}

TEST_CASE("quantize_q writes quantize_row's bytes for every token and head") {
  const int64_t t = 5;
  const int h = 16, d = GENERATE(96, 512);
  const std::vector<float> x = draw_rows(t * h, d, 44);
  for (format::scale_rule rule : {format::scale_rule::ceil, format::scale_rule::floor})
    for (float_type type : {float_type::f32, float_type::bf16})
      for (backend b : host_backends) {
        const std::vector<uint8_t> input = as_input(x, type);
        std::vector<uint8_t> values(static_cast<size_t>(t * h * d / 2) + 8, 0x5A);
        std::vector<uint8_t> scales(static_cast<size_t>(t * h * d / 32) + 8, 0x5A);
        q_quantize_args a;
        a.q = input.data();
        a.q_type = type;
        a.num_tokens = t;
        a.num_heads = h;
        a.head_dim = d;
        a.values = values.data();
        a.scales = scales.data();
        a.rule = rule;
        execution e;
        e.where = b;
        REQUIRE(quantize_q(a, e).ok());
        std::vector<uint8_t> ev(values.size(), 0x5A), es(scales.size(), 0x5A);
        for (int64_t row = 0; row < t * h; ++row)
          expected_row(input, type, row, d, rule, &ev[row * d / 2], &es[row * d / 32]);
        CHECK(values == ev);  // the 8 bytes past the end stay untouched
        CHECK(scales == es);
      }
}
