// Reliability of the GPU backend through the public entry points (docs/reliability.md):
// corrupt batch descriptions in device memory give all -1 rows for the rows they break, the
// device error bit of the check, and bitwise the clean batch's rows everywhere else; NaN and
// infinite data are scored by the NaN rules and never become indices; a graph captured once
// replays over changing batch contents to the eager results; calls on two streams at once, and
// from several host threads each with its own stream and workspace, give bitwise the serial
// results, and repeated runs are bitwise identical. Run it under compute-sanitizer memcheck
// too (docs/reliability.md). Without a GPU every case skips visibly.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "catch.hpp"
#include "check.hpp"
#include "device_buffer.hpp"
#include "device_inputs.hpp"
#include "host_run.hpp"
#include "skip.hpp"
#include "workload.hpp"

using namespace mxi;
using namespace mxi::testing;

namespace {

#define REQUIRE_GPU()                                      \
  if (!gpu_present() || !backend_available(backend::gpu)) \
  MXI_SKIP("no GPU: the GPU reliability tests need a device and MXI_BACKEND=cuda or hip")

/// What a GPU call wrote, in host memory.
struct gpu_output {
  status st;
  uint32_t error_word = 0;
  std::vector<int32_t> topk, candidates;
};

/// One call with everything it touches owned here (inputs, outputs, workspace, error word), so
/// several can be in flight at once. launch() only enqueues on `stream`; finish() waits for it.
template <class Args>
class gpu_call {
 public:
  gpu_call(const Args& host, platform::stream_t stream) : in_(host), d_(host), stream_(stream) {
    in_.point(d_);
    const size_t t = static_cast<size_t>(host.queries.num_tokens);
    topk_ = device_buffer<int32_t>(t * host.topk.stride);
    topk_.fill_bytes(0x7F);
    d_.topk.indices = topk_.data();
    if constexpr (std::is_same_v<Args, indexer_args>) {
      if (host.candidates.num_blocks > 0) {
        pool_ = device_buffer<int32_t>(t * host.candidates.stride);
        pool_.fill_bytes(0x7F);
        d_.candidates.blocks = pool_.data();
      }
    } else {
      pool_ = device_buffer<int32_t>(std::vector<int32_t>(
          host.candidates.blocks, host.candidates.blocks + t * host.candidates.stride));
      d_.candidates.blocks = pool_.data();
    }
    size_t bytes = 0;  // throws rather than REQUIRE: host threads construct calls too
    const status sized = workspace_bytes(d_, backend::gpu, bytes);
    if (!sized.ok()) throw std::runtime_error("workspace_bytes: " + sized.message());
    workspace_ = device_buffer<char>(bytes);
    workspace_.fill_bytes(0xA5);
    word_ = device_buffer<uint32_t>(std::vector<uint32_t>{0});
  }

  status launch() const {
    execution exec;
    exec.where = backend::gpu;
    exec.stream = stream_;
    exec.workspace = workspace_.data();
    exec.workspace_bytes = workspace_.size();
    exec.error_word = word_.data();
    if constexpr (std::is_same_v<Args, indexer_args>)
      return run_indexer(d_, exec);
    else
      return run_candidate_indexer(d_, exec);
  }

  gpu_output finish(const status& launched) const {
    gpu_check(platform::stream_synchronize(stream_), "stream synchronize");
    gpu_output out;
    out.st = launched;
    out.error_word = word_.download()[0];
    out.topk = topk_.download();
    if constexpr (std::is_same_v<Args, indexer_args>) out.candidates = pool_.download();
    return out;
  }

