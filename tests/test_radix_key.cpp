// The order-preserving keys of the top-k and the cluster select's fine first digit
// (block/radix_key.hpp), on the host: the key orders scores as the contract ranks them, the digit
// never decreases as the key grows and is finer than the key's top 11 bits where scores lie, and
// fine_digit_start bounds each digit's keys exactly.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "catch.hpp"
#include "mxi/block/radix_key.hpp"

using mxi::block::fine_digit;
using mxi::block::fine_digit_start;
using mxi::block::key_range;
using mxi::block::score_key;

TEST_CASE("score_key ranks NaN < -inf < finite < +inf and -0 with +0") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> ascending = {-inf,   -3e38f, -1.0f, -1e-45f, 0.0f,
                                        1e-45f, 1.0f,   3e38f, inf};
  CHECK(score_key(nan) == 0u);
  CHECK(score_key(-nan) == 0u);
  CHECK(score_key(-0.0f) == score_key(0.0f));
  for (size_t i = 0; i < ascending.size(); ++i) {
    INFO("score " << ascending[i]);
    CHECK(score_key(nan) < score_key(ascending[i]));
    if (i > 0) CHECK(score_key(ascending[i - 1]) < score_key(ascending[i]));
  }
}

TEST_CASE("fine_digit never decreases as the key grows, from 0 to 2047") {
  // Every key near each digit boundary and a stride through the rest of the 2^32 keys.
  uint32_t last = fine_digit(0);
  CHECK(last == 0u);
  for (uint64_t key = 1; key < (uint64_t{1} << 32); key += 4099) {
    const uint32_t d = fine_digit(static_cast<uint32_t>(key));
    REQUIRE(d >= last);
    REQUIRE(d <= 2047u);
    last = d;
  }
  CHECK(fine_digit(0xFFFFFFFFu) == 2047u);
  for (uint32_t digit = 1; digit < 2048; ++digit) {
    const uint64_t start = fine_digit_start(digit);
    INFO("digit " << digit << " starts at key " << start);
    REQUIRE(start > 0);
    REQUIRE(start < (uint64_t{1} << 32));
    CHECK(fine_digit(static_cast<uint32_t>(start)) >= digit);
    CHECK(fine_digit(static_cast<uint32_t>(start - 1)) < digit);
  }
  CHECK(fine_digit_start(0) == 0u);
  CHECK(fine_digit_start(2048) == uint64_t{1} << 32);
}

TEST_CASE("fine_digit_start bounds each digit's keys: random keys fall in their digit's range") {
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t key = rng();
    const uint32_t d = fine_digit(key);
    INFO("key " << key << " digit " << d);
    REQUIRE(fine_digit_start(d) <= key);
    REQUIRE(key < fine_digit_start(d + 1));
  }
}

TEST_CASE("fine_digit: 32 bins an octave in [2^-15, 2^17), the extremes and zero in their own") {
  const float inf = std::numeric_limits<float>::infinity();
  // [1, 2) spans 32 digits, each 1/32 of the octave wide; the top 11 key bits give it 4.
  std::vector<uint32_t> seen;
  for (int i = 0; i < 64; ++i) {
    const uint32_t d = fine_digit(score_key(1.0f + static_cast<float>(i) / 64.0f));
    if (seen.empty() || seen.back() != d) seen.push_back(d);
  }
  CHECK(seen.size() == 32);
  CHECK(fine_digit(score_key(-inf)) == 0u);
  CHECK(fine_digit(score_key(std::numeric_limits<float>::quiet_NaN())) == 0u);
  CHECK(fine_digit(score_key(inf)) == 2047u);
  CHECK(fine_digit(score_key(200000.0f)) == 2047u);  // past 2^17: the outermost bin
  CHECK(fine_digit(score_key(100000.0f)) < 2047u);   // below it: a bin of its own
  CHECK(fine_digit(score_key(0.0f)) == 1024u);
  CHECK(fine_digit(score_key(1e-6f)) == 1024u);  // below 2^-15: beside zero
  CHECK(fine_digit(score_key(-1e-6f)) == 1023u);
  CHECK(fine_digit(score_key(std::ldexp(1.0f, -14))) == 1024u + 32u);
  CHECK(fine_digit(score_key(-1.0f)) == 2047u - fine_digit(score_key(1.0f)));
}

TEST_CASE("key_range: a threshold's digits so far bound the tied keys, above it they win") {
  std::mt19937_64 rng(17);
  for (const uint32_t shift : {21u, 10u, 0u}) {
    for (int trial = 0; trial < 2000; ++trial) {
      const uint32_t prefix = static_cast<uint32_t>(rng()) >> shift;
      const key_range range = key_range::of_digits(prefix, shift);
      // Keys at and around the range's ends, and random ones.
      const uint32_t keys[] = {
          range.lo, range.hi,   range.lo - 1, range.hi + 1, static_cast<uint32_t>(rng()),
          0u,       0xFFFFFFFFu};
      for (const uint32_t key : keys) {
        INFO("shift " << shift << " prefix " << prefix << " key " << key);
        CHECK(range.above(key) == ((key >> shift) > prefix));
        CHECK(range.within(key) == ((key >> shift) == prefix));
      }
    }
  }
  const key_range bin{100u, 199u};  // a fine digit's bin, as the cluster select masks it
  CHECK(bin.within(100u));
  CHECK(bin.within(199u));
  CHECK_FALSE(bin.within(99u));
  CHECK_FALSE(bin.within(200u));
  CHECK(bin.above(200u));
  CHECK_FALSE(bin.above(199u));
}
