// The two-level indexer (docs/semantics.md, entry point B): publishing a candidate pool from
// entry A, and entry B consuming one, on the reference and the threaded backend.
#include <algorithm>
#include <numeric>
#include <random>

#include "catch.hpp"
#include "check.hpp"
#include "host_run.hpp"
#include "workload.hpp"

using namespace mxi;
using namespace mxi::testing;

namespace {

std::vector<int32_t> pool_row(const host_result<indexer_args>& r, int64_t t) {
  const auto& p = r.args.candidates;
  return std::vector<int32_t>(r.candidates.begin() + t * p.stride,
                              r.candidates.begin() + t * p.stride + p.num_blocks);
}

/// Entry B arguments over `w` reading the pool `ids` ([T][ncb]).
candidate_indexer_args consume(const host_workload& w, const std::vector<int32_t>& ids, int ncb,
                               int cbs, int k) {
  candidate_indexer_args a = w.candidate_indexer();
  a.candidates.blocks = ids.data();
  a.candidates.stride = ncb;
  a.candidates.num_blocks = ncb;
  a.candidates.block_size = cbs;
  a.topk.k = a.topk.stride = k;
  return a;
}

}  // namespace

TEST_CASE("publishing: the best live blocks, newest pinned, ascending, -1 filled") {
  workload_spec s = small_shapes(prefill_spec({70, 300}, 21));
  s.topk = 16;
  const host_workload w = make_workload(s);
  for (int ncb : {1, 4, 40}) {
    indexer_args a = w.indexer();
    a.candidates.num_blocks = ncb;
    a.candidates.block_size = 8;
    for (backend b : host_backends) {
      const auto r = run_host(a, b);
      REQUIRE(r.st.ok());
      CHECK(check_indexer(w, r.args) == "");
      for (int64_t t = 0; t < w.num_tokens; ++t) {
        const int64_t live = (w.visible(t) + 7) / 8;
        const auto row = pool_row(r, t);
        INFO("ncb " << ncb << " token " << t);
        if (live > 0) CHECK(std::find(row.begin(), row.end(), live - 1) != row.end());
        if (live <= ncb) {
          std::vector<int32_t> expect(ncb, -1);
          std::iota(expect.begin(), expect.begin() + live, 0);
          CHECK(row == expect);
        }
      }
    }
  }
}

TEST_CASE("publishing: tied blocks go to the smaller id") {
  workload_spec s = small_shapes(decode_spec(2, 200, 2, 22));
  s.keys = key_pattern::all_equal;
  s.topk = 8;
  const host_workload w = make_workload(s);
  indexer_args a = w.indexer();
  a.candidates.num_blocks = 5;
  a.candidates.block_size = 8;
  for (backend b : host_backends) {
    const auto r = run_host(a, b);
    for (int64_t t = 0; t < w.num_tokens; ++t) {
      const int32_t newest = static_cast<int32_t>((w.visible(t) - 1) / 8);
      CHECK(pool_row(r, t) == std::vector<int32_t>{0, 1, 2, 3, newest});
    }
  }
}

TEST_CASE("consuming a published pool that covers every block equals entry A") {
  workload_spec s = small_shapes(decode_spec(2, 150, 3, 23));
  s.topk = 30;
  const host_workload w = make_workload(s);
  indexer_args a = w.indexer();
  a.candidates.num_blocks = 64;  // more than any row's live blocks
  a.candidates.block_size = 4;
  for (output_order order : {output_order::position, output_order::score}) {
    a.topk.order = order;
    for (backend b : host_backends) {
      const auto full = run_host(a, b);
      candidate_indexer_args c = consume(w, full.candidates, 64, 4, 30);
      c.topk.order = order;
      CHECK(run_host(c, b).topk == full.topk);
    }
  }
}