 private:
  device_inputs in_;
  Args d_;
  platform::stream_t stream_;
  device_buffer<int32_t> topk_, pool_;
  device_buffer<char> workspace_;
  device_buffer<uint32_t> word_;
};

template <class Args>
gpu_output run_gpu(const Args& host, platform::stream_t stream = nullptr) {
  const gpu_call<Args> call(host, stream);
  return call.finish(call.launch());
}

/// Runs `a` on the GPU and on the reference: both ok, the reference's word `want`, the GPU's word
/// and rows (top-k, and published candidates for entry A) the reference's bit for bit.
template <class Args>
void check_gpu_equals_reference(const Args& a, uint32_t want) {
  const gpu_output g = run_gpu(a);
  const auto h = run_host(a, backend::reference);
  REQUIRE(g.st.ok());
  REQUIRE(h.st.ok());
  CHECK(h.error_word == want);
  CHECK(g.error_word == h.error_word);
  CHECK(g.topk == h.topk);
  if constexpr (std::is_same_v<Args, indexer_args>) CHECK(g.candidates == h.candidates);
}

/// A stream created and destroyed with the scope.
struct owned_stream {
  platform::stream_t s{};
  owned_stream() { gpu_check(platform::stream_create(&s), "stream create"); }
  ~owned_stream() { (void)platform::stream_destroy(s); }
  owned_stream(const owned_stream&) = delete;
  owned_stream& operator=(const owned_stream&) = delete;
};

/// Entry A with candidate publishing, on a decode batch of four requests.
indexer_args publishing(const host_workload& w) {
  indexer_args a = w.indexer();
  a.candidates.num_blocks = a.candidates.stride = 16;
  a.candidates.block_size = 8;
  return a;
}

bool all_minus_one(const std::vector<int32_t>& v, int64_t row, int64_t stride, int64_t width) {
  return std::all_of(v.begin() + row * stride, v.begin() + row * stride + width,
                     [](int32_t x) { return x == -1; });
}

bool same_row(const std::vector<int32_t>& a, const std::vector<int32_t>& b, int64_t row,
              int64_t stride, int64_t width) {
  return std::equal(a.begin() + row * stride, a.begin() + row * stride + width,
                    b.begin() + row * stride);
}

/// One corruption of the batch description: what it changes, the bit it must raise and which
/// requests' rows it breaks (empty: every row).
struct corruption {
  const char* what;
  std::function<void(host_workload&)> apply;
  uint32_t bit;
  std::vector<int> broken_requests;
};

/// The same workload with its pages moved past `offset` bytes of a larger cache: page p becomes
/// page base + p (every page id past offset / page_stride), the pages before it zero.
host_workload moved_past(const host_workload& w, int64_t offset) {
  host_workload far = w;
  const int64_t base = offset / w.page_stride + 1;
  far.num_pages = base + w.num_pages;
  far.kv_cache.assign(static_cast<size_t>(far.num_pages * w.page_stride), 0);
  std::copy(w.kv_cache.begin(), w.kv_cache.end(), far.kv_cache.begin() + base * w.page_stride);
  for (int32_t& id : far.block_table)
    if (id >= 0) id += static_cast<int32_t>(base);
  return far;
}

/// Host thread i runs batch i of `work` `rounds` times on its own stream, all threads at once,
/// after `setup(i)`; every result must be serial[i] bit for bit. Checked after the threads join
/// (Catch2's macros are not thread-safe).
void check_concurrent_rounds(const std::vector<host_workload>& work, const std::vector<gpu_output>& serial,
                             int rounds, const std::function<void(int)>& setup) {
  const size_t threads = work.size();
  std::vector<std::vector<gpu_output>> got(threads);
  std::vector<std::string> failures(threads);
  std::vector<std::thread> pool;
  for (size_t i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      try {
        setup(static_cast<int>(i));
        owned_stream stream;
        for (int r = 0; r < rounds; ++r) got[i].push_back(run_gpu(publishing(work[i]), stream.s));
      } catch (const std::exception& e) {
        failures[i] = e.what();
      }
    });
  }
  for (std::thread& t : pool) t.join();
  for (size_t i = 0; i < threads; ++i) {
    INFO("thread " << i);
    CHECK(failures[i] == "");
    REQUIRE(got[i].size() == static_cast<size_t>(rounds));
    for (const gpu_output& o : got[i]) {
      INFO("status: " << o.st.message());
      CHECK(o.st.ok());
      CHECK(o.error_word == 0);
      CHECK(o.topk == serial[i].topk);
      CHECK(o.candidates == serial[i].candidates);
    }
  }
}

}  // namespace

