// Entry A (docs/semantics.md) on the reference and the threaded backend: what each token sees,
// how the top k is chosen, ordered and numbered, the logits output, layouts and page shapes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "catch.hpp"
#include "check.hpp"
#include "host_run.hpp"
#include "workload.hpp"

using namespace mxi;
using namespace mxi::testing;

namespace {

std::vector<int32_t> row_of(const std::vector<int32_t>& topk, const indexer_args& a, int64_t t) {
  return std::vector<int32_t>(topk.begin() + t * a.topk.stride,
                              topk.begin() + t * a.topk.stride + a.topk.k);
}

/// 0 .. n-1, then -1 up to k.
std::vector<int32_t> iota_row(int64_t n, int k) {
  std::vector<int32_t> row(k, -1);
  std::iota(row.begin(), row.begin() + std::min<int64_t>(n, k), 0);
  return row;
}

/// Sets every scale byte of every token in `page` to the E8M0 NaN.
void poison_page(host_workload& w, int64_t page) {
  const layout::page_shape shape{w.spec.block_size, w.spec.head_dim};
  for (int t = 0; t < w.spec.block_size; ++t)
    for (int c = 0; c < shape.chunks(); ++c)
      layout::dispatch(w.spec.layout, [&](auto L) {
        w.kv_cache[page * w.page_stride + decltype(L)::scale_offset(shape, t, c)] =
            format::nan_scale;
      });
}

}  // namespace

TEST_CASE("visibility: token i of request r sees floor((seq_len - n_r + i + 1) / c) positions") {
  // With k above every visible length, a row is exactly 0 .. visible-1 then -1.
  for (int c : {1, 2, 4}) {
    for (int next_n = 1; next_n <= 4; ++next_n) {
      workload_spec s = small_shapes(decode_spec(3, 60, next_n, 10 * c + next_n));
      s.compress_ratio = c;
      s.topk = 128;
      const host_workload w = make_workload(s);
      for (backend b : host_backends) {
        const auto r = run_host(w.indexer(), b);
        REQUIRE(r.st.ok());
        for (int req = 0; req < 3; ++req)
          for (int i = 0; i < next_n; ++i) {
            const int64_t t = req * next_n + i;
            const int64_t visible = (w.seq_lens[req] - next_n + i + 1) / c;
            INFO("c " << c << " next_n " << next_n << " token " << t);
            CHECK(row_of(r.topk, r.args, t) == iota_row(visible, s.topk));
          }
      }
    }
  }
}

TEST_CASE("visibility: ragged prefill, seq_len == n_r, and rows that see nothing") {
  for (int c : {1, 2, 4}) {
    workload_spec s = small_shapes(prefill_spec({1, 7, 30}, c));
    s.compress_ratio = c;
    s.topk = 64;
    const host_workload w = make_workload(s);
    for (backend b : host_backends) {
      const auto r = run_host(w.indexer(), b);
      REQUIRE(r.st.ok());
      for (int64_t t = 0; t < w.num_tokens; ++t) {
        const int req = w.request_of(t);
        const int64_t i = t - w.query_start_loc[req];  // seq_len == n_r: position i
        INFO("c " << c << " token " << t);
        CHECK(row_of(r.topk, r.args, t) == iota_row((i + 1) / c, s.topk));
      }
    }
  }
}

TEST_CASE("selection: identical keys tie, and ties go to the smaller position") {
  for (output_order order : {output_order::position, output_order::score}) {
    workload_spec s = small_shapes(decode_spec(2, 300, 2, 5));
    s.keys = key_pattern::all_equal;
    s.topk = 50;
    const host_workload w = make_workload(s);
    indexer_args a = w.indexer();
    a.topk.order = order;
    for (backend b : host_backends) {
      const auto r = run_host(a, b);
      for (int64_t t = 0; t < w.num_tokens; ++t) CHECK(row_of(r.topk, a, t) == iota_row(50, 50));
    }
  }
  workload_spec s = small_shapes(prefill_spec({200, 150}, 6));
  s.keys = key_pattern::few_distinct;
  s.topk = 40;
  const host_workload w = make_workload(s);
  for (output_order order : {output_order::position, output_order::score}) {
    indexer_args a = w.indexer();
    a.topk.order = order;
    for (backend b : host_backends) CHECK(check_indexer(w, run_host(a, b).args) == "");
  }
}

