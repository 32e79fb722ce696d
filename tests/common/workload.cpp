#include "workload.hpp"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <thread>

namespace mxi::testing {

workload_spec decode_spec(int batch, int context, int next_n, uint64_t seed) {
  workload_spec s;
  s.seed = seed;
  std::mt19937_64 rng(seed ^ 0x9E3779B97F4A7C15ull);
  std::uniform_real_distribution<double> spread(0.7, 1.3);
  for (int b = 0; b < batch; ++b) {
    s.query_lens.push_back(next_n);
    s.seq_lens.push_back(std::max<int32_t>(next_n, static_cast<int32_t>(context * spread(rng))));
  }
  return s;
}

workload_spec prefill_spec(std::vector<int32_t> lengths, uint64_t seed) {
  workload_spec s;
  s.seed = seed;
  s.query_lens = lengths;
  s.seq_lens = std::move(lengths);
  return s;
}

int64_t host_workload::visible(int64_t t) const {
  const int r = request_of(t);
  const int64_t n = query_start_loc[r + 1] - query_start_loc[r];
  const int64_t p = seq_lens[r] - n + (t - query_start_loc[r]);
  return (p + 1) / spec.compress_ratio;
}

int host_workload::request_of(int64_t t) const {
  const auto it = std::upper_bound(query_start_loc.begin(), query_start_loc.end(), t);
  return static_cast<int>(it - query_start_loc.begin()) - 1;
}

query_view host_workload::queries() const {
  query_view q;
  q.values = q_values.data();
  q.scales = q_scales.data();
  q.weights = weights.data();
  q.num_tokens = num_tokens;
  q.num_heads = spec.num_heads;
  q.head_dim = spec.head_dim;
  return q;
}

cache_view host_workload::cache() const {
  cache_view c;
  c.data = kv_cache.data();
  c.num_pages = num_pages;
  c.page_stride = page_stride;
  c.block_size = spec.block_size;
  c.head_dim = spec.head_dim;
  c.layout = spec.layout;
  return c;
}

request_view host_workload::requests() const {
  request_view r;
  r.query_start_loc = query_start_loc.data();
  r.seq_lens = seq_lens.data();
  r.block_table = block_table.data();
  r.num_requests = static_cast<int>(seq_lens.size());
  r.block_table_stride = max_blocks;
  return r;
}

namespace {

// The fields both entry points share, from a workload.
template <class Args>
Args entry_args(const host_workload& w) {
  Args a;
  a.queries = w.queries();
  a.cache = w.cache();
  a.requests = w.requests();
  a.compress_ratio = w.spec.compress_ratio;
  a.max_model_len = w.max_model_len;
  a.topk.k = w.spec.topk;
  a.topk.stride = w.spec.topk;
  return a;
}

}  // namespace

indexer_args host_workload::indexer() const { return entry_args<indexer_args>(*this); }

candidate_indexer_args host_workload::candidate_indexer() const {
  return entry_args<candidate_indexer_args>(*this);
}

namespace {

// Runs fill(begin, end, rng) over [0, count) in pieces of `piece` items, on every hardware
// thread. Piece i draws from its own generator, seeded by (seed, i), so the result does not depend
// on the number of threads, and the benchmarks' 2M-token caches build in about a second.
template <class Fill>
void fill_in_pieces(uint64_t seed, int64_t count, int64_t piece, const Fill& fill) {
  const int64_t pieces = (count + piece - 1) / piece;
  std::atomic<int64_t> next{0};
  const auto work = [&] {
    for (int64_t i = next++; i < pieces; i = next++) {
      std::seed_seq s{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                      static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32)};
      std::mt19937_64 rng(s);
      fill(i * piece, std::min(count, (i + 1) * piece), rng);
    }
  };
  const int64_t threads =
      std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), pieces);
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

// Quantizes `rows` gaussian rows of D values into packed values and scales.
void quantize_rows(uint64_t seed, int64_t rows, int d, format::scale_rule rule,
                   std::vector<uint8_t>& values, std::vector<uint8_t>& scales) {
  values.resize(static_cast<size_t>(rows) * d / 2);
  scales.resize(static_cast<size_t>(rows) * d / 32);
  fill_in_pieces(seed, rows, 4096, [&](int64_t begin, int64_t end, std::mt19937_64& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> row(d);
    for (int64_t i = begin; i < end; ++i) {
      for (float& x : row) x = normal(rng);
      format::quantize_row([&](int j) { return row[j]; }, d, values.data() + i * d / 2,
                           scales.data() + i * d / 32, rule);
    }
  });
}

}  // namespace