TEST_CASE("gpu reliability: corrupt batch data in device memory breaks only its rows",
          "[gpu][reliability]") {
  REQUIRE_GPU();
  workload_spec s = decode_spec(4, 3000, 2, 61);
  s.topk = 256;
  const host_workload clean_w = make_workload(s);
  const gpu_output clean = run_gpu(publishing(clean_w));
  REQUIRE(clean.st.ok());
  REQUIRE(clean.error_word == 0);
  const int64_t mml = clean_w.max_model_len;
  const int64_t bt = clean_w.max_blocks;

  const std::vector<corruption> cases = {
      {"negative page id", [&](host_workload& w) { w.block_table[1 * bt + 3] = -1; },
       device_error_block_table, {1}},
      {"page id NB", [&](host_workload& w) { w.block_table[1 * bt] = int32_t(w.num_pages); },
       device_error_block_table, {1}},
      {"page id INT32_MAX",
       [&](host_workload& w) { w.block_table[3 * bt + 2] = std::numeric_limits<int32_t>::max(); },
       device_error_block_table, {3}},
      {"page id INT32_MIN",
       [&](host_workload& w) { w.block_table[0] = std::numeric_limits<int32_t>::min(); },
       device_error_block_table, {0}},
      {"negative seq_len", [&](host_workload& w) { w.seq_lens[2] = -5; }, device_error_seq_len,
       {2}},
      {"seq_len INT32_MIN",
       [&](host_workload& w) { w.seq_lens[2] = std::numeric_limits<int32_t>::min(); },
       device_error_seq_len, {2}},
      {"seq_len below the query tokens", [&](host_workload& w) { w.seq_lens[1] = 1; },
       device_error_seq_len, {1}},
      {"seq_len past max_model_len",
       [&](host_workload& w) { w.seq_lens[0] = static_cast<int32_t>(mml + 10); },
       device_error_max_model_len, {0}},
      {"seq_len INT32_MAX",
       [&](host_workload& w) { w.seq_lens[3] = std::numeric_limits<int32_t>::max(); },
       device_error_max_model_len, {3}},
      {"query_start_loc decreasing",
       [&](host_workload& w) { w.query_start_loc[2] = w.query_start_loc[1] - 1; },
       device_error_query_start_loc, {}},
      {"query_start_loc[R] past T", [&](host_workload& w) { w.query_start_loc.back() += 1; },
       device_error_query_start_loc, {}},
      {"query_start_loc[0] negative", [&](host_workload& w) { w.query_start_loc[0] = -1; },
       device_error_query_start_loc, {}},
      {"no requests for T tokens",
       [&](host_workload& w) {
         w.seq_lens.clear();
         w.block_table.clear();
         w.query_start_loc = {0};
       },
       device_error_query_start_loc, {}},
  };
  for (const corruption& c : cases) {
    INFO(c.what);
    host_workload w = clean_w;
    c.apply(w);
    const indexer_args a = publishing(w);
    const gpu_output g = run_gpu(a);
    const auto h = run_host(a, backend::reference);
    REQUIRE(g.st.ok());
    CHECK((g.error_word & c.bit) == c.bit);  // the word names the check that failed ...
    CHECK(h.error_word == c.bit);
    CHECK(g.error_word == h.error_word);  // ... and no other: one bit a broken row, as on the host
    for (int64_t t = 0; t < w.num_tokens; ++t) {
      INFO("token " << t);
      const int r = clean_w.request_of(t);
      const bool broken =
          c.broken_requests.empty() ||
          std::find(c.broken_requests.begin(), c.broken_requests.end(), r) !=
              c.broken_requests.end();
      if (broken) {
        CHECK(all_minus_one(g.topk, t, a.topk.stride, a.topk.k));
        CHECK(all_minus_one(g.candidates, t, a.candidates.stride, a.candidates.num_blocks));
      } else {
        CHECK(same_row(g.topk, clean.topk, t, a.topk.stride, a.topk.k));
        CHECK(same_row(g.candidates, clean.candidates, t, a.candidates.stride,
                       a.candidates.num_blocks));
      }
    }
  }
}

