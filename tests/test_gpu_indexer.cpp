// The GPU backend through the host API: the CPU cases on the GPU (same generators, same exact
// checker), identical to the CPU where the contract fixes the answer (visible <= k rows, ties,
// candidate pools, index spaces, broken rows), within tolerance elsewhere; float queries bit for
// bit as quantize_q then the call; then the large shapes, determinism across batches and the
// device error bits. Without a GPU every case skips visibly.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "catch.hpp"
#include "check.hpp"
#include "device_buffer.hpp"
#include "device_inputs.hpp"
#include "float_queries.hpp"
#include "host_run.hpp"
#include "random_case.hpp"
#include "skip.hpp"
#include "workload.hpp"

using namespace mxi;
using namespace mxi::testing;

namespace {

#define REQUIRE_GPU()                                                  \
  if (!gpu_present() || !backend_available(backend::gpu))             \
  MXI_SKIP("no GPU: the GPU backend tests need a device and MXI_BACKEND=cuda or hip")

/// Runs `d` (device pointers) with a poisoned workspace of exactly the size asked for.
template <class Args>
status run_on_gpu(const Args& d, uint32_t* error_word) {
  size_t bytes = 0;
  const status s = workspace_bytes(d, backend::gpu, bytes);
  if (!s.ok()) return s;
  device_buffer<char> workspace(bytes);
  workspace.fill_bytes(0xA5);
  execution exec;
  exec.where = backend::gpu;
  exec.workspace = workspace.data();
  exec.workspace_bytes = bytes;
  exec.error_word = error_word;
  status st;
  if constexpr (std::is_same_v<Args, indexer_args>) st = run_indexer(d, exec);
  else st = run_candidate_indexer(d, exec);
  gpu_check(platform::device_synchronize(), "synchronize");
  return st;
}

/// Entry A on the GPU, outputs sized like run_host's; the result's args point at host copies.
host_result<indexer_args> run_gpu(indexer_args a) {
  host_result<indexer_args> r;
  const device_inputs in(a);
  indexer_args d = a;
  in.point(d);
  const size_t t = static_cast<size_t>(a.queries.num_tokens);
  device_buffer<int32_t> topk(t * a.topk.stride), candidates;
  device_buffer<float> logits;
  topk.fill_bytes(0x7F);
  d.topk.indices = topk.data();
  if (a.logits.stride > 0) {
    logits = device_buffer<float>(t * a.logits.stride);
    logits.upload(std::vector<float>(logits.size(), unwritten_logit));
    d.logits.data = logits.data();
  }
  if (a.candidates.num_blocks > 0) {
    if (a.candidates.stride == 0) a.candidates.stride = d.candidates.stride = a.candidates.num_blocks;
    candidates = device_buffer<int32_t>(t * a.candidates.stride);
    candidates.fill_bytes(0x7F);
    d.candidates.blocks = candidates.data();
  }
  device_buffer<uint32_t> error_word(std::vector<uint32_t>{0});
  r.st = run_on_gpu(d, error_word.data());
  r.error_word = error_word.download()[0];
  r.topk = topk.download();
  a.topk.indices = r.topk.data();
  if (a.logits.stride > 0) {
    r.logits = logits.download();
    a.logits.data = r.logits.data();
  }
  if (a.candidates.num_blocks > 0) {
    r.candidates = candidates.download();
    a.candidates.blocks = r.candidates.data();
  }
  r.args = a;
  return r;
}

/// Entry B on the GPU with the pool `a` names (host memory).
host_result<candidate_indexer_args> run_gpu(candidate_indexer_args a) {
  host_result<candidate_indexer_args> r;
  const device_inputs in(a);
  candidate_indexer_args d = a;
  in.point(d);
  const size_t t = static_cast<size_t>(a.queries.num_tokens);
  device_buffer<int32_t> pool(std::vector<int32_t>(a.candidates.blocks, a.candidates.blocks + t * a.candidates.stride));
  d.candidates.blocks = pool.data();
  device_buffer<int32_t> topk(t * a.topk.stride);
  topk.fill_bytes(0x7F);
  d.topk.indices = topk.data();
  device_buffer<uint32_t> error_word(std::vector<uint32_t>{0});
  r.st = run_on_gpu(d, error_word.data());
  r.error_word = error_word.download()[0];
  r.topk = topk.download();
  a.topk.indices = r.topk.data();
  r.args = a;
  return r;
}


/// Checks the listed rows of an entry-A result (all rows when `rows` is empty).
void check_rows(const host_workload& w, const host_result<indexer_args>& r, std::vector<int64_t> rows) {
  if (rows.empty())
    for (int64_t t = 0; t < w.num_tokens; ++t) rows.push_back(t);
  for (int64_t t : rows) {
    const row_truth truth = exact_row(w, t);
    INFO("token " << t << " visible " << truth.visible);
    CHECK(check_topk_row(w, truth, r.topk.data() + t * r.args.topk.stride, r.args.topk) == "");
  }
}

/// The sub-batch of request `req` alone, with the same keys, queries and pages.
host_workload only_request(const host_workload& w, int req) {
  host_workload s = w;
  const int32_t lo = w.query_start_loc[req], hi = w.query_start_loc[req + 1];
  const size_t h = static_cast<size_t>(w.spec.num_heads), d = static_cast<size_t>(w.spec.head_dim);
  s.num_tokens = hi - lo;
  s.q_values.assign(w.q_values.begin() + lo * h * d / 2, w.q_values.begin() + hi * h * d / 2);
  s.q_scales.assign(w.q_scales.begin() + lo * h * d / 32, w.q_scales.begin() + hi * h * d / 32);
  s.weights.assign(w.weights.begin() + lo * h, w.weights.begin() + hi * h);
  s.seq_lens = {w.seq_lens[req]};
  s.query_start_loc = {0, hi - lo};
  s.block_table.assign(w.block_table.begin() + req * w.max_blocks, w.block_table.begin() + (req + 1) * w.max_blocks);
  s.spec.query_lens = {hi - lo};
  s.spec.seq_lens = {w.seq_lens[req]};
  return s;
}

/// Runs `a` on the GPU both ways, float queries `q` into the call, and quantize_q on the GPU then
/// the call on its output, and checks that every output holds the same bits.
template <class Args>
void expect_same_bits_on_gpu(const Args& a, const float_queries& q) {
  const device_buffer<uint8_t> dq(q.bytes);
  const size_t elems = static_cast<size_t>(q.num_tokens) * q.num_heads * q.head_dim;
  device_buffer<uint8_t> values(elems / 2), scales(elems / format::block_elems);
  execution exec;
  exec.where = backend::gpu;
  REQUIRE(quantize_q(q.quantize_args(values.data(), scales.data(), dq.data()), exec).ok());
  const std::vector<uint8_t> v = values.download(), sc = scales.download();
  Args quantized = a;
  quantized.queries.values = v.data();
  quantized.queries.scales = sc.data();
  const auto want = run_gpu(quantized);
  const auto got = run_gpu(with_float_queries(a, q, q.bytes.data()));
  REQUIRE(want.st.ok());
  REQUIRE(got.st.message() == "");
  CHECK(got.error_word == want.error_word);
  CHECK(got.topk == want.topk);
  CHECK(got.candidates == want.candidates);
  CHECK(same_bits(got.logits, want.logits));
}

format::scale_rule rule_of(uint64_t seed) {
  return seed % 2 ? format::scale_rule::floor : format::scale_rule::ceil;
}

float_type type_of(uint64_t seed) { return seed % 4 < 2 ? float_type::bf16 : float_type::f32; }

}  // namespace

