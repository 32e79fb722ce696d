// Floating-point queries for a workload's shape ([T][H][D], fp32 or bf16), for the tests of calls
// that quantize their queries themselves (query_view::q) against quantize_q, then the call.
#pragma once

#include <cstdint>
#include <vector>

#include "workload.hpp"

namespace mxi::testing {

struct float_queries {
  float_type type = float_type::f32;
  format::scale_rule rule = format::scale_rule::ceil;
  int64_t num_tokens = 0;
  int num_heads = 0, head_dim = 0;
  std::vector<uint8_t> bytes;  ///< T * H * D elements of `type`

  /// quantize_q's arguments for these queries (host memory unless `q` says otherwise).
  q_quantize_args quantize_args(uint8_t* values, uint8_t* scales, const void* q = nullptr) const;
};

/// N(0, 1) queries for `w`'s tokens and heads, each 32-element block scaled by its own power of two
/// in [2^-12, 2^12] (so the two scale rules pick different exponents), with one NaN and one
/// all-zero block.
float_queries draw_float_queries(const host_workload& w, float_type type, format::scale_rule rule,
                                 uint64_t seed);

/// `a` taking `q` (at `data`, in the memory the call runs on) as its queries: values and scales
/// null, the weights kept.
template <class Args>
Args with_float_queries(Args a, const float_queries& q, const void* data) {
  a.queries.values = nullptr;
  a.queries.scales = nullptr;
  a.queries.q = data;
  a.queries.q_type = q.type;
  a.queries.rule = q.rule;
  return a;
}

/// Whether two float buffers hold the same bits (NaN included, which == would call unequal).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace mxi::testing
