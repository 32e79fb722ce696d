// The public entry points end to end, as an engine calls them: run_indexer (top-k only, with
// logits, with candidate publishing, from bf16 queries), run_candidate_indexer, write_k_cache and
// quantize_q, on the shapes of docs/performance.md, with the max_model_len an engine configures.
//
// Timing: GPU events around one public call, L2 flushed before each (by reading 256 MiB, or with
// a 256 MiB memset when the `memset` argument is 1: the peers' figures use that one, and the dirty
// lines it leaves cost the next kernel their write-back). Every decode and candidate case also
// times a paged gather of the same pages in the same run (each visible token's 68 bytes through
// the block table, 16-byte loads): the floor the call is reported against (`x_floor`).
// Workloads: keys N(0, 1), page 64 with shuffled ids, contexts uniform in 0.7-1.3x, H 64, D 128.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

#include "device_buffer.hpp"
#include "device_inputs.hpp"
#include "gpu_timer.hpp"
#include "l2_flush.hpp"
#include "mxi/mxi.hpp"
#include "workload.hpp"

namespace {

using namespace mxi;
using mxi::testing::device_buffer;
using mxi::testing::gpu_check;

// ------------------------------------------------------------------------------------------
// The floor and the flush

/// One visible page of one request: its id and the tokens of it that are visible.
struct visible_page {
  int32_t page;
  int32_t tokens;
};

/// Reads every visible token's value and scale bytes (linear layout), one warp a page.
__global__ void paged_gather(const uint8_t* cache, int64_t page_stride, int block_size,
                             const visible_page* pages, int64_t num_pages, uint32_t* sink) {
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= num_pages) return;
  const visible_page p = pages[warp];
  const uint8_t* base = cache + static_cast<int64_t>(p.page) * page_stride;
  const auto* values = reinterpret_cast<const uint4*>(base);
  const auto* scales = reinterpret_cast<const uint4*>(base + static_cast<int64_t>(block_size) * 64);
  uint32_t acc = 0;
  for (int v = lane; v < p.tokens * 4; v += 32) {
    const uint4 x = values[v];
    acc ^= x.x ^ x.y ^ x.z ^ x.w;
  }
  for (int v = lane; v < (p.tokens + 3) / 4; v += 32) {
    const uint4 x = scales[v];
    acc ^= x.x ^ x.y ^ x.z ^ x.w;
  }
  if (acc == 0x9E3779B9u) *sink = acc;  // keeps the loads; practically never taken
}