TEST_CASE("gpu reliability: a request without query tokens breaks nothing, whatever its seq_len",
          "[gpu][reliability]") {
  REQUIRE_GPU();
  workload_spec s = decode_spec(3, 2000, 2, 63);
  s.topk = 128;
  const host_workload clean_w = make_workload(s);
  const gpu_output clean = run_gpu(publishing(clean_w));
  REQUIRE(clean.st.ok());
  REQUIRE(clean.error_word == 0);
  const int64_t bt = clean_w.max_blocks;
  for (int32_t len : {-5, std::numeric_limits<int32_t>::min(), 0})
    for (int at : {0, 1, 3}) {  // before the first request, between two, after the last
      INFO("seq_len " << len << " inserted as request " << at);
      host_workload w = clean_w;
      w.seq_lens.insert(w.seq_lens.begin() + at, len);
      w.query_start_loc.insert(w.query_start_loc.begin() + at, w.query_start_loc[at]);
      w.block_table.insert(w.block_table.begin() + at * bt, bt, -1);  // never read either
      const indexer_args a = publishing(w);
      const gpu_output g = run_gpu(a);
      REQUIRE(g.st.ok());
      CHECK(g.error_word == 0);
      CHECK(run_host(a, backend::reference).error_word == 0);
      CHECK(g.topk == clean.topk);
      CHECK(g.candidates == clean.candidates);
    }
}

TEST_CASE("gpu reliability: an empty cache breaks the rows that need a page and reads nothing",
          "[gpu][reliability][candidates]") {
  REQUIRE_GPU();
  // No pages and a null cache (num_pages 0 allows both), a table of -1: the rows with keys to
  // score are broken, the rows with none (request 0 at compress ratio 4) are not. Broken rows
  // still stage keys through clamped page ids, and an empty cache has no page to clamp to.
  for (const int block_size : {16, 512})
    for (const cache_layout layout :
         {cache_layout::linear, cache_layout::mfma16, cache_layout::aiter16}) {
      INFO("block size " << block_size << " layout " << static_cast<int>(layout));
      workload_spec s;
      s.query_lens = {2, 2, 2};
      s.seq_lens = {2, 300, 64};
      s.compress_ratio = 4;
      s.block_size = block_size;
      s.layout = layout;
      s.topk = 32;
      s.seed = 71;
      host_workload w = make_workload(s);
      w.num_pages = 0;
      std::vector<uint8_t>().swap(w.kv_cache);  // no bytes: the device copy's data is null too
      std::fill(w.block_table.begin(), w.block_table.end(), -1);

      indexer_args a = publishing(w);
      a.cache.data = nullptr;
      check_gpu_equals_reference(a, device_error_block_table);

      candidate_indexer_args b = w.candidate_indexer();
      b.cache.data = nullptr;
      const int ncb = 6;
      b.candidates.num_blocks = b.candidates.stride = ncb;
      b.candidates.block_size = 8;
      const int32_t ids[ncb] = {0, 1, 5, -1, 1 << 29, -2};
      std::vector<int32_t> pool;
      for (int64_t t = 0; t < w.num_tokens; ++t) pool.insert(pool.end(), ids, ids + ncb);
      b.candidates.blocks = pool.data();
      check_gpu_equals_reference(b, device_error_block_table);
    }
}