TEST_CASE("gpu entry A agrees with the exact checker on random problems", "[gpu]") {
  REQUIRE_GPU();
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const random_case c = draw_random_case(seed, case_scale::gpu);
    const host_workload w = make_workload(c.spec);
    INFO("seed " << seed << " H " << c.spec.num_heads << " BS " << c.spec.block_size << " c "
                 << c.spec.compress_ratio << " k " << c.spec.topk << " T " << w.num_tokens);
    const auto r = run_gpu(random_case_args(w, c));
    REQUIRE(r.st.message() == "");
    CHECK(r.error_word == 0);
    CHECK(check_indexer(w, r.args) == "");
  }
}

TEST_CASE("gpu entry B agrees with the exact checker on random candidate rows", "[gpu][candidates]") {
  REQUIRE_GPU();
  for (uint64_t seed = 101; seed <= 130; ++seed) {
    const random_case c = draw_random_case(seed, case_scale::gpu);
    const host_workload w = make_workload(c.spec);
    INFO("seed " << seed);
    const random_pool pool = draw_random_pool(seed, w, case_scale::gpu);
    const candidate_indexer_args a = random_pool_args(w, c, pool);
    const auto r = run_gpu(a);
    REQUIRE(r.st.message() == "");
    CHECK(check_candidate_indexer(w, r.args) == "");
  }
}

