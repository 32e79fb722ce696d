// Order-preserving integer images of scores, so selection is a plain integer comparison: the
// contract's ranking NaN < -inf < finite < +inf, -0 == +0, ties to the smaller position or id.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"

namespace mxi::detail {

/// Monotone uint32 image of a float: every NaN maps to 0 (lowest), both zeros to one value.
inline uint32_t score_key(float x) {
  if (x != x) return 0;
  if (x == 0.0f) x = 0.0f;  // -0 ties with +0
  const uint32_t bits = bit_cast<uint32_t>(x);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

/// Key of (score key, index): larger is better, and equal scores prefer the smaller index
/// (indices are < 2^32).
inline uint64_t rank_key(uint32_t key, int64_t index) {
  return (static_cast<uint64_t>(key) << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(index));
}
inline uint64_t rank_key(float score, int64_t index) { return rank_key(score_key(score), index); }

/// The index a rank_key was built from.
inline int64_t rank_index(uint64_t key) { return 0xFFFFFFFFu - static_cast<uint32_t>(key); }

}  // namespace mxi::detail