TEST_CASE("gpu reliability: candidate ids past the context, negative or repeated are skipped",
          "[gpu][reliability][candidates]") {
  REQUIRE_GPU();
  workload_spec s = decode_spec(4, 3000, 2, 67);
  s.topk = 64;
  const host_workload w = make_workload(s);
  candidate_indexer_args a = w.candidate_indexer();
  const int ncb = 12, cbs = 8;
  a.candidates.num_blocks = ncb;
  a.candidates.stride = ncb;
  a.candidates.block_size = cbs;
  // The clean pool: distinct live blocks and -1. The corrupt one adds ids past the context,
  // negative ids and repeats in the -1 slots; the positions they name are the same.
  std::vector<int32_t> clean(static_cast<size_t>(w.num_tokens * ncb), -1), corrupt;
  for (int64_t t = 0; t < w.num_tokens; ++t)
    for (int i = 0; i < 6; ++i) clean[t * ncb + i] = static_cast<int32_t>((w.visible(t) / cbs) - 3 * i);
  corrupt = clean;
  for (int64_t t = 0; t < w.num_tokens; ++t) {
    int32_t* row = corrupt.data() + t * ncb;
    const int32_t past = static_cast<int32_t>(w.visible(t) / cbs + 1);
    const int32_t extra[] = {past, past + 1000, std::numeric_limits<int32_t>::max(), -7,
                             std::numeric_limits<int32_t>::min(), row[0]};
    std::copy(std::begin(extra), std::end(extra), row + 6);
  }
  a.candidates.blocks = clean.data();
  const gpu_output want = run_gpu(a);
  a.candidates.blocks = corrupt.data();
  const gpu_output got = run_gpu(a);
  REQUIRE(want.st.ok());
  REQUIRE(got.st.ok());
  CHECK(got.error_word == 0);
  CHECK(got.topk == want.topk);
  for (int64_t t = 0; t < w.num_tokens; ++t) {
    INFO("token " << t);
    const row_truth truth = exact_candidate_row(w, t, corrupt.data() + t * ncb, ncb, cbs);
    CHECK(check_topk_row(w, truth, got.topk.data() + t * a.topk.stride, a.topk) == "");
  }
}

TEST_CASE("gpu reliability: pages past 4 GiB give the bits of the same pages at the front",
          "[gpu][reliability][large]") {
  REQUIRE_GPU();
  const int64_t offset = int64_t{5} << 30;  // every moved page's values and scales past 2^32 bytes
  for (cache_layout lay : {cache_layout::linear, cache_layout::mfma16})
    for (int bs : {16, 64}) {
      INFO("layout " << int(lay) << " block size " << bs);
      workload_spec s = decode_spec(3, 5000, 2, 91);
      s.layout = lay;
      s.block_size = bs;
      s.topk = 512;
      const host_workload near = make_workload(s);
      const host_workload far = moved_past(near, offset);
      REQUIRE((far.num_pages - near.num_pages) * far.page_stride > offset);
      // Entry A with publishing (dense keys: the bulk-staged tile on sm90), then entry B.
      const gpu_output a_near = run_gpu(publishing(near)), a_far = run_gpu(publishing(far));
      REQUIRE(a_near.st.ok());
      REQUIRE(a_far.st.ok());
      CHECK(a_near.error_word == 0);
      CHECK(a_far.error_word == 0);
      CHECK(a_far.topk == a_near.topk);
      CHECK(a_far.candidates == a_near.candidates);
      candidate_indexer_args b_near = near.candidate_indexer(), b_far = far.candidate_indexer();
      b_near.candidates = b_far.candidates = {a_near.candidates.data(), 16, 16, 8};
      const gpu_output got_near = run_gpu(b_near), got_far = run_gpu(b_far);
      REQUIRE(got_near.st.ok());
      REQUIRE(got_far.st.ok());
      CHECK(got_far.error_word == 0);
      CHECK(got_far.topk == got_near.topk);
    }
}

