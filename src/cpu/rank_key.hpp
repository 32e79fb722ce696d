// The CPU backends' selection keys: a score's order-preserving image (block::score_key, the one
// the GPU select ranks by) joined with its position or id, so that selection is a plain integer
// comparison under the contract's ranking NaN < -inf < finite < +inf, -0 == +0, ties to the
// smaller position or id.
#pragma once

#include <cstdint>

#include "mxi/block/radix_key.hpp"

namespace mxi::detail {

/// Key of (score key, index): larger is better, and equal scores prefer the smaller index
/// (indices are < 2^32).
inline uint64_t rank_key(uint32_t key, int64_t index) {
  return (static_cast<uint64_t>(key) << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(index));
}
inline uint64_t rank_key(float score, int64_t index) {
  return rank_key(block::score_key(score), index);
}

/// The index a rank_key was built from.
inline int64_t rank_index(uint64_t key) { return 0xFFFFFFFFu - static_cast<uint32_t>(key); }

}  // namespace mxi::detail