/// Copies with 16-byte loads and stores: the copy-bandwidth ceiling the figures are set beside.
__global__ void copy_vectors(const uint4* src, uint4* dst, size_t vectors) {
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

/// Median of `iterations` flushed timings of `work`.
template <class Work>
double median_time(bool memset, int iterations, Work&& work) {
  testing::gpu_timer timer;
  work();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < iterations; ++i) {
    bench::flush_l2(memset);
    t.push_back(timer.time(work));
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

// ------------------------------------------------------------------------------------------
// A workload on the device, kept across benchmarks of the same shape

struct device_case {
  testing::host_workload host;
  testing::device_inputs inputs;
  indexer_args args;  ///< pointing at `inputs`, outputs unset
  device_buffer<visible_page> pages;
  device_buffer<uint32_t> sink{1};
  int64_t distinct_tokens = 0;  ///< visible K tokens, each request's range once
  int64_t scored = 0;           ///< (row, key) pairs

  explicit device_case(const testing::workload_spec& spec)
      : host(testing::make_workload(spec)), inputs(host.indexer()), args(host.indexer()) {
    inputs.point(args);
    std::vector<visible_page> list;
    const int requests = static_cast<int>(host.seq_lens.size());
    for (int r = 0; r < requests; ++r) {
      const int64_t len = host.seq_lens[r];
      distinct_tokens += len;
      for (int64_t s = 0; s < len; s += spec.block_size)
        list.push_back({host.block_table[r * host.max_blocks + s / spec.block_size],
                        static_cast<int32_t>(std::min<int64_t>(spec.block_size, len - s))});
    }
    for (int64_t t = 0; t < host.num_tokens; ++t) scored += host.visible(t);
    pages = device_buffer<visible_page>(list);
  }

  double k_bytes() const { return static_cast<double>(distinct_tokens) * 68; }

  void gather() const {
    const int64_t n = static_cast<int64_t>(pages.size());
    paged_gather<<<static_cast<unsigned>((n + 7) / 8), 256>>>(inputs.cache.data(), host.page_stride,
                                                              host.spec.block_size, pages.data(), n, sink.data());
    gpu_check(platform::last_error(), "gather");
  }
};

/// Decode: `batch` requests of ~`context` tokens, `next_n` query tokens each.
/// One case at a time lives on the device; consecutive benchmarks of one shape share it.
device_case& decode_case(int batch, int context, int next_n) {
  static std::tuple<int, int, int> shape;
  static std::unique_ptr<device_case> c;
  if (!c || shape != std::make_tuple(batch, context, next_n)) {
    c.reset();
    testing::workload_spec spec = testing::decode_spec(batch, context, next_n);
    spec.extra_pages = 0;
    c = std::make_unique<device_case>(spec);
    shape = {batch, context, next_n};
  }
  return *c;
}

/// One public call's outputs and workspace on the device.
struct call_buffers {
  device_buffer<int32_t> topk;
  device_buffer<float> logits;
  device_buffer<int32_t> pool;
  device_buffer<char> workspace;
  device_buffer<uint32_t> error{1};
};

template <class Args>
void prepare(Args& a, call_buffers& b, int k) {
  b.topk = device_buffer<int32_t>(static_cast<size_t>(a.queries.num_tokens) * k);
  a.topk = {b.topk.data(), k, k};
  size_t bytes = 0;
  const status s = workspace_bytes(a, backend::gpu, bytes);
  if (!s) throw std::runtime_error(s.message());
  b.workspace = device_buffer<char>(bytes);
  b.error.fill_bytes(0);
}

execution exec_of(call_buffers& b) {
  execution e;
  e.where = backend::gpu;
  e.workspace = b.workspace.data();
  e.workspace_bytes = b.workspace.bytes();
  e.error_word = b.error.data();
  return e;
}

void check(const status& s) {
  if (!s) throw std::runtime_error(s.message());
}

// ------------------------------------------------------------------------------------------
// Benchmarks

enum class extra : int { none = 0, logits = 1, publish = 2 };

/// Args: batch, context, next_n, max_model_len (0: 1M), k, memset flush, extra output.
void decode(benchmark::State& state) {
  if (!testing::gpu_present()) return state.SkipWithError("no GPU");
  const int batch = static_cast<int>(state.range(0)), context = static_cast<int>(state.range(1));
  const int next_n = static_cast<int>(state.range(2));
  const int64_t mml = state.range(3) > 0 ? state.range(3) : int64_t{1} << 20;
  const int k = static_cast<int>(state.range(4));
  const bool memset = state.range(5) != 0;
  const auto what = static_cast<extra>(state.range(6));
  device_case& c = decode_case(batch, context, next_n);
  if (mml < c.host.max_model_len) return state.SkipWithError("max_model_len below the workload's longest row");

  indexer_args a = c.args;
  a.max_model_len = mml;
  call_buffers b;
  if (what == extra::logits) {
    b.logits = device_buffer<float>(static_cast<size_t>(a.queries.num_tokens) * mml);
    a.logits = {b.logits.data(), mml, false};
  }
  if (what == extra::publish) {
    b.pool = device_buffer<int32_t>(static_cast<size_t>(a.queries.num_tokens) * 2048);
    a.candidates = {b.pool.data(), 2048, 2048, 8};
  }
  prepare(a, b, k);
  const execution e = exec_of(b);
  const double t = median_time(memset, 20, [&] { check(run_indexer(a, e)); });
  const double floor = median_time(memset, 20, [&] { c.gather(); });
  for (auto _ : state) state.SetIterationTime(t);
  state.counters["floor_us"] = floor * 1e6;
  state.counters["x_floor"] = t / floor;
  state.counters["K_GB/s"] = c.k_bytes() / t * 1e-9;
  state.counters["TFLOP/s"] = static_cast<double>(c.scored) * 2 * 64 * 128 / t * 1e-12;
  state.counters["workspace_MiB"] = static_cast<double>(b.workspace.bytes()) / (1 << 20);
}

/// How an engine's step hands its queries to run_indexer (decode_step's `q`).
enum class queries_in : int {
  mxfp4 = 0,            ///< already quantized (quantize_q ran earlier, untimed): the call alone
  bf16 = 1,             ///< bf16 into the call, quantized in its first kernel
  bf16_quantize_q = 2,  ///< bf16 through quantize_q, then the call: two calls
};

/// An engine's decode step from bf16 queries (N(0, 1)) to top-k, each way `queries_in` names, all
/// three scoring the same quantized queries. Args: batch, context, q (queries_in). next_n 1,
/// k 2048, max_model_len 1M, read flush.
void decode_step(benchmark::State& state) {
  if (!testing::gpu_present()) return state.SkipWithError("no GPU");
  const int batch = static_cast<int>(state.range(0)), context = static_cast<int>(state.range(1));
  const auto how = static_cast<queries_in>(state.range(2));
  device_case& c = decode_case(batch, context, 1);
  indexer_args a = c.args;
  a.max_model_len = int64_t{1} << 20;
  const size_t elems = static_cast<size_t>(a.queries.num_tokens) * a.queries.num_heads * 128;
  std::vector<uint16_t> host(elems);
  std::mt19937 rng(6);
  std::normal_distribution<float> nd;
  for (uint16_t& x : host) x = static_cast<uint16_t>(bit_cast<uint32_t>(nd(rng)) >> 16);
  const device_buffer<uint16_t> q(host);
  device_buffer<uint8_t> values(elems / 2), scales(elems / 32);
  q_quantize_args quantize;
  quantize.q = q.data();
  quantize.q_type = float_type::bf16;
  quantize.num_tokens = a.queries.num_tokens;
  quantize.num_heads = a.queries.num_heads;
  quantize.values = values.data();
  quantize.scales = scales.data();
  execution plain;
  plain.where = backend::gpu;
  check(quantize_q(quantize, plain));
  a.queries.values = values.data();
  a.queries.scales = scales.data();
  if (how == queries_in::bf16) {
    a.queries.values = a.queries.scales = nullptr;
    a.queries.q = q.data();
    a.queries.q_type = float_type::bf16;
  }
  call_buffers b;
  prepare(a, b, 2048);
  const execution e = exec_of(b);
  const double t = median_time(false, 20, [&] {
    if (how == queries_in::bf16_quantize_q) check(quantize_q(quantize, e));
    check(run_indexer(a, e));
  });
  for (auto _ : state) state.SetIterationTime(t);
  state.counters["workspace_MiB"] = static_cast<double>(b.workspace.bytes()) / (1 << 20);
}

/// Args: batch, context, pool blocks, memset flush. Candidate block size 8, max_model_len 1M.
void candidate(benchmark::State& state) {
  if (!testing::gpu_present()) return state.SkipWithError("no GPU");
  const int batch = static_cast<int>(state.range(0)), context = static_cast<int>(state.range(1));
  const int ncb = static_cast<int>(state.range(2));
  const bool memset = state.range(3) != 0;
  device_case& c = decode_case(batch, context, 1);
  candidate_indexer_args a = c.host.candidate_indexer();
  c.inputs.point(a);
  a.max_model_len = int64_t{1} << 20;
  // A pool per row: ncb distinct live blocks drawn at random, ascending.
  std::vector<int32_t> pool(static_cast<size_t>(a.queries.num_tokens) * ncb);
  std::mt19937 rng(7);
  for (int64_t t = 0; t < a.queries.num_tokens; ++t) {
    const int32_t live = static_cast<int32_t>(c.host.visible(t) / 8);
    std::vector<int32_t> ids(static_cast<size_t>(live));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    ids.resize(std::min<size_t>(ids.size(), static_cast<size_t>(ncb)));
    std::sort(ids.begin(), ids.end());
    ids.resize(static_cast<size_t>(ncb), -1);
    std::copy(ids.begin(), ids.end(), pool.begin() + t * ncb);
  }
  device_buffer<int32_t> pool_d(pool);
  a.candidates = {pool_d.data(), ncb, ncb, 8};
  call_buffers b;
  prepare(a, b, 2048);
  const execution e = exec_of(b);
  const double t = median_time(memset, 20, [&] { check(run_candidate_indexer(a, e)); });
  for (auto _ : state) state.SetIterationTime(t);
  const double pool_bytes = static_cast<double>(a.queries.num_tokens) * ncb * 8 * 68;
  state.counters["pool_floor_us"] = pool_bytes / 4.0e12 * 1e6;  // at 4 TB/s
  state.counters["pool_GB/s"] = pool_bytes / t * 1e-9;
}

/// Args: prompt length, max_model_len (0: the prompt length). One causal request, k 2048.
void prefill(benchmark::State& state) {
  if (!testing::gpu_present()) return state.SkipWithError("no GPU");
  const int length = static_cast<int>(state.range(0));
  static std::unique_ptr<device_case> c;
  if (!c || c->host.num_tokens != length) {
    c.reset();
    testing::workload_spec spec = testing::prefill_spec({length});
    spec.extra_pages = 0;
    c = std::make_unique<device_case>(spec);
  }
  indexer_args a = c->args;
  a.max_model_len = state.range(1) > 0 ? state.range(1) : length;
  call_buffers b;
  prepare(a, b, 2048);
  const execution e = exec_of(b);
  const double t = median_time(false, 3, [&] { check(run_indexer(a, e)); });
  for (auto _ : state) state.SetIterationTime(t);
  state.counters["TFLOP/s"] = static_cast<double>(c->scored) * 2 * 64 * 128 / t * 1e-12;
  state.counters["workspace_MiB"] = static_cast<double>(b.workspace.bytes()) / (1 << 20);
}

/// Args: tokens, bf16 input. Slots of a cache of exactly that many tokens: a random permutation
/// of its tokens (write_cache: the scattered writes of decode steps, the worst case) or of its
/// 64-token pages, tokens in order within each (write_cache_pages: a prefill's writes).
void write_cache_slots(benchmark::State& state, bool whole_pages) {
  if (!testing::gpu_present()) return state.SkipWithError("no GPU");
  const int64_t n = state.range(0);
  const bool bf16 = state.range(1) != 0;
  const size_t elem = bf16 ? 2 : 4;
  device_buffer<uint8_t> k(static_cast<size_t>(n) * 128 * elem);
  {
    std::vector<float> host(static_cast<size_t>(n) * 128);
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    for (float& x : host) x = nd(rng);
    std::vector<uint8_t> bytes(k.size());
    for (size_t i = 0; i < host.size(); ++i) {
      if (bf16) {
        const uint32_t bits = bit_cast<uint32_t>(host[i]);
        bytes[2 * i] = static_cast<uint8_t>(bits >> 16);
        bytes[2 * i + 1] = static_cast<uint8_t>(bits >> 24);
      } else {
        std::memcpy(&bytes[4 * i], &host[i], 4);
      }
    }
    k.upload(bytes);
  }
  const int64_t pages = (n + 63) / 64;
  std::vector<int64_t> slots(static_cast<size_t>(n));
  if (whole_pages) {
    std::vector<int64_t> order(static_cast<size_t>(pages));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(5));
    for (int64_t i = 0; i < n; ++i) slots[i] = order[i / 64] * 64 + i % 64;
  } else {
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), std::mt19937(5));
  }
  device_buffer<int64_t> slots_d(slots);
  device_buffer<uint8_t> cache(static_cast<size_t>(pages) * 64 * 68);
  k_cache_write_args a;
  a.k = k.data();
  a.k_type = bf16 ? float_type::bf16 : float_type::f32;
  a.num_tokens = n;
  a.slot_mapping = slots_d.data();
  a.cache = {cache.data(), pages, 64 * 68, 64, 128, cache_layout::linear};
  execution e;
  e.where = backend::gpu;
  const double t = median_time(false, 10, [&] { check(write_k_cache(a, e)); });
  for (auto _ : state) state.SetIterationTime(t);
  const double bytes = static_cast<double>(n) * (128 * elem + 68 + 8);
  state.counters["in+out_GB/s"] = bytes / t * 1e-9;
}