TEST_CASE("consuming: -1, repeated, unsorted and out-of-range ids") {
  workload_spec s = small_shapes(decode_spec(3, 120, 2, 24));
  s.topk = 20;
  const host_workload w = make_workload(s);
  const int ncb = 10, cbs = 8;
  // Clean rows: blocks 0, 3, 5 and each row's newest block, ascending, -1 filled.
  std::vector<int32_t> clean(static_cast<size_t>(w.num_tokens * ncb), -1), messy = clean;
  for (int64_t t = 0; t < w.num_tokens; ++t) {
    const int32_t newest = static_cast<int32_t>((w.visible(t) - 1) / cbs);
    const int32_t c[] = {0, 3, 5, newest};
    std::copy(std::begin(c), std::end(c), clean.begin() + t * ncb);
    const int32_t m[] = {newest, -1, 5, newest + 1, 3, -7, 0, 5, 1 << 30, newest};
    std::copy(std::begin(m), std::end(m), messy.begin() + t * ncb);
  }
  for (output_order order : {output_order::position, output_order::score}) {
    for (backend b : host_backends) {
      candidate_indexer_args tidy = consume(w, clean, ncb, cbs, 20);
      candidate_indexer_args odd = consume(w, messy, ncb, cbs, 20);
      tidy.topk.order = odd.topk.order = order;
      const auto expect = run_host(tidy, b);
      const auto got = run_host(odd, b);
      REQUIRE(got.st.ok());
      CHECK(got.error_word == 0);
      CHECK(got.topk == expect.topk);
      CHECK(check_candidate_indexer(w, got.args) == "");
    }
  }
}

TEST_CASE("consuming: at most k candidate positions are all listed, then -1") {
  workload_spec s = small_shapes(decode_spec(1, 200, 1, 25));
  const host_workload w = make_workload(s);
  const std::vector<int32_t> ids = {7, 2, -1, 2};  // 16 positions
  for (backend b : host_backends) {
    const auto r = run_host(consume(w, ids, 4, 8, 20), b);
    std::vector<int32_t> expect;
    for (int p = 16; p < 24; ++p) expect.push_back(p);
    for (int p = 56; p < 64; ++p) expect.push_back(p);
    expect.resize(20, -1);
    CHECK(r.topk == expect);
  }
}

TEST_CASE("consuming reads only the candidate positions' bytes") {
  workload_spec s = small_shapes(decode_spec(3, 400, 1, 26));
  s.topk = 12;
  host_workload w = make_workload(s);
  const int ncb = 6, cbs = 8;
  std::mt19937_64 rng(26);
  std::vector<int32_t> ids(static_cast<size_t>(w.num_tokens * ncb));
  for (int64_t t = 0; t < w.num_tokens; ++t)
    for (int i = 0; i < ncb; ++i)
      ids[t * ncb + i] = static_cast<int32_t>(rng() % ((w.visible(t) + cbs - 1) / cbs));
  for (backend b : host_backends) {
    const auto before = run_host(consume(w, ids, ncb, cbs, 12), b);
    // Poison every byte of every token that is not a candidate of its request (one token per
    // request here), padding and unused pages too: NaN scales and random values.
    host_workload poisoned = w;
    std::vector<char> keep(poisoned.kv_cache.size(), 0);
    const layout::page_shape shape{s.block_size, s.head_dim};
    for (int64_t t = 0; t < w.num_tokens; ++t)
      for (int i = 0; i < ncb; ++i)
        for (int64_t p = ids[t * ncb + i] * int64_t{cbs};
             p < std::min<int64_t>((ids[t * ncb + i] + 1) * int64_t{cbs}, w.visible(t)); ++p) {
          const int64_t page = w.block_table[w.request_of(t) * w.max_blocks + p / s.block_size];
          const int token = static_cast<int>(p % s.block_size);
          for (int c = 0; c < shape.chunks(); ++c) {
            const int64_t base = page * w.page_stride;
            for (int j = 0; j < format::block_bytes; ++j)
              keep[base + layout::linear::value_offset(shape, token, c) + j] = 1;
            keep[base + layout::linear::scale_offset(shape, token, c)] = 1;
          }
        }
    for (size_t i = 0; i < keep.size(); ++i)
      if (!keep[i]) poisoned.kv_cache[i] = 0xFF;
    const auto after = run_host(consume(poisoned, ids, ncb, cbs, 12), b);
    CHECK(after.topk == before.topk);
    CHECK(check_candidate_indexer(w, before.args) == "");
  }
}
