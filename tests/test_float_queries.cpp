// Float queries (query_view::q) on the host backends: a call given fp32 or bf16 queries returns the
// bits of quantize_q followed by the same call on the quantized queries, for both entry points,
// every option of the random cases, both scale rules, and broken rows.
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "float_queries.hpp"
#include "host_run.hpp"
#include "random_case.hpp"
#include "workload.hpp"

using namespace mxi;
using namespace mxi::testing;

namespace {

/// `a` with the queries quantize_q makes of `q` on backend `b` (kept in `values`, `scales`).
template <class Args>
Args with_quantized_queries(Args a, const float_queries& q, backend b, std::vector<uint8_t>& values,
                            std::vector<uint8_t>& scales) {
  const size_t elems = static_cast<size_t>(q.num_tokens) * q.num_heads * q.head_dim;
  values.assign(elems / 2, 0);
  scales.assign(elems / format::block_elems, 0);
  execution exec;
  exec.where = b;
  REQUIRE(quantize_q(q.quantize_args(values.data(), scales.data()), exec).ok());
  a.queries.values = values.data();
  a.queries.scales = scales.data();
  return a;
}

/// Runs `a` on backend `b` both ways (float queries into the call; quantize_q, then the call) and
/// checks that every output holds the same bits.
template <class Args>
void expect_same_bits(const Args& a, const float_queries& q, backend b) {
  std::vector<uint8_t> values, scales;
  const auto quantized = run_host(with_quantized_queries(a, q, b, values, scales), b);
  const auto floats = run_host(with_float_queries(a, q, q.bytes.data()), b);
  REQUIRE(quantized.st.ok());
  REQUIRE(floats.st.message() == "");
  CHECK(floats.error_word == quantized.error_word);
  CHECK(floats.topk == quantized.topk);
  CHECK(floats.candidates == quantized.candidates);
  CHECK(same_bits(floats.logits, quantized.logits));
}

constexpr float_type float_types[] = {float_type::f32, float_type::bf16};

format::scale_rule rule_of(uint64_t seed) {
  return seed % 2 ? format::scale_rule::floor : format::scale_rule::ceil;
}

}  // namespace

TEST_CASE("float queries: entry A gives the bits of quantize_q, then the call") {
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    const random_case c = draw_random_case(seed, case_scale::cpu);
    const host_workload w = make_workload(c.spec);
    indexer_args a = random_case_args(w, c);
    if (seed % 3 == 0) a.logits.stride = w.max_model_len;  // logits on every third case at least
    for (const float_type type : float_types) {
      const float_queries q = draw_float_queries(w, type, rule_of(seed), seed);
      INFO("seed " << seed << " H " << c.spec.num_heads << " D " << c.spec.head_dim << " type "
                   << int(type) << " rule " << int(q.rule));
      for (const backend b : host_backends) expect_same_bits(a, q, b);
    }
  }
}

TEST_CASE("float queries: entry B gives the bits of quantize_q, then the call") {
  for (uint64_t seed = 101; seed <= 124; ++seed) {
    const random_case c = draw_random_case(seed, case_scale::cpu);
    const host_workload w = make_workload(c.spec);
    const random_pool pool = draw_random_pool(seed, w, case_scale::cpu);
    const candidate_indexer_args a = random_pool_args(w, c, pool);
    for (const float_type type : float_types) {
      const float_queries q = draw_float_queries(w, type, rule_of(seed), seed);
      INFO("seed " << seed << " type " << int(type) << " rule " << int(q.rule));
      for (const backend b : host_backends) expect_same_bits(a, q, b);
    }
  }
}

TEST_CASE("float queries: broken rows and their error bits are those of the quantized call") {
  host_workload w = make_workload(small_shapes(decode_spec(4, 300, 2, 41)));
  w.block_table[1 * w.max_blocks + 2] = static_cast<int32_t>(w.num_pages + 7);  // request 1
  w.seq_lens[2] = 1;                                                             // < n_2 = 2
  indexer_args a = w.indexer();
  a.topk.k = a.topk.stride = 16;
  a.logits.stride = w.max_model_len;
  a.logits.clean = true;
  const float_queries q = draw_float_queries(w, float_type::bf16, format::scale_rule::ceil, 5);
  for (const backend b : host_backends) {
    expect_same_bits(a, q, b);
    CHECK(run_host(with_float_queries(a, q, q.bytes.data()), b).error_word ==
          (device_error_block_table | device_error_seq_len));
  }
}

TEST_CASE("float queries: the rule is the call's own (ceil and floor score differently)") {
  // The comparison above could not tell the rules apart if the call ignored queries.rule: with
  // blocks at 25 binades, the two rules' quantized queries score differently.
  const host_workload w = make_workload(small_shapes(decode_spec(2, 200, 1, 43)));
  indexer_args a = w.indexer();
  a.topk.k = a.topk.stride = 16;
  a.logits.stride = w.max_model_len;
  const float_queries ceil = draw_float_queries(w, float_type::f32, format::scale_rule::ceil, 7);
  float_queries floor = ceil;
  floor.rule = format::scale_rule::floor;
  for (const backend b : host_backends) {
    const auto by_ceil = run_host(with_float_queries(a, ceil, ceil.bytes.data()), b);
    const auto by_floor = run_host(with_float_queries(a, floor, floor.bytes.data()), b);
    REQUIRE(by_ceil.st.ok());
    REQUIRE(by_floor.st.ok());
    CHECK_FALSE(same_bits(by_ceil.logits, by_floor.logits));
    expect_same_bits(a, floor, b);
  }
}