void write_cache(benchmark::State& state) { write_cache_slots(state, false); }
void write_cache_pages(benchmark::State& state) { write_cache_slots(state, true); }

/// Args: tokens, heads. fp32 input.
void quantize(benchmark::State& state) {
  if (!testing::gpu_present()) return state.SkipWithError("no GPU");
  const int64_t tokens = state.range(0);
  const int heads = static_cast<int>(state.range(1));
  const size_t elems = static_cast<size_t>(tokens) * heads * 128;
  std::vector<float> host(elems);
  std::mt19937 rng(4);
  std::normal_distribution<float> nd;
  for (float& x : host) x = nd(rng);
  device_buffer<float> q(host);
  device_buffer<uint8_t> values(elems / 2), scales(elems / 32);
  q_quantize_args a;
  a.q = q.data();
  a.num_tokens = tokens;
  a.num_heads = heads;
  a.values = values.data();
  a.scales = scales.data();
  execution e;
  e.where = backend::gpu;
  const double t = median_time(false, 20, [&] { check(quantize_q(a, e)); });
  for (auto _ : state) state.SetIterationTime(t);
  state.counters["in+out_GB/s"] = static_cast<double>(elems) * (4 + 0.5 + 1.0 / 32) / t * 1e-9;
}

__global__ void empty_kernel() {}

