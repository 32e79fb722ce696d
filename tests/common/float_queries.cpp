#include "float_queries.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace mxi::testing {

q_quantize_args float_queries::quantize_args(uint8_t* values, uint8_t* scales,
                                             const void* q) const {
  q_quantize_args a;
  a.q = q != nullptr ? q : bytes.data();
  a.q_type = type;
  a.num_tokens = num_tokens;
  a.num_heads = num_heads;
  a.head_dim = head_dim;
  a.values = values;
  a.scales = scales;
  a.rule = rule;
  return a;
}

float_queries draw_float_queries(const host_workload& w, float_type type, format::scale_rule rule,
                                 uint64_t seed) {
  float_queries q;
  q.type = type;
  q.rule = rule;
  q.num_tokens = w.num_tokens;
  q.num_heads = w.spec.num_heads;
  q.head_dim = w.spec.head_dim;
  const size_t n = static_cast<size_t>(q.num_tokens) * q.num_heads * q.head_dim;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(n);
  float scale = 1.0f;
  for (size_t i = 0; i < n; ++i) {
    if (i % format::block_elems == 0) scale = std::ldexp(1.0f, static_cast<int>(rng() % 25) - 12);
    x[i] = normal(rng) * scale;
  }
  if (n > 2 * format::block_elems) {
    x[n / 2] = std::numeric_limits<float>::quiet_NaN();  // its block: scale byte 255
    for (int i = 0; i < format::block_elems; ++i) x[format::block_elems + i] = 0.0f;
  }
  const size_t elem = type == float_type::f32 ? 4 : 2;
  q.bytes.resize(n * elem);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    if (type == float_type::f32) {
      std::memcpy(&q.bytes[4 * i], &bits, 4);
    } else {
      const uint16_t b = static_cast<uint16_t>(bits >> 16);  // bf16 by truncation
      std::memcpy(&q.bytes[2 * i], &b, 2);
    }
  }
  return q;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace mxi::testing