host_workload make_workload(const workload_spec& spec) {
  host_workload w;
  w.spec = spec;
  std::mt19937_64 rng(spec.seed);
  const int d = spec.head_dim, h = spec.num_heads, bs = spec.block_size;
  const int r_count = static_cast<int>(spec.query_lens.size());

  w.query_start_loc.assign(1, 0);
  for (int32_t n : spec.query_lens) w.query_start_loc.push_back(w.query_start_loc.back() + n);
  w.seq_lens = spec.seq_lens;
  w.num_tokens = w.query_start_loc.back();

  int64_t widest = 1;
  for (int r = 0; r < r_count; ++r)
    widest = std::max<int64_t>(widest, w.seq_lens[r] / spec.compress_ratio);
  w.max_model_len = spec.max_model_len > 0 ? spec.max_model_len : widest;
  w.max_blocks = std::max<int64_t>(1, (widest + bs - 1) / bs);

  // Pages are handed out in a shuffled order, so the block table is a real indirection.
  int64_t used = 0;
  for (int r = 0; r < r_count; ++r) used += (w.seq_lens[r] / spec.compress_ratio + bs - 1) / bs;
  w.num_pages = used + spec.extra_pages;
  std::vector<int32_t> pages(static_cast<size_t>(w.num_pages));
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), rng);
  w.block_table.assign(static_cast<size_t>(r_count * w.max_blocks), -1);
  size_t next = 0;
  for (int r = 0; r < r_count; ++r) {
    const int64_t need = (w.seq_lens[r] / spec.compress_ratio + bs - 1) / bs;
    for (int64_t b = 0; b < need; ++b) w.block_table[r * w.max_blocks + b] = pages[next++];
  }

  const layout::page_shape shape{bs, d};
  w.page_stride = shape.data_bytes() + spec.page_padding;
  w.kv_cache.resize(static_cast<size_t>(w.num_pages * w.page_stride));
  // Padding and unused pages hold noise, so a kernel that reads them is caught. Each generator
  // stream has its own seed, derived from the workload's.
  const auto stream = [&](uint64_t i) { return spec.seed * 0x9E3779B97F4A7C15ull + i; };
  fill_in_pieces(stream(1), static_cast<int64_t>(w.kv_cache.size()), 1 << 20,
                 [&](int64_t begin, int64_t end, std::mt19937_64& rng) {
                   for (int64_t i = begin; i < end; ++i)
                     w.kv_cache[i] = static_cast<uint8_t>(rng() >> 56);
                 });

  const int64_t tokens = w.num_pages * bs;
  std::vector<uint8_t> kv, ks;
  const int distinct = spec.keys == key_pattern::all_equal ? 1 : 4;
  quantize_rows(stream(2), spec.keys == key_pattern::gaussian ? tokens : distinct, d, spec.rule, kv,
                ks);
  fill_in_pieces(
      stream(3), w.num_pages, 256, [&](int64_t begin, int64_t end, std::mt19937_64& rng) {
        std::uniform_int_distribution<int> pick(0, distinct - 1);
        for (int64_t p = begin; p < end; ++p) {
          uint8_t* page = w.kv_cache.data() + p * w.page_stride;
          for (int t = 0; t < bs; ++t) {
            const int64_t row = spec.keys == key_pattern::gaussian ? p * bs + t : pick(rng);
            layout::dispatch(spec.layout, [&](auto L) {
              layout::write_token<decltype(L)>(page, shape, t, kv.data() + row * d / 2,
                                               ks.data() + row * d / 32);
            });
          }
        }
      });

  quantize_rows(stream(4), w.num_tokens * h, d, spec.rule, w.q_values, w.q_scales);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  w.weights.resize(static_cast<size_t>(w.num_tokens * h));
  for (float& x : w.weights) x = normal(rng) / static_cast<float>(h);
  return w;
}

}  // namespace mxi::testing