TEST_CASE("selection: NaN keys rank below everything, ties among them by position") {
  workload_spec s = small_shapes(decode_spec(1, 100, 1, 8));
  host_workload w = make_workload(s);
  poison_page(w, w.block_table[1]);  // positions 16 .. 31 score NaN
  indexer_args a = w.indexer();
  const int dropped = 10;  // fewer than the NaN positions: the largest NaN positions are left out
  a.topk.k = a.topk.stride = static_cast<int>(w.visible(0)) - dropped;
  for (backend b : host_backends) {
    const auto r = run_host(a, b);
    CHECK(check_indexer(w, r.args) == "");
    const auto row = row_of(r.topk, a, 0);
    for (int64_t p = 0; p < w.visible(0); ++p) {
      const bool left_out = p >= 32 - dropped && p < 32;
      CHECK((std::find(row.begin(), row.end(), p) == row.end()) == left_out);
    }
  }
}

TEST_CASE("selection: NaN and infinite weights") {
  workload_spec s = small_shapes(decode_spec(1, 120, 3, 9));
  s.topk = 20;
  host_workload w = make_workload(s);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  w.weights[0 * 16 + 3] = nan;  // token 0: every score NaN -> the smallest positions
  w.weights[1 * 16 + 5] = inf;  // token 1: +inf where head 5's dot > 0, NaN where it is 0
  w.weights[2 * 16 + 7] = -inf;
  for (output_order order : {output_order::position, output_order::score}) {
    indexer_args a = w.indexer();
    a.topk.order = order;
    for (backend b : host_backends) {
      const auto r = run_host(a, b);
      CHECK(check_indexer(w, r.args) == "");
      CHECK(row_of(r.topk, a, 0) == iota_row(20, 20));
    }
  }
}

TEST_CASE("selection: k = 1, k = 4096, k above every row, visible <= k") {
  for (int k : {1, 4096}) {
    workload_spec s = small_shapes(decode_spec(2, k == 1 ? 200 : 5000, 2, k));
    s.topk = k;
    const host_workload w = make_workload(s);
    for (output_order order : {output_order::position, output_order::score}) {
      indexer_args a = w.indexer();
      a.topk.order = order;
      for (backend b : host_backends) CHECK(check_indexer(w, run_host(a, b).args) == "");
    }
  }
  workload_spec s = small_shapes(decode_spec(2, 100, 1, 3));
  s.topk = 4096;
  const host_workload w = make_workload(s);
  for (backend b : host_backends) {
    const auto r = run_host(w.indexer(), b);
    for (int64_t t = 0; t < 2; ++t) CHECK(row_of(r.topk, r.args, t) == iota_row(w.visible(t), 4096));
  }
}

TEST_CASE("score order lists the k best by descending score, ties by position") {
  workload_spec s = small_shapes(prefill_spec({90, 260}, 12));
  s.topk = 70;
  const host_workload w = make_workload(s);
  indexer_args a = w.indexer();
  a.topk.order = output_order::score;
  a.logits.stride = w.max_model_len;
  for (backend b : host_backends) {
    const auto r = run_host(a, b);
    CHECK(check_indexer(w, r.args) == "");
    // Listed scores (this backend's own logits) never increase.
    for (int64_t t = 0; t < w.num_tokens; ++t) {
      const auto row = row_of(r.topk, a, t);
      for (size_t j = 1; j < row.size() && row[j] >= 0; ++j)
        CHECK(r.logits[t * a.logits.stride + row[j]] <= r.logits[t * a.logits.stride + row[j - 1]]);
    }
  }
}