TEST_CASE("gpu equals the CPU bit for bit where the contract fixes the answer", "[gpu]") {
  REQUIRE_GPU();
  SECTION("visible <= k: every position, then -1, in both orders and index spaces") {
    workload_spec s = decode_spec(3, 900, 2, 21);
    s.topk = 2048;
    const host_workload w = make_workload(s);
    for (output_order order : {output_order::position, output_order::score})
      for (index_space space : {index_space::position, index_space::cache_slot}) {
        indexer_args a = w.indexer();
        a.topk.order = order;
        a.topk.space = space;
        const auto g = run_gpu(a);
        const auto h = run_host(a, backend::cpu);
        REQUIRE(g.st.ok());
        if (order == output_order::position) CHECK(g.topk == h.topk);
        CHECK(check_indexer(w, g.args) == "");
      }
  }
  SECTION("all-equal keys: ties go to the smaller position, publish pins the newest block") {
    workload_spec s = decode_spec(4, 6000, 2, 22);
    s.keys = key_pattern::all_equal;
    s.topk = 512;
    const host_workload w = make_workload(s);
    for (output_order order : {output_order::position, output_order::score}) {
      indexer_args a = w.indexer();
      a.topk.order = order;
      a.candidates.num_blocks = 37;
      a.candidates.block_size = 8;
      const auto g = run_gpu(a);
      const auto h = run_host(a, backend::reference);
      REQUIRE(g.st.ok());
      CHECK(g.topk == h.topk);
      CHECK(g.candidates == h.candidates);
    }
  }
  SECTION("a published pool consumed by entry B, cache-slot space") {
    workload_spec s = decode_spec(3, 5000, 2, 23);
    s.keys = key_pattern::few_distinct;
    s.topk = 256;
    const host_workload w = make_workload(s);
    indexer_args a = w.indexer();
    a.candidates.num_blocks = 64;
    a.candidates.block_size = 8;
    const auto g = run_gpu(a);
    const auto h = run_host(a, backend::reference);
    REQUIRE(g.st.ok());
    CHECK(g.candidates == h.candidates);  // few distinct keys: block maxima tie exactly
    candidate_indexer_args b = w.candidate_indexer();
    b.candidates.blocks = h.candidates.data();
    b.candidates.stride = 64;
    b.candidates.num_blocks = 64;
    b.candidates.block_size = 8;
    b.topk.space = index_space::cache_slot;
    const auto gb = run_gpu(b);
    const auto hb = run_host(b, backend::reference);
    REQUIRE(gb.st.ok());
    CHECK(gb.topk == hb.topk);
  }
}