/// quantize_q's traffic without its arithmetic: four lanes a 32-element block, each reading its
/// 8 fp32 (two 16-byte loads) and writing 4 bytes, the group's first lane the scale byte.
__global__ void move_quantize_bytes(const float4* q, uint32_t* values, uint8_t* scales,
                                    int64_t lanes) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= lanes) return;
  const float4 a = q[2 * i], b = q[2 * i + 1];
  const uint32_t w = __float_as_uint(a.x) ^ __float_as_uint(a.y) ^ __float_as_uint(a.z) ^
                     __float_as_uint(a.w) ^ __float_as_uint(b.x) ^ __float_as_uint(b.y) ^
                     __float_as_uint(b.z) ^ __float_as_uint(b.w);
  values[i] = w;
  if (i % 4 == 0) scales[i / 4] = static_cast<uint8_t>(w >> 23);
}

/// The floor under quantize_q: the same bytes in and out, one kernel of the same shape, flushed
/// and timed as the call is. Args: tokens, heads.
void quantize_floor(benchmark::State& state) {
  if (!testing::gpu_present()) return state.SkipWithError("no GPU");
  const size_t elems = static_cast<size_t>(state.range(0)) * state.range(1) * 128;
  device_buffer<float> q(std::vector<float>(elems, 1.0f));
  device_buffer<uint8_t> values(elems / 2), scales(elems / 32);
  const int64_t lanes = static_cast<int64_t>(elems / 8);
  const double t = median_time(false, 20, [&] {
    move_quantize_bytes<<<static_cast<unsigned>((lanes + 255) / 256), 256>>>(
        reinterpret_cast<const float4*>(q.data()), reinterpret_cast<uint32_t*>(values.data()),
        scales.data(), lanes);
    gpu_check(platform::last_error(), "quantize floor");
  });
  for (auto _ : state) state.SetIterationTime(t);
  state.counters["in+out_GB/s"] = static_cast<double>(elems) * (4 + 0.5 + 1.0 / 32) / t * 1e-9;
}