TEST_CASE("gpu reliability: write_k_cache past 4 GiB writes the bytes it writes at the front",
          "[gpu][reliability][large]") {
  REQUIRE_GPU();
  const int d = 128, bs = 64, n = 1000;
  const int64_t stride = bs * (d / 2 + d / 32), used = (n + bs - 1) / bs;
  const int64_t base = (int64_t{5} << 30) / stride + 1, pages = base + used;
  std::vector<float> keys(static_cast<size_t>(n) * d);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
  std::vector<int64_t> front(n), back(n);
  for (int i = 0; i < n; ++i) {  // a permutation of the used slots, the same at both ends
    const int64_t slot = (static_cast<int64_t>(i) * 611) % (used * bs);
    front[i] = slot;
    back[i] = base * bs + slot;
  }
  const device_buffer<float> d_keys(keys);
  const device_buffer<int64_t> d_front(front), d_back(back);
  for (cache_layout lay : {cache_layout::linear, cache_layout::mfma16}) {
    INFO("layout " << int(lay));
    device_buffer<uint8_t> cache(static_cast<size_t>(pages * stride));
    cache.fill_bytes(0xA5);
    const device_buffer<uint32_t> word(std::vector<uint32_t>{0});
    execution e;
    e.where = backend::gpu;
    e.error_word = word.data();
    k_cache_write_args a;
    a.k = d_keys.data();
    a.num_tokens = n;
    a.cache = {cache.data(), pages, stride, bs, d, lay};
    a.slot_mapping = d_front.data();
    REQUIRE(write_k_cache(a, e).ok());
    a.slot_mapping = d_back.data();
    REQUIRE(write_k_cache(a, e).ok());
    gpu_check(platform::device_synchronize(), "synchronize");
    CHECK(word.download()[0] == 0);
    const std::vector<uint8_t> all = cache.download();
    const auto at = [&](int64_t page) { return all.begin() + page * stride; };
    CHECK(std::equal(at(0), at(used), at(base)));
    CHECK(std::count(at(0), at(used), uint8_t{0xA5}) < used * stride / 4);  // the writes landed
  }
}

TEST_CASE("gpu reliability: NaN and infinite weights, values and scales follow the NaN rules",
          "[gpu][reliability]") {
  REQUIRE_GPU();
  workload_spec s = decode_spec(4, 3000, 2, 71);
  s.topk = 256;
  host_workload w = make_workload(s);
  const int h = s.num_heads, d = s.head_dim;
  const float inf = std::numeric_limits<float>::infinity();
  // Weights: NaN, +inf and -inf on some heads of some tokens.
  w.weights[0 * h + 1] = std::numeric_limits<float>::quiet_NaN();
  w.weights[1 * h + 2] = inf;
  w.weights[2 * h + 3] = -inf;
  // A NaN query block (scale 255) on one head of token 3.
  w.q_scales[(3 * h + 5) * (d / 32)] = format::nan_scale;
  // NaN keys: one scale byte 255 in some tokens of every other page. (Scale 254 is left out:
  // its large codes overflow fp32, where docs/semantics.md lets backends differ.)
  const layout::page_shape shape{s.block_size, d};
  std::vector<uint8_t> values(d / 2), scales(d / 32);
  for (int64_t p = 0; p < w.num_pages; p += 2) {
    for (int tok = 0; tok < s.block_size; tok += 7) {
      uint8_t* page = w.kv_cache.data() + p * w.page_stride;
      layout::dispatch(s.layout, [&](auto L) {
        layout::read_token<decltype(L)>(page, shape, tok, values.data(), scales.data());
        scales[tok % (d / 32)] = format::nan_scale;
        layout::write_token<decltype(L)>(page, shape, tok, values.data(), scales.data());
      });
    }
  }
  const indexer_args a = publishing(w);
  const gpu_output g = run_gpu(a);
  REQUIRE(g.st.ok());
  CHECK(g.error_word == 0);
  for (int64_t t = 0; t < w.num_tokens; ++t) {
    INFO("token " << t);
    const row_truth truth = exact_row(w, t);
    CHECK(check_topk_row(w, truth, g.topk.data() + t * a.topk.stride, a.topk) == "");
    CHECK(check_candidate_row(truth, g.candidates.data() + t * a.candidates.stride,
                              a.candidates.num_blocks, a.candidates.block_size) == "");
    for (int i = 0; i < a.topk.k; ++i) {  // never an index outside the row, NaN or not
      const int32_t v = g.topk[t * a.topk.stride + i];
      CHECK((v == -1 || (v >= 0 && v < truth.visible)));
    }
  }
}