TEST_CASE("gpu: a call captured in a graph replays to the bits of a direct call", "[gpu][graph]") {
  REQUIRE_GPU();
  workload_spec s = decode_spec(4, 3000, 2, 41);
  s.topk = 256;
  const host_workload w = make_workload(s);
  const float_queries q = draw_float_queries(w, float_type::bf16, format::scale_rule::ceil, 41);
  // The MXFP4 queries, and float ones that the call quantizes in its first kernel.
  const bool floats = GENERATE(false, true);
  INFO("float queries " << floats);
  indexer_args a = floats ? with_float_queries(w.indexer(), q, q.bytes.data()) : w.indexer();
  a.candidates.num_blocks = a.candidates.stride = 16;  // publishing too
  const host_result<indexer_args> direct = run_gpu(a);
  REQUIRE(direct.st.message() == "");

  const device_inputs in(a);
  indexer_args d = a;
  in.point(d);
  const size_t t = static_cast<size_t>(w.num_tokens);
  device_buffer<int32_t> topk(t * a.topk.stride), pool(t * a.candidates.stride);
  d.topk.indices = topk.data();
  d.candidates.blocks = pool.data();
  size_t bytes = 0;
  REQUIRE(workspace_bytes(d, backend::gpu, bytes).ok());
  device_buffer<char> workspace(bytes);
  platform::stream_t stream{};
  gpu_check(platform::stream_create(&stream), "stream create");
  execution exec;
  exec.where = backend::gpu;
  exec.stream = stream;
  exec.workspace = workspace.data();
  exec.workspace_bytes = bytes;

  // Global capture mode: any call the backend made that a graph cannot hold fails the capture.
  platform::graph_t graph{};
  gpu_check(platform::begin_capture(stream), "begin capture");
  const status captured = run_indexer(d, exec);
  gpu_check(platform::end_capture(stream, &graph), "end capture");
  REQUIRE(captured.message() == "");
  platform::graph_exec_t replay{};
  gpu_check(platform::graph_instantiate(&replay, graph), "graph instantiate");
  for (int i = 0; i < 2; ++i) {
    topk.fill_bytes(0x7F);
    pool.fill_bytes(0x7F);
    gpu_check(platform::graph_launch(replay, stream), "graph launch");
    gpu_check(platform::stream_synchronize(stream), "stream synchronize");
    CHECK(topk.download() == direct.topk);
    CHECK(pool.download() == direct.candidates);
  }
  gpu_check(platform::graph_exec_destroy(replay), "graph exec destroy");
  gpu_check(platform::graph_destroy(graph), "graph destroy");
  gpu_check(platform::stream_destroy(stream), "stream destroy");
}

TEST_CASE("gpu float queries: entry A gives the bits of quantize_q, then the call",
          "[gpu][float_queries]") {
  REQUIRE_GPU();
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    const random_case c = draw_random_case(seed, case_scale::gpu);
    const host_workload w = make_workload(c.spec);
    indexer_args a = random_case_args(w, c);
    if (seed % 3 == 0) a.logits.stride = w.max_model_len;  // logits on every third case at least
    const float_queries q = draw_float_queries(w, type_of(seed), rule_of(seed), seed);
    INFO("seed " << seed << " H " << c.spec.num_heads << " T " << w.num_tokens << " type "
                 << int(q.type) << " rule " << int(q.rule));
    expect_same_bits_on_gpu(a, q);
  }
}

TEST_CASE("gpu float queries: entry B gives the bits of quantize_q, then the call",
          "[gpu][float_queries][candidates]") {
  REQUIRE_GPU();
  for (uint64_t seed = 101; seed <= 116; ++seed) {
    const random_case c = draw_random_case(seed, case_scale::gpu);
    const host_workload w = make_workload(c.spec);
    const random_pool pool = draw_random_pool(seed, w, case_scale::gpu);
    const float_queries q = draw_float_queries(w, type_of(seed), rule_of(seed), seed);
    INFO("seed " << seed << " type " << int(q.type) << " rule " << int(q.rule));
    expect_same_bits_on_gpu(random_pool_args(w, c, pool), q);
  }
}

TEST_CASE("gpu float queries: each row-check kernel quantizes them, and later chunks read them",
          "[gpu][float_queries]") {
  REQUIRE_GPU();
  // The random cases' few requests take the row checks' one kernel in blocks of 1024 threads;
  // 200 requests take it in blocks of 256, 1100 the two kernels (row_info.hpp); 512 rows at
  // max_model_len 1M run as two chunks. k 16 below the rows' lengths, so that the top-k depends
  // on every score.
  struct shape {
    int batch, context;
    int64_t max_model_len;
    bool logits;
  };
  const shape s = GENERATE(shape{200, 300, 0, true}, shape{1100, 100, 0, true},
                           shape{512, 200, int64_t{1} << 20, false});
  workload_spec spec = decode_spec(s.batch, s.context, 1, 71);
  spec.topk = 16;
  spec.max_model_len = s.max_model_len;
  const host_workload w = make_workload(spec);
  indexer_args a = w.indexer();
  if (s.logits) a.logits.stride = w.max_model_len;
  INFO("batch " << s.batch << " max_model_len " << w.max_model_len);
  for (const float_type type : {float_type::f32, float_type::bf16}) {
    const float_queries q = draw_float_queries(w, type, format::scale_rule::ceil, 72);
    expect_same_bits_on_gpu(a, q);
  }
  const random_pool pool = draw_random_pool(73, w, case_scale::gpu);
  random_case c;
  c.spec = spec;
  expect_same_bits_on_gpu(random_pool_args(w, c, pool),
                          draw_float_queries(w, float_type::bf16, format::scale_rule::floor, 74));
}