/// The fixed cost of a call of one kernel under this timer: an empty kernel, flushed and timed as
/// the calls are (the floor under quantize_q's few microseconds).
void launch(benchmark::State& state) {
  if (!testing::gpu_present()) return state.SkipWithError("no GPU");
  const double t = median_time(false, 20, [&] {
    empty_kernel<<<1, 32>>>();
    gpu_check(platform::last_error(), "empty kernel");
  });
  for (auto _ : state) state.SetIterationTime(t);
}

/// The ceiling: a 1 GiB device-to-device copy, bytes read plus bytes written.
void copy(benchmark::State& state) {
  if (!testing::gpu_present()) return state.SkipWithError("no GPU");
  const size_t bytes = size_t{1} << 30;
  device_buffer<uint4> src(bytes / 16), dst(bytes / 16);
  src.fill_bytes(1);
  const double t = median_time(false, 10, [&] {
    copy_vectors<<<132 * 8, 512>>>(src.data(), dst.data(), src.size());
    gpu_check(platform::last_error(), "copy");
  });
  for (auto _ : state) state.SetIterationTime(t);
  state.counters["read+write_TB/s"] = 2.0 * static_cast<double>(bytes) / t * 1e-12;
}

constexpr int64_t mib = 1 << 20, kib = 1 << 10;

