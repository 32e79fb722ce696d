// platform::divider (the writer divides block indices by the chunk count and slots by the block
// size with it): the quotient and remainder of plain division for every divisor up to 4096 over
// the numerators at the edges of each quotient, and for wide divisors over random numerators.
#include <cstdint>
#include <random>
#include <vector>

#include "catch.hpp"
#include "mxi/platform/divide.hpp"

using mxi::platform::divider;

namespace {

/// Counts the numerators where the divider disagrees with `/` and `%`.
int mismatches(uint32_t d, const std::vector<uint32_t>& numerators) {
  const divider div(d);
  int bad = 0;
  for (const uint32_t n : numerators) {
    const uint32_t q = div.quotient(n);
    bad += q != n / d || div.remainder(n, q) != n % d;
  }
  return bad;
}

}  // namespace

TEST_CASE("divider equals / and % for small divisors at every quotient's edges") {
  std::mt19937 rng(7);
  for (uint32_t d = 1; d <= 4096; ++d) {
    std::vector<uint32_t> n = {0u, 1u, d - 1, d, d + 1, UINT32_MAX, UINT32_MAX - 1, 0x7FFFFFFFu};
    for (int i = 0; i < 64; ++i) {
      const uint32_t q = rng() / d;  // a quotient in range, then the numerators around its edges
      const uint64_t lo = static_cast<uint64_t>(q) * d;
      n.push_back(static_cast<uint32_t>(lo));
      if (lo > 0) n.push_back(static_cast<uint32_t>(lo - 1));
      if (lo + d - 1 <= UINT32_MAX) n.push_back(static_cast<uint32_t>(lo + d - 1));
    }
    INFO("divisor " << d);
    REQUIRE(mismatches(d, n) == 0);
  }
}

TEST_CASE("divider equals / and % for wide divisors up to 2^31") {
  std::mt19937 rng(11);
  std::vector<uint32_t> divisors = {0x80000000u, 0x7FFFFFFFu, 0x40000001u,
                                    65536u,      65537u,      3u << 20};
  for (int i = 0; i < 200; ++i) divisors.push_back(1u + rng() % 0x80000000u);
  for (const uint32_t d : divisors) {
    std::vector<uint32_t> n = {0u, d - 1, d, UINT32_MAX, 2u * (d - 1) + 1};
    for (int i = 0; i < 2000; ++i) n.push_back(static_cast<uint32_t>(rng()));
    INFO("divisor " << d);
    REQUIRE(mismatches(d, n) == 0);
  }
}
