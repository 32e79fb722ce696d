// The threaded fp32 CPU backend against the exact checker on many random problems, and its
// bitwise determinism across thread counts.
#include <omp.h>

#include "catch.hpp"
#include "check.hpp"
#include "host_run.hpp"
#include "random_case.hpp"
#include "workload.hpp"

using namespace mxi;
using namespace mxi::testing;

namespace {


}  // namespace

TEST_CASE("threaded entry A agrees with the exact checker on random problems") {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const random_case c = draw_random_case(seed, case_scale::cpu);
    const host_workload w = make_workload(c.spec);
    INFO("seed " << seed << " H " << c.spec.num_heads << " D " << c.spec.head_dim << " BS "
                 << c.spec.block_size << " c " << c.spec.compress_ratio << " k " << c.spec.topk);
    for (backend b : {backend::reference, backend::cpu}) {
      const auto r = run_host(random_case_args(w, c), b);
      REQUIRE(r.st.ok());
      CHECK(r.error_word == 0);
      CHECK(check_indexer(w, r.args) == "");
    }
  }
}

TEST_CASE("threaded entry B agrees with the exact checker on random candidate rows") {
  for (uint64_t seed = 101; seed <= 130; ++seed) {
    const random_case c = draw_random_case(seed, case_scale::cpu);
    const host_workload w = make_workload(c.spec);
    INFO("seed " << seed);
    const random_pool pool = draw_random_pool(seed, w, case_scale::cpu);
    const candidate_indexer_args a = random_pool_args(w, c, pool);
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
