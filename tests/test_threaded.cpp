// The threaded fp32 CPU backend against the exact checker on many random problems, and its
// bitwise determinism across thread counts.
#include <omp.h>

#include <random>

#include "catch.hpp"
#include "check.hpp"
#include "host_run.hpp"
#include "workload.hpp"

using namespace mxi;
using namespace mxi::testing;

namespace {

/// A random small problem: shapes, batch kind and options all drawn from `seed`.
struct random_case {
  workload_spec spec;
  output_order order;
  index_space space;
  int publish_blocks;  ///< 0: no candidate pool
  bool logits;
};

random_case draw(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::initializer_list<int> v) { return *(v.begin() + rng() % v.size()); };
  random_case c;
  if (rng() % 2) {
    c.spec = decode_spec(pick({1, 2, 3}), pick({40, 150, 500}), pick({1, 2, 4}), seed);
  } else {
    std::vector<int32_t> lens;
    for (int r = pick({1, 2, 3}); r > 0; --r) lens.push_back(pick({1, 5, 17, 40}));
    c.spec = prefill_spec(lens, seed);
  }
  c.spec.num_heads = pick({16, 32, 64});
  c.spec.head_dim = pick({32, 64, 128});
  c.spec.block_size = pick({16, 32, 64});
  c.spec.compress_ratio = pick({1, 1, 2, 4});
  c.spec.topk = pick({1, 8, 33, 100, 256});
  c.spec.layout = rng() % 2 ? cache_layout::linear : cache_layout::mfma16;
  c.spec.keys = rng() % 4 == 0 ? key_pattern::few_distinct : key_pattern::gaussian;
  c.spec.page_padding = pick({0, 0, 32});
  c.order = rng() % 2 ? output_order::score : output_order::position;
  c.space = rng() % 3 == 0 ? index_space::cache_slot : index_space::position;
  c.publish_blocks = pick({0, 0, 2, 16});
  c.logits = rng() % 3 == 0;
  return c;
}

indexer_args args_for(const host_workload& w, const random_case& c) {
  indexer_args a = w.indexer();
  a.topk.order = c.order;
  a.topk.space = c.space;
  a.candidates.num_blocks = c.publish_blocks;
  a.candidates.block_size = 8;
  if (c.logits) {
    a.logits.stride = w.max_model_len + 3;
    a.logits.clean = true;
  }
  return a;
}

}  // namespace

TEST_CASE("threaded entry A agrees with the exact checker on random problems") {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const random_case c = draw(seed);
    const host_workload w = make_workload(c.spec);
    INFO("seed " << seed << " H " << c.spec.num_heads << " D " << c.spec.head_dim << " BS "
                 << c.spec.block_size << " c " << c.spec.compress_ratio << " k " << c.spec.topk);
    for (backend b : {backend::reference, backend::cpu}) {
      const auto r = run_host(args_for(w, c), b);
      REQUIRE(r.st.ok());
      CHECK(r.error_word == 0);
      CHECK(check_indexer(w, r.args) == "");
    }
  }
}

TEST_CASE("threaded entry B agrees with the exact checker on random candidate rows") {
  for (uint64_t seed = 101; seed <= 130; ++seed) {
    const random_case c = draw(seed);
    const host_workload w = make_workload(c.spec);
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    const int ncb = 1 + static_cast<int>(rng() % 12);
    std::vector<int32_t> ids(static_cast<size_t>(w.num_tokens * ncb));
    for (int32_t& id : ids) id = static_cast<int32_t>(rng() % 80) - 8;  // some -1, some too large
    candidate_indexer_args a = w.candidate_indexer();
    a.topk.order = c.order;
    a.topk.space = c.space;
    a.candidates.blocks = ids.data();
    a.candidates.stride = ncb;
    a.candidates.num_blocks = ncb;
    a.candidates.block_size = 1 + static_cast<int>(rng() % 16);
    for (backend b : {backend::reference, backend::cpu}) {
      const auto r = run_host(a, b);
      REQUIRE(r.st.ok());
      CHECK(check_candidate_indexer(w, r.args) == "");
    }
  }
}

TEST_CASE("threaded path on a realistic shape: H 64, D 128, BS 64, K 2048") {
  workload_spec s = decode_spec(2, 3000, 2, 7);
  s.topk = 2048;
  const host_workload w = make_workload(s);
  indexer_args a = w.indexer();
  a.topk.order = output_order::score;
  a.candidates.num_blocks = 64;
  const auto r = run_host(a, backend::cpu);
  REQUIRE(r.st.ok());
  CHECK(check_indexer(w, r.args) == "");
}

TEST_CASE("threaded results are bitwise identical for every thread count") {
  workload_spec s = prefill_spec({300, 90, 1}, 11);
  s.num_heads = 32;
  s.topk = 64;
  s.compress_ratio = 2;
  const host_workload w = make_workload(s);
  indexer_args a = w.indexer();
  a.logits.stride = w.max_model_len;
  a.logits.clean = true;
  a.candidates.num_blocks = 4;
  const auto one = run_host(a, backend::cpu, 1);
  const auto all = run_host(a, backend::cpu, std::max(2, omp_get_max_threads()));
  REQUIRE(one.st.ok());
  REQUIRE(all.st.ok());
  CHECK(one.topk == all.topk);
  CHECK(one.candidates == all.candidates);
  CHECK(std::memcmp(one.logits.data(), all.logits.data(), one.logits.size() * sizeof(float)) == 0);
}