TEST_CASE("gpu: a request gives the same bits alone and in a batch", "[gpu]") {
  REQUIRE_GPU();
  workload_spec s = decode_spec(6, 20000, 2, 31);
  const host_workload w = make_workload(s);
  const host_workload one = only_request(w, 3);
  for (output_order order : {output_order::position, output_order::score}) {
    indexer_args a = w.indexer();
    a.topk.order = order;
    a.candidates.num_blocks = 128;
    indexer_args b = one.indexer();
    b.topk.order = order;
    b.candidates.num_blocks = 128;
    const auto batch = run_gpu(a);
    const auto alone = run_gpu(b);
    REQUIRE(batch.st.ok());
    REQUIRE(alone.st.ok());
    const int32_t lo = w.query_start_loc[3];
    CHECK(std::equal(alone.topk.begin(), alone.topk.end(), batch.topk.begin() + lo * a.topk.stride));
    CHECK(std::equal(alone.candidates.begin(), alone.candidates.end(), batch.candidates.begin() + lo * 128));
  }
}

TEST_CASE("gpu: broken request data gives all -1 rows and the device error bits", "[gpu]") {
  REQUIRE_GPU();
  workload_spec s = decode_spec(4, 3000, 2, 41);
  s.topk = 256;
  host_workload w = make_workload(s);
  w.block_table[1 * w.max_blocks + 5] = static_cast<int32_t>(w.num_pages + 7);  // request 1
  w.seq_lens[2] = 1;                                                             // < n_2 = 2
  indexer_args a = w.indexer();
  const auto g = run_gpu(a);
  const auto h = run_host(a, backend::reference);
  REQUIRE(g.st.ok());
  CHECK(g.error_word == h.error_word);
  CHECK(g.error_word == (device_error_block_table | device_error_seq_len));
  for (int req : {1, 2})
    for (int32_t t = w.query_start_loc[req]; t < w.query_start_loc[req + 1]; ++t)
      CHECK(std::all_of(g.topk.begin() + t * 256, g.topk.begin() + (t + 1) * 256, [](int32_t v) { return v == -1; }));
  for (int req : {0, 3})
    for (int32_t t = w.query_start_loc[req]; t < w.query_start_loc[req + 1]; ++t)
      CHECK(check_topk_row(w, exact_row(w, t), g.topk.data() + t * 256, g.args.topk) == "");
}

TEST_CASE("gpu workspace: a decode batch of 256 rows at max_model_len 1M is one chunk", "[gpu]") {
  // The workspace holds one chunk of score rows, 4 MiB each at 1M: all 256 of them, publishing
  // too, where 512 rows take two chunks of 256. workspace_bytes reads no device memory.
  workload_spec s = decode_spec(512, 64, 1, 7);
  s.max_model_len = int64_t{1} << 20;
  const host_workload w = make_workload(s);
  const size_t row_scores = size_t{4} << 20;
  for (const int rows : {256, 512})
    for (const bool publish : {false, true}) {
      indexer_args a = w.indexer();
      a.queries.num_tokens = rows;
      a.requests.num_requests = rows;
      a.topk.indices = reinterpret_cast<int32_t*>(16);  // sized, never written
      if (publish) {
        a.candidates.blocks = reinterpret_cast<int32_t*>(16);
        a.candidates.num_blocks = a.candidates.stride = 512;
        a.candidates.block_size = 8;
      }
      size_t bytes = 0;
      const status st = workspace_bytes(a, backend::gpu, bytes);
      INFO(st.message());
      REQUIRE(st.ok());
      INFO("rows " << rows << " publish " << publish << " bytes " << bytes);
      // Chunks of 256 rows: each row's scores, and at most 1 MiB more a row (the select's
      // scratch, the block keys, the plan).
      CHECK(bytes >= 256 * row_scores);
      CHECK(bytes < 256 * (row_scores + (size_t{1} << 20)));
    }
}