TEST_CASE("cache-slot index space maps each position through the block table") {
  workload_spec s = small_shapes(decode_spec(3, 200, 2, 13));
  s.topk = 64;
  const host_workload w = make_workload(s);
  for (output_order order : {output_order::position, output_order::score}) {
    indexer_args a = w.indexer();
    a.topk.order = order;
    for (backend b : host_backends) {
      const auto by_position = run_host(a, b);
      a.topk.space = index_space::cache_slot;
      const auto by_slot = run_host(a, b);
      a.topk.space = index_space::position;
      CHECK(check_indexer(w, by_slot.args) == "");
      for (int64_t t = 0; t < w.num_tokens; ++t)
        for (int j = 0; j < s.topk; ++j) {
          const int32_t pos = by_position.topk[t * s.topk + j];
          CHECK(by_slot.topk[t * s.topk + j] == (pos < 0 ? -1 : cache_slot(w, w.request_of(t), pos)));
        }
    }
  }
}

// No unbalanced '[' in test names: Catch2 3's catch_discover_tests (the ROCm chroot's) then
// merges the following names into one CMake list element.
TEST_CASE("logits: the scores over 0 <= s < visible, -inf after when clean, untouched otherwise") {
  workload_spec s = small_shapes(prefill_spec({40, 3}, 14));
  s.compress_ratio = 2;
  s.topk = 8;
  const host_workload w = make_workload(s);
  for (bool clean : {false, true}) {
    indexer_args a = w.indexer();
    a.logits.stride = w.max_model_len + 5;
    a.logits.clean = clean;
    for (backend b : host_backends) {
      const auto r = run_host(a, b);
      CHECK(check_indexer(w, r.args) == "");
      for (int64_t t = 0; t < w.num_tokens; ++t) {
        const float* row = r.logits.data() + t * a.logits.stride;
        for (int64_t p = w.visible(t); p < a.logits.stride; ++p) {
          const bool cleaned = clean && p < w.max_model_len;
          CHECK(row[p] == (cleaned ? -std::numeric_limits<float>::infinity() : unwritten_logit));
        }
      }
    }
  }
}

TEST_CASE("every layout and padded page strides give bitwise identical results") {
  workload_spec s = small_shapes(decode_spec(2, 150, 2, 15));
  s.topk = 30;
  s.block_size = 32;  // whole runs of aiter32
  s.head_dim = 128;   // aiter16 splits a token's four scales over four lanes
  const host_workload linear = make_workload(s);
  s.layout = cache_layout::mfma16;
  const host_workload mfma = make_workload(s);
  s.layout = cache_layout::aiter32;
  const host_workload aiter32 = make_workload(s);
  s.layout = cache_layout::aiter16;
  const host_workload aiter16 = make_workload(s);
  // The same cache with 48 padding bytes a page, filled with NaN scale bytes.
  host_workload padded = linear;
  padded.page_stride = linear.page_stride + 48;
  padded.kv_cache.assign(static_cast<size_t>(padded.num_pages * padded.page_stride), 0xFF);
  for (int64_t p = 0; p < linear.num_pages; ++p)
    std::memcpy(&padded.kv_cache[p * padded.page_stride], &linear.kv_cache[p * linear.page_stride],
                static_cast<size_t>(linear.page_stride));
  for (backend b : host_backends) {
    std::vector<host_result<indexer_args>> runs;
    for (const host_workload* w : {&linear, &mfma, &aiter32, &aiter16,
                                   static_cast<const host_workload*>(&padded)}) {
      indexer_args a = w->indexer();
      a.logits.stride = w->max_model_len;
      a.candidates.num_blocks = 3;
      runs.push_back(run_host(a, b));
    }
    for (size_t i = 1; i < runs.size(); ++i) {
      CHECK(runs[i].topk == runs[0].topk);
      CHECK(runs[i].candidates == runs[0].candidates);
      CHECK(std::memcmp(runs[i].logits.data(), runs[0].logits.data(),
                        runs[0].logits.size() * sizeof(float)) == 0);
    }
    CHECK(check_indexer(linear, runs[0].args) == "");
  }
}

