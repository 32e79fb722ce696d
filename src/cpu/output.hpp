// Writing result rows, shared by the CPU backends: top-k rows in either index space, failed rows,
// and the candidate pool a source layer publishes (semantics.md, entry points A and B).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cpu/rank_key.hpp"
#include "cpu/rows.hpp"
#include "mxi/mxi.hpp"

namespace mxi::detail {

/// Writes row t of the top-k output: `chosen` (n positions, already in the requested order) in the
/// requested index space, then -1 up to k. The pages of `chosen` were checked by the caller.
inline void write_topk_row(const topk_output& out, int64_t t, const int64_t* chosen, int64_t n,
                           const request_view& req, const cache_view& cache, int request) {
  int32_t* row = out.indices + t * out.stride;
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = chosen[i];
    if (out.space == index_space::cache_slot)
      v = page_of_column(req, cache.num_pages, request, v / cache.block_size) * cache.block_size +
          v % cache.block_size;
    row[i] = static_cast<int32_t>(v);
  }
  std::fill(row + n, row + out.k, -1);
}

/// The outputs of a row the device-data checks rejected: top-k and candidates all -1, and the
/// logits row -inf over [0, max_model_len) when cleaning (untouched otherwise).
inline void write_failed_row(const topk_output& topk, const logits_output* logits,
                             const candidate_pool_output* pool, int64_t max_model_len, int64_t t) {
  std::fill(topk.indices + t * topk.stride, topk.indices + t * topk.stride + topk.k, -1);
  if (pool && pool->blocks)
    std::fill(pool->blocks + t * pool->stride, pool->blocks + t * pool->stride + pool->num_blocks,
              -1);
  if (logits && logits->data && logits->clean)
    std::fill(logits->data + t * logits->stride, logits->data + t * logits->stride + max_model_len,
              -std::numeric_limits<float>::infinity());
}

/// Writes a computed logits row: the scores over [0, visible), then -inf up to max_model_len when
/// cleaning.
inline void write_logits_row(const logits_output& logits, int64_t t, const float* scores,
                             int64_t visible, int64_t max_model_len) {
  float* row = logits.data + t * logits.stride;
  std::copy(scores, scores + visible, row);
  if (logits.clean)
    std::fill(row + visible, row + max_model_len, -std::numeric_limits<float>::infinity());
}

/// OR-s a call's device_error bits into the caller's error word (host memory here).
inline void report_errors(const execution& exec, uint32_t bits) {
  if (exec.error_word != nullptr && bits != device_error_none) *exec.error_word |= bits;
}

/// Publishes row t's candidate pool from its scores over [0, visible): the live blocks with the
/// largest block score (the max score over the block's visible positions, NaN lowest), the block
/// of position visible-1 counting as +inf, ties to the smaller id; ascending ids, then -1.
inline void publish_candidates(const candidate_pool_output& pool, int64_t t, const float* scores,
                               int64_t visible, std::vector<uint64_t>& keys) {
  int32_t* row = pool.blocks + t * pool.stride;
  const int64_t cbs = pool.block_size;
  const int64_t live = (visible + cbs - 1) / cbs;
  int64_t n = 0;
  if (live <= pool.num_blocks) {
    for (; n < live; ++n) row[n] = static_cast<int32_t>(n);
  } else {
    keys.resize(static_cast<size_t>(live));
    for (int64_t j = 0; j < live; ++j) {
      uint32_t best = 0;
      for (int64_t pos = j * cbs; pos < std::min((j + 1) * cbs, visible); ++pos)
        best = std::max(best, block::score_key(scores[pos]));
      keys[j] = rank_key(best, j);
    }
    keys[live - 1] = rank_key(std::numeric_limits<float>::infinity(), live - 1);
    std::nth_element(keys.begin(), keys.begin() + pool.num_blocks, keys.end(),
                     std::greater<uint64_t>());
    for (; n < pool.num_blocks; ++n) row[n] = static_cast<int32_t>(rank_index(keys[n]));
    std::sort(row, row + n);
  }
  std::fill(row + n, row + pool.num_blocks, -1);
}

}  // namespace mxi::detail