TEST_CASE("gpu reliability: a graph captured once replays over changing batch contents",
          "[gpu][reliability][graph]") {
  REQUIRE_GPU();
  // Two batches of one shape: other keys, queries, weights and page order (the seed), and in the
  // second, shorter sequences in two requests.
  workload_spec s1 = decode_spec(4, 3000, 2, 97);
  s1.topk = 256;
  workload_spec s2 = s1;
  s2.seed = 98;
  const host_workload w1 = make_workload(s1);
  host_workload w2 = make_workload(s2);
  w2.seq_lens[1] -= 700;
  w2.seq_lens[3] -= 1;
  REQUIRE(w2.kv_cache.size() == w1.kv_cache.size());
  REQUIRE(w2.block_table.size() == w1.block_table.size());
  const indexer_args a1 = publishing(w1), a2 = publishing(w2);
  const gpu_output eager1 = run_gpu(a1), eager2 = run_gpu(a2);
  REQUIRE(eager1.st.ok());
  REQUIRE(eager2.st.ok());
  REQUIRE(eager1.topk != eager2.topk);

  owned_stream stream;
  device_inputs in(a1);
  indexer_args d = a1;
  in.point(d);
  const size_t t = static_cast<size_t>(w1.num_tokens);
  device_buffer<int32_t> topk(t * a1.topk.stride), pool(t * a1.candidates.stride);
  device_buffer<uint32_t> word(std::vector<uint32_t>{0});
  d.topk.indices = topk.data();
  d.candidates.blocks = pool.data();
  size_t bytes = 0;
  REQUIRE(workspace_bytes(d, backend::gpu, bytes).ok());
  device_buffer<char> workspace(bytes);
  execution exec;
  exec.where = backend::gpu;
  exec.stream = stream.s;
  exec.workspace = workspace.data();
  exec.workspace_bytes = bytes;
  exec.error_word = word.data();
  platform::graph_t graph{};
  gpu_check(platform::begin_capture(stream.s), "begin capture");
  const status captured = run_indexer(d, exec);
  gpu_check(platform::end_capture(stream.s, &graph), "end capture");
  REQUIRE(captured.message() == "");
  platform::graph_exec_t replay{};
  gpu_check(platform::graph_instantiate(&replay, graph), "graph instantiate");

  auto load = [&](const host_workload& w) {  // new contents into the captured buffers
    in.q_values.upload(w.q_values);
    in.q_scales.upload(w.q_scales);
    in.weights.upload(w.weights);
    in.cache.upload(w.kv_cache);
    in.block_table.upload(w.block_table);
    in.seq_lens.upload(w.seq_lens);
    in.query_start_loc.upload(w.query_start_loc);
  };
  for (int round = 0; round < 4; ++round) {
    INFO("round " << round);
    const gpu_output& want = round % 2 ? eager2 : eager1;
    load(round % 2 ? w2 : w1);
    topk.fill_bytes(0x7F);
    pool.fill_bytes(0x7F);
    gpu_check(platform::graph_launch(replay, stream.s), "graph launch");
    gpu_check(platform::stream_synchronize(stream.s), "stream synchronize");
    CHECK(topk.download() == want.topk);
    CHECK(pool.download() == want.candidates);
    CHECK(word.download()[0] == 0);
  }
  gpu_check(platform::graph_exec_destroy(replay), "graph exec destroy");
  gpu_check(platform::graph_destroy(graph), "graph destroy");
}