TEST_CASE("page sizes from 16 to 1024") {
  for (int bs : {16, 48, 128, 256, 1024}) {
    workload_spec s = small_shapes(decode_spec(2, 1100, 2, bs));
    s.block_size = bs;
    s.topk = 100;
    s.layout = bs % 32 ? cache_layout::mfma16 : cache_layout::linear;
    const host_workload w = make_workload(s);
    INFO("BS " << bs);
    for (backend b : host_backends) CHECK(check_indexer(w, run_host(w.indexer(), b).args) == "");
  }
}

TEST_CASE("reference against a hand-built problem whose answer is forced") {
  // Queries are all ones (code 2, scale 2^0), weights 1. Key p holds a single 1.0 at element 0
  // with scale 2^((p % 20) - 10): score(p) = H * 2^((p % 20) - 10), so the best positions are
  // those with the largest p % 20, ties (p and p + 20) to the smaller position.
  workload_spec s = small_shapes(decode_spec(1, 200, 1, 16));
  s.topk = 25;
  host_workload w = make_workload(s);
  std::fill(w.q_values.begin(), w.q_values.end(), 0x22);
  std::fill(w.q_scales.begin(), w.q_scales.end(), 127);
  std::fill(w.weights.begin(), w.weights.end(), 1.0f);
  const layout::page_shape shape{s.block_size, s.head_dim};
  const int64_t visible = w.visible(0);
  std::vector<uint8_t> values(s.head_dim / 2), scales(s.head_dim / 32);
  for (int64_t p = 0; p < visible; ++p) {
    std::fill(values.begin(), values.end(), 0);
    std::fill(scales.begin(), scales.end(), 127);
    values[0] = 0x02;
    scales[0] = static_cast<uint8_t>(127 + p % 20 - 10);
    layout::write_token<layout::linear>(&w.kv_cache[w.block_table[p / s.block_size] * w.page_stride],
                                        shape, static_cast<int>(p % s.block_size), values.data(),
                                        scales.data());
  }
  std::vector<int64_t> order(static_cast<size_t>(visible));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [](int64_t a, int64_t b) { return a % 20 > b % 20; });
  indexer_args a = w.indexer();
  a.topk.order = output_order::score;
  a.logits.stride = w.max_model_len;
  for (backend b : host_backends) {
    const auto r = run_host(a, b);
    for (int j = 0; j < 25; ++j) CHECK(r.topk[j] == order[j]);
    for (int64_t p = 0; p < visible; ++p)
      CHECK(r.logits[p] == std::ldexp(16.0f, static_cast<int>(p % 20) - 10));
  }
}

TEST_CASE("the checker rejects wrong rows") {
  workload_spec s = small_shapes(decode_spec(1, 120, 1, 17));
  s.topk = 10;
  const host_workload w = make_workload(s);
  const auto r = run_host(w.indexer(), backend::reference);
  const row_truth truth = exact_row(w, 0);
  REQUIRE(check_topk_row(w, truth, r.topk.data(), r.args.topk) == "");
  std::vector<int32_t> row(r.topk.begin(), r.topk.begin() + 10);
  // The worst position instead of a chosen one.
  const auto worst = std::min_element(truth.score.begin(), truth.score.end()) - truth.score.begin();
  auto bad = row;
  bad[0] = static_cast<int32_t>(worst);
  std::sort(bad.begin(), bad.end());
  CHECK(check_topk_row(w, truth, bad.data(), r.args.topk) != "");
  bad = row;
  std::swap(bad[0], bad[1]);
  CHECK(check_topk_row(w, truth, bad.data(), r.args.topk) != "");  // not ascending
  bad = row;
  bad[1] = bad[0];
  CHECK(check_topk_row(w, truth, bad.data(), r.args.topk) != "");  // repeated
  bad = row;
  bad[9] = -1;
  CHECK(check_topk_row(w, truth, bad.data(), r.args.topk) != "");  // early -1
  // Identical keys: choosing a larger position over a smaller one breaks the tie rule.
  workload_spec e = s;
  e.keys = key_pattern::all_equal;
  const host_workload eq = make_workload(e);
  const row_truth tie = exact_row(eq, 0);
  std::vector<int32_t> late(10);
  std::iota(late.begin(), late.end(), 1);
  CHECK(check_topk_row(eq, tie, late.data(), r.args.topk) != "");
}
