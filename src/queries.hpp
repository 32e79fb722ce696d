// Floating-point queries (query_view::q) stand for a quantize_q call: every backend quantizes them
// through the arguments built here, so a call given float queries scores the bytes quantize_q
// would have written.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mxi/mxi.hpp"

namespace mxi::detail {

/// Packed E2M1 bytes of the queries, [T][H][D/2].
inline size_t query_value_bytes(const query_view& q) {
  return static_cast<size_t>(q.num_tokens) * q.num_heads * (q.head_dim / 2);
}

/// E8M0 bytes of the queries, [T][H][D/32].
inline size_t query_scale_bytes(const query_view& q) {
  return static_cast<size_t>(q.num_tokens) * q.num_heads * (q.head_dim / format::block_elems);
}

/// quantize_q's arguments for the float queries of `q`, written to `values` and `scales`.
inline q_quantize_args quantize_args_of(const query_view& q, uint8_t* values, uint8_t* scales) {
  q_quantize_args a;
  a.q = q.q;
  a.q_type = q.q_type;
  a.num_tokens = q.num_tokens;
  a.num_heads = q.num_heads;
  a.head_dim = q.head_dim;
  a.values = values;
  a.scales = scales;
  a.rule = q.rule;
  return a;
}

}  // namespace mxi::detail
