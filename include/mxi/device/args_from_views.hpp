// The device launchers' argument structs built from the public views (types.hpp): the GPU backend,
// the GPU tests and the benches fill them here, in one place, rather than field by field.
#pragma once

#include <cstdint>

#include "mxi/device/paged_logits.hpp"
#include "mxi/device/row_info.hpp"
#include "mxi/types.hpp"

namespace mxi::device {

/// What launch_row_info checks and derives for the queries' tokens.
inline row_info_problem row_info_problem_of(const query_view& q, const cache_view& c,
                                            const request_view& r, int compress_ratio,
                                            int64_t max_model_len) {
  row_info_problem p;
  p.query_start_loc = r.query_start_loc;
  p.seq_lens = r.seq_lens;
  p.block_table = r.block_table;
  p.num_requests = r.num_requests;
  p.block_table_stride = r.block_table_stride;
  p.num_tokens = q.num_tokens;
  p.num_pages = c.num_pages;
  p.block_size = c.block_size;
  p.compress_ratio = compress_ratio;
  p.max_model_len = max_model_len;
  return p;
}

/// The logits kernels' inputs over `rows` (from launch_row_info with the same compress ratio),
/// every row of the queries; the caller sets the output (out, ld, width, clean) and, in candidate
/// mode, the candidate fields.
inline paged_logits_args paged_logits_args_of(const query_view& q, const cache_view& c,
                                              const request_view& r, int compress_ratio,
                                              const row_info* rows) {
  paged_logits_args a;
  a.q_values = q.values;
  a.q_scales = q.scales;
  a.weights = q.weights;
  a.num_heads = q.num_heads;
  a.cache = c.data;
  a.num_pages = c.num_pages;
  a.page_stride = c.page_stride;
  a.block_size = c.block_size;
  a.layout = c.layout;
  a.block_table = r.block_table;
  a.block_table_stride = r.block_table_stride;
  a.query_start_loc = r.query_start_loc;
  a.seq_lens = r.seq_lens;
  a.compress_ratio = compress_ratio;
  a.num_requests = r.num_requests;
  a.rows = rows;
  a.row_begin = 0;
  a.row_end = q.num_tokens;
  return a;
}

}  // namespace mxi::device