TEST_CASE("gpu workspace: float queries add their quantized copy, from the arguments alone",
          "[gpu][float_queries]") {
  // T x H x D/2 value bytes and T x H x D/32 scale bytes, each part 256-byte aligned; the
  // pointers are never read.
  const host_workload w = make_workload(decode_spec(37, 64, 3, 8));
  const auto aligned = [](size_t n) { return (n + 255) / 256 * 256; };
  const size_t t = static_cast<size_t>(w.num_tokens), h = 64;
  const size_t copy = aligned(t * h * 64) + aligned(t * h * 4);
  const float_queries q = draw_float_queries(w, float_type::bf16, format::scale_rule::ceil, 9);
  indexer_args a = w.indexer();
  a.topk.indices = reinterpret_cast<int32_t*>(16);
  candidate_indexer_args b = w.candidate_indexer();
  b.topk.indices = a.topk.indices;
  b.candidates = {reinterpret_cast<const int32_t*>(16), 64, 64, 8};
  size_t mxfp4 = 0, floats = 0;
  REQUIRE(workspace_bytes(a, backend::gpu, mxfp4).ok());
  REQUIRE(workspace_bytes(with_float_queries(a, q, q.bytes.data()), backend::gpu, floats).ok());
  CHECK(floats == mxfp4 + copy);
  REQUIRE(workspace_bytes(b, backend::gpu, mxfp4).ok());
  REQUIRE(workspace_bytes(with_float_queries(b, q, q.bytes.data()), backend::gpu, floats).ok());
  CHECK(floats == mxfp4 + copy);
}

TEST_CASE("gpu: arguments the GPU cannot take are refused by name", "[gpu]") {
  REQUIRE_GPU();
  const host_workload w = make_workload(decode_spec(1, 100, 1, 51));
  indexer_args d = w.indexer();
  const device_inputs in(d);
  in.point(d);
  device_buffer<int32_t> topk(static_cast<size_t>(w.num_tokens * d.topk.stride));
  d.topk.indices = topk.data();
  size_t bytes = 0;
  REQUIRE(workspace_bytes(d, backend::gpu, bytes).ok());
  REQUIRE(bytes > 0);
  device_buffer<char> workspace(bytes);
  execution exec;
  exec.where = backend::gpu;
  exec.workspace = workspace.data();
  exec.workspace_bytes = bytes - 1;
  const status st = run_indexer(d, exec);
  CHECK(st.code() == status_code::invalid_argument);
  CHECK(st.message().find("exec.workspace_bytes") != std::string::npos);
}

TEST_CASE("gpu large: 64 requests x 32K context decode, k 2048", "[gpu][large]") {
  REQUIRE_GPU();
  const host_workload w = make_workload(decode_spec(64, 32768, 1, 61));
  indexer_args a = w.indexer();
  a.candidates.num_blocks = 512;
  const auto r = run_gpu(a);
  REQUIRE(r.st.ok());
  CHECK(r.error_word == 0);
  check_rows(w, r, {0, 17, 40, 63});
}

TEST_CASE("gpu large: a 16K-token prefill (several chunks), k 2048", "[gpu][large]") {
  REQUIRE_GPU();
  workload_spec s = prefill_spec({16384}, 62);
  const host_workload w = make_workload(s);
  indexer_args a = w.indexer();
  a.topk.order = output_order::score;
  const auto r = run_gpu(a);
  REQUIRE(r.st.ok());
  check_rows(w, r, {0, 2047, 2048, 9000, 16383});
}

TEST_CASE("gpu large: k 4096 over 256K-wide rows, and all-equal 256K rows", "[gpu][large]") {
  REQUIRE_GPU();
  workload_spec s;
  s.num_heads = 16;
  s.block_size = 256;
  s.topk = 4096;
  s.query_lens = {1, 1, 1};
  s.seq_lens = {262144, 200001, 262144};
  s.seed = 63;
  for (key_pattern keys : {key_pattern::gaussian, key_pattern::all_equal}) {
    s.keys = keys;
    const host_workload w = make_workload(s);
    indexer_args a = w.indexer();
    a.topk.space = index_space::cache_slot;
    const auto r = run_gpu(a);
    REQUIRE(r.st.ok());
    if (keys == key_pattern::all_equal) {
      const auto h = run_host(a, backend::cpu);
      CHECK(r.topk == h.topk);
    } else {
      check_rows(w, r, {0, 1, 2});
    }
  }
}
