// What each query token's row sees, and the device-data checks of docs/semantics.md ("Bad
// input"), on the host. The reference, the threaded backend and validate() all call these, so
// they agree on which rows are broken and which bit each sets.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mxi/mxi.hpp"

namespace mxi::detail {

/// One query token's row: its request, its visible (compressed) length, and the device_error bits
/// that make it an all -1 row (0: the row is computed).
struct row_plan {
  int request = -1;
  int64_t visible = 0;
  uint32_t error = device_error_none;
};

/// query_start_loc[0] = 0, non-decreasing, query_start_loc[R] = T.
inline bool query_start_loc_ok(const request_view& req, int64_t num_tokens) {
  const int32_t* q = req.query_start_loc;
  if (q[0] != 0 || q[req.num_requests] != num_tokens) return false;
  for (int r = 0; r < req.num_requests; ++r)
    if (q[r + 1] < q[r]) return false;
  return true;
}

/// seq_lens[r] >= n_r (so also >= 0).
inline bool seq_len_ok(const request_view& req, int r) {
  return req.seq_lens[r] >= req.query_start_loc[r + 1] - req.query_start_loc[r];
}

/// Page id holding block-table column `column` of request r, or -1 when the table has too few
/// columns or the id is outside [0, NB).
inline int64_t page_of_column(const request_view& req, int64_t num_pages, int r, int64_t column) {
  if (column >= req.block_table_stride) return -1;
  const int64_t page = req.block_table[r * req.block_table_stride + column];
  return page >= 0 && page < num_pages ? page : -1;
}

/// Whether every page covering positions [0, visible) of request r is usable: both entry points
/// need it (docs/semantics.md, what a token sees), entry B too, whose candidates may read only
/// some of those pages.
inline bool pages_cover(const request_view& req, const cache_view& cache, int r, int64_t visible) {
  const int64_t columns = (visible + cache.block_size - 1) / cache.block_size;
  for (int64_t c = 0; c < columns; ++c)
    if (page_of_column(req, cache.num_pages, r, c) < 0) return false;
  return true;
}

/// Row of token t of an entry point's batch, given a well-formed query_start_loc: request,
/// visible length, and the first of the seq_len, max_model_len and block-table bits.
template <class Args>
row_plan plan_row(const Args& a, int64_t t) {
  const request_view& req = a.requests;
  const int32_t* q = req.query_start_loc;
  // Empty requests repeat a start value; upper_bound skips them and lands on the owner.
  const int r = static_cast<int>(std::upper_bound(q, q + req.num_requests + 1, t) - q) - 1;
  row_plan row;
  row.request = r;
  if (!seq_len_ok(req, r)) {
    row.error = device_error_seq_len;
    return row;
  }
  const int64_t n = q[r + 1] - q[r];
  const int64_t p = static_cast<int64_t>(req.seq_lens[r]) - n + (t - q[r]);
  row.visible = (p + 1) / a.compress_ratio;
  if (row.visible > a.max_model_len) {
    row.error = device_error_max_model_len;
    row.visible = 0;
  } else if (!pages_cover(req, a.cache, r, row.visible)) {
    row.error = device_error_block_table;
  }
  return row;
}

/// Plans every row; a malformed query_start_loc breaks every row (no token's request is known).
template <class Args>
std::vector<row_plan> plan_rows(const Args& a) {
  const int64_t num_tokens = a.queries.num_tokens;
  std::vector<row_plan> rows(static_cast<size_t>(num_tokens));
  if (num_tokens == 0) return rows;  // query_start_loc may be null then
  if (!query_start_loc_ok(a.requests, num_tokens)) {
    for (row_plan& row : rows) row.error = device_error_query_start_loc;
    return rows;
  }
  for (int64_t t = 0; t < num_tokens; ++t) rows[t] = plan_row(a, t);
  return rows;
}

/// The visible positions a candidate row names, ascending and unique: ids < 0, repeated, or whose
/// block holds no visible position are skipped (semantics.md, entry point B).
inline void candidate_positions(const int32_t* ids, int num_blocks, int block_size,
                                int64_t visible, std::vector<int64_t>& positions) {
  std::vector<int64_t> blocks;
  blocks.reserve(static_cast<size_t>(num_blocks));
  for (int i = 0; i < num_blocks; ++i)
    if (ids[i] >= 0 && static_cast<int64_t>(ids[i]) * block_size < visible) blocks.push_back(ids[i]);
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  positions.clear();
  for (int64_t j : blocks)
    for (int64_t pos = j * block_size; pos < std::min((j + 1) * block_size, visible); ++pos)
      positions.push_back(pos);
}

}  // namespace mxi::detail