void decode_args(benchmark::internal::Benchmark* b) {
  // 64 x 32K at an engine's max_model_len (1M), both flushes; max_model_len at fixed work;
  // logits out; candidate publishing; K. Then next_n, other shapes, context and batch.
  for (int memset : {0, 1}) b->Args({64, 32768, 1, mib, 2048, memset, 0});
  for (int64_t mml : {48 * kib, 128 * kib, 256 * kib, 512 * kib}) b->Args({64, 32768, 1, mml, 2048, 0, 0});
  b->Args({64, 32768, 1, 128 * kib, 2048, 0, 1});
  b->Args({64, 32768, 1, mib, 2048, 0, 2});
  for (int k : {512, 1024, 4096}) b->Args({64, 32768, 1, mib, k, 0, 0});
  for (int next_n : {2, 4})
    for (int memset : {0, 1}) b->Args({64, 32768, next_n, mib, 2048, memset, 0});
  b->Args({256, 8192, 1, mib, 2048, 0, 0});
  b->Args({16, 131072, 1, mib, 2048, 0, 0});
  b->Args({4, 262144, 1, mib, 2048, 0, 0});
  b->Args({1, 32768, 1, mib, 2048, 0, 0});
  for (int ctx : {4096, 16384, 65536}) b->Args({64, ctx, 1, mib, 2048, 0, 0});
  for (int batch : {8, 128}) b->Args({batch, 32768, 1, mib, 2048, 0, 0});
  b->ArgNames({"batch", "ctx", "next_n", "mml", "k", "memset", "extra"});
  b->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
}

BENCHMARK(copy)->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
BENCHMARK(launch)->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
BENCHMARK(decode)->Apply(decode_args);
// The three ways to the same step side by side: decode_step/.../q:1 against q:0 is what quantizing
// inside the call costs, against q:2 what it saves.
BENCHMARK(decode_step)
    ->Apply([](benchmark::internal::Benchmark* b) {
      for (int batch : {1, 8, 64})
        for (int q : {0, 1, 2}) b->Args({batch, 32768, q});
    })
    ->ArgNames({"batch", "ctx", "q"})
    ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
BENCHMARK(candidate)
    ->Args({16, 131072, 2048, 0})
    ->ArgNames({"batch", "ctx", "ncb", "memset"})
    ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
BENCHMARK(prefill)
    ->Args({8192, 0})->Args({32768, 0})
    ->ArgNames({"T", "mml"})
    ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(write_cache)
    ->Args({2 * mib, 0})->Args({2 * mib, 1})
    ->ArgNames({"tokens", "bf16"})
    ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
BENCHMARK(write_cache_pages)
    ->Args({2 * mib, 0})->Args({2 * mib, 1})
    ->ArgNames({"tokens", "bf16"})
    ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
BENCHMARK(quantize)
    ->Args({64, 64})
    ->ArgNames({"tokens", "heads"})
    ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
BENCHMARK(quantize_floor)
    ->Args({64, 64})
    ->ArgNames({"tokens", "heads"})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