TEST_CASE("gpu reliability: two streams at once give the serial results bit for bit",
          "[gpu][reliability][concurrency]") {
  REQUIRE_GPU();
  workload_spec s1 = decode_spec(8, 6000, 2, 73), s2 = decode_spec(3, 20000, 4, 79);
  s1.topk = 512;
  s2.topk = 2048;
  const host_workload w1 = make_workload(s1), w2 = make_workload(s2);
  const indexer_args a1 = publishing(w1), a2 = w2.indexer();
  const gpu_output serial1 = run_gpu(a1), serial2 = run_gpu(a2);
  REQUIRE(serial1.st.ok());
  REQUIRE(serial2.st.ok());
  owned_stream first, second;
  for (int round = 0; round < 5; ++round) {
    INFO("round " << round);
    const gpu_call<indexer_args> c1(a1, first.s), c2(a2, second.s);
    const status l1 = c1.launch(), l2 = c2.launch();  // both in flight before either is awaited
    const gpu_output o1 = c1.finish(l1), o2 = c2.finish(l2);
    REQUIRE(o1.st.ok());
    REQUIRE(o2.st.ok());
    CHECK(o1.topk == serial1.topk);
    CHECK(o1.candidates == serial1.candidates);
    CHECK(o2.topk == serial2.topk);
  }
}

TEST_CASE("gpu reliability: host threads with their own streams give the serial results",
          "[gpu][reliability][concurrency]") {
  REQUIRE_GPU();
  constexpr int threads = 4, rounds = 3;
  std::vector<host_workload> work;
  std::vector<gpu_output> serial;
  for (int i = 0; i < threads; ++i) {
    workload_spec s = decode_spec(2 + i, 4000 + 3000 * i, 1 + i % 3, 83 + i);
    s.topk = 256 << (i % 3);
    work.push_back(make_workload(s));
    serial.push_back(run_gpu(publishing(work.back())));
    REQUIRE(serial.back().st.ok());
  }
  check_concurrent_rounds(work, serial, rounds, [](int) {});
}

TEST_CASE("gpu reliability: repeated runs are bitwise identical", "[gpu][reliability]") {
  REQUIRE_GPU();
  workload_spec s = decode_spec(16, 8000, 2, 89);
  s.topk = 2048;
  const host_workload w = make_workload(s);
  for (output_order order : {output_order::position, output_order::score}) {
    indexer_args a = publishing(w);
    a.topk.order = order;
    const gpu_output first = run_gpu(a);
    REQUIRE(first.st.ok());
    for (int i = 0; i < 10; ++i) {
      const gpu_output again = run_gpu(a);
      CHECK(again.topk == first.topk);
      CHECK(again.candidates == first.candidates);
    }
  }
}

// Last: without Catch2 v3, a skip ends the process (exit 4), and one GPU skips this case.
TEST_CASE("gpu reliability: two GPUs at once from two threads give each batch's serial results",
          "[gpu][reliability][concurrency][multi-gpu]") {
  REQUIRE_GPU();
  int devices = 0;
  gpu_check(platform::get_device_count(&devices), "device count");
  if (devices < 2) MXI_SKIP("one GPU here: the two-GPU case needs two devices");
  constexpr int gpus = 2, rounds = 3;
  // Different shapes on the two devices (different row groups and k), so that a per-device cache
  // or launch attribute shared by mistake shows; the serial results come from device 0.
  std::vector<host_workload> work;
  std::vector<gpu_output> serial;
  for (int i = 0; i < gpus; ++i) {
    workload_spec s = decode_spec(3 + i, 6000 + 3000 * i, 1 + i, 101 + i);
    s.topk = 512 << i;
    work.push_back(make_workload(s));
    serial.push_back(run_gpu(publishing(work.back())));
    REQUIRE(serial.back().st.ok());
  }
  // Thread i on device i.
  check_concurrent_rounds(work, serial, rounds,
                          [](int i) { gpu_check(platform::set_device(i), "set device"); });
}
