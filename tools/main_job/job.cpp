#include "job.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "gpu_run.hpp"
#include "row_check.hpp"

namespace mxi::tools {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// A mixed batch: requests with `query_lens[i]` new tokens at the end of `seq_lens[i]` tokens.
testing::workload_spec batch_spec(std::vector<int32_t> query_lens, std::vector<int32_t> seq_lens,
                                  uint64_t seed) {
  testing::workload_spec s;
  s.query_lens = std::move(query_lens);
  s.seq_lens = std::move(seq_lens);
  s.seed = seed;
  return s;
}

// What a phase asks of the backend, counted from the batch (no model of the hardware).
struct phase_work {
  int64_t pairs = 0;         ///< (row, visible key) pairs
  int64_t ranked_rows = 0;   ///< rows with more visible keys than K, where selection matters
  int64_t ranked_pairs = 0;  ///< pairs of those rows: the only scores a top-k needs
  int64_t floor_bytes = 0;   ///< K-cache bytes holding a visible key of some row, each once
  int64_t row_bytes = 0;     ///< K-cache bytes if every row read its visible keys itself
  int64_t query_bytes = 0;   ///< q values, q scales and weights
  double flops = 0;          ///< 2 * H * D per pair
};

phase_work count_work(const testing::host_workload& w) {
  phase_work work;
  const testing::workload_spec& s = w.spec;
  const int64_t token_bytes = layout::page_shape{s.block_size, s.head_dim}.bytes_per_token();
  std::vector<int64_t> widest(w.seq_lens.size(), 0);
  for (int64_t t = 0; t < w.num_tokens; ++t) {
    const int64_t v = w.visible(t);
    work.pairs += v;
    work.ranked_rows += v > s.topk;
    work.ranked_pairs += v > s.topk ? v : 0;
    int64_t& r_widest = widest[w.request_of(t)];
    r_widest = std::max(r_widest, v);
  }
  work.floor_bytes = std::accumulate(widest.begin(), widest.end(), int64_t{0}) * token_bytes;
  work.row_bytes = work.pairs * token_bytes;
  work.query_bytes = static_cast<int64_t>(w.q_values.size() + w.q_scales.size() +
                                          w.weights.size() * sizeof(float));
  work.flops = 2.0 * s.num_heads * s.head_dim * static_cast<double>(work.pairs);
  return work;
}

// Throws when a run failed or reported device errors on a batch that is valid.
void throw_if_failed(const status& s, uint32_t word, backend where) {
  if (!s.ok()) throw std::runtime_error(std::string(backend_name(where)) + ": " + s.message());
  if (word != device_error_none)
    throw std::runtime_error("device errors on a valid batch: " + describe_device_errors(word));
}

void print_run(const std::string& name, size_t index, double seconds) {
  std::printf("[%s] run %zu: %.3f ms\n", name.c_str(), index, 1e3 * seconds);
  std::fflush(stdout);
}

// Times whole-batch runs: on the host, at least twice and until about a second has gone (at most
// 5 runs, wall clock); on the GPU, 20 runs on device-resident inputs (GPU events).
std::vector<double> time_runs(const indexer_args& args, backend where, const std::string& name) {
  std::vector<double> times;
  uint32_t word = 0;
  if (where == backend::gpu) {
    throw_if_failed(run_indexer_on_gpu(args, 20, times, word), word, where);
    for (size_t i = 0; i < times.size(); ++i) print_run(name, i + 1, times[i]);
    return times;
  }
  execution exec;
  exec.where = where;
  exec.error_word = &word;
  const auto start = clock_type::now();
  while (times.size() < 2 || (seconds_since(start) < 1.0 && times.size() < 5)) {
    const auto run_start = clock_type::now();
    throw_if_failed(run_indexer(args, exec), word, where);
    times.push_back(seconds_since(run_start));
    print_run(name, times.size(), times.back());
  }
  return times;
}

// The rows to check: every row, or a seeded sample that always holds each request's last row.
std::vector<int64_t> rows_to_check(const testing::host_workload& w, int64_t count, uint64_t seed) {
  std::vector<int64_t> rows(static_cast<size_t>(w.num_tokens));
  std::iota(rows.begin(), rows.end(), 0);
  if (count <= 0 || count >= w.num_tokens) return rows;
  std::mt19937_64 rng(seed);
  std::shuffle(rows.begin(), rows.end(), rng);
  rows.resize(static_cast<size_t>(count));
  for (size_t r = 1; r < w.query_start_loc.size(); ++r)
    if (w.query_start_loc[r] > w.query_start_loc[r - 1]) rows.push_back(w.query_start_loc[r] - 1);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

// Checks `rows` of `topk` on every core, printing the percentage done; returns the mismatches.
int64_t check_rows(const testing::host_workload& w, const std::vector<int64_t>& rows,
                   const std::vector<int32_t>& topk, const std::string& name) {
  std::atomic<size_t> next{0};
  std::mutex print;
  size_t done = 0, printed_tenths = 0;
  int64_t mismatches = 0;
  auto worker = [&] {
    for (size_t i; (i = next++) < rows.size();) {
      const int64_t t = rows[i];
      const std::string wrong = check_row(w, t, topk.data() + t * w.spec.topk);
      std::lock_guard<std::mutex> lock(print);
      if (!wrong.empty() && mismatches++ < 5)
        std::printf("\n[%s] MISMATCH row %lld: %s", name.c_str(), static_cast<long long>(t),
                    wrong.c_str());
      const size_t tenths = 10 * ++done / rows.size();
      for (; printed_tenths < tenths; ++printed_tenths)
        std::printf(" %zu%%", 10 * (printed_tenths + 1));
      std::fflush(stdout);
    }
  };
  std::printf("[%s] checking %zu of %lld rows against the reference:", name.c_str(), rows.size(),
              static_cast<long long>(w.num_tokens));
  std::fflush(stdout);
  std::vector<std::thread> threads(std::max(1u, std::thread::hardware_concurrency()));
  for (auto& th : threads) th = std::thread(worker);
  for (auto& th : threads) th.join();
  std::printf("\n");
  return mismatches;
}

double megabytes(int64_t bytes) { return static_cast<double>(bytes) / 1e6; }

// A rate with an SI prefix, so a CPU's MB/s and a GPU's TB/s both print readably.
std::string rate(double per_second, const char* unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int p = 0;
  for (; per_second >= 1000 && p < 5; ++p) per_second /= 1000;
  char text[48];
  std::snprintf(text, sizeof text, "%.2f %s%s/s", per_second, prefixes[p], unit);
  return text;
}

}  // namespace

const char* backend_name(backend b) {
  switch (b) {
    case backend::reference:
      return "reference";
    case backend::cpu:
      return "cpu";
    case backend::gpu:
      return "gpu";
  }
  return "?";
}

std::vector<phase_spec> job_phases(const std::string& size, uint64_t seed, cache_layout layout) {
  // Decode: requests of ~context tokens (uniform in 0.7x..1.3x), next_n tokens each. Prefill:
  // fresh prompts (seq_len = query tokens) and chunked continuations of longer prompts, so some
  // rows see more than K keys and selection matters there too.
  std::vector<phase_spec> phases;
  if (size == "small") {
    phases.push_back({"decode", testing::decode_spec(4, 3072, 2, seed), 0});
    phases.push_back({"prefill", batch_spec({128, 256}, {128, 2304}, seed + 1), 32});
  } else if (size == "default") {
    phases.push_back({"decode", testing::decode_spec(16, 8192, 2, seed), 0});
    phases.push_back({"prefill", batch_spec({1024, 1024, 1536}, {1024, 3072, 1536}, seed + 1), 64});
  } else if (size == "large") {
    phases.push_back({"decode", testing::decode_spec(64, 32768, 4, seed), 64});
    phases.push_back(
        {"prefill", batch_spec({2048, 4096, 4096}, {2048, 16384, 4096}, seed + 1), 64});
  } else {
    throw std::invalid_argument("unknown size '" + size + "'");
  }
  for (phase_spec& p : phases) p.spec.layout = layout;
  return phases;
}

bool run_phase(const phase_spec& phase, backend where, uint64_t seed) {
  const char* name = phase.name.c_str();
  const testing::workload_spec& s = phase.spec;
  std::printf("[%s] generating %zu requests (seed %llu)\n", name, s.query_lens.size(),
              static_cast<unsigned long long>(s.seed));
  std::fflush(stdout);
  auto stage = clock_type::now();
  const testing::host_workload w = testing::make_workload(s);
  const phase_work work = count_work(w);
  std::printf(
      "[%s] generated in %.1f s: T=%lld rows (%lld with more than K visible keys), "
      "H=%d D=%d K=%d BS=%d\n",
      name, seconds_since(stage), static_cast<long long>(w.num_tokens),
      static_cast<long long>(work.ranked_rows), s.num_heads, s.head_dim, s.topk, s.block_size);
  std::printf(
      "[%s] K cache: %lld pages x %lld B (%s) = %.1f MB; queries %.1f MB; "
      "top-k out %.1f MB\n",
      name, static_cast<long long>(w.num_pages), static_cast<long long>(w.page_stride),
      layout::name(s.layout),
      megabytes(static_cast<int64_t>(w.kv_cache.size())), megabytes(work.query_bytes),
      megabytes(w.num_tokens * s.topk * 4));

  std::vector<int32_t> topk(static_cast<size_t>(w.num_tokens * s.topk));
  indexer_args args = w.indexer();
  args.topk.indices = topk.data();
  std::printf("[%s] running on %s\n", name, backend_name(where));
  std::fflush(stdout);
  std::vector<double> times = time_runs(args, where, phase.name);
  std::sort(times.begin(), times.end());
  const double best = times.front(), median = times[times.size() / 2];
  std::printf("[%s] time: %zu runs, best %.2f ms, median %.2f ms\n", name, times.size(), 1e3 * best,
              1e3 * median);
  const double ranked_flops = work.flops * work.ranked_pairs / std::max<int64_t>(1, work.pairs);
  std::printf(
      "[%s] work: %lld (row, visible key) pairs = %.2f GFLOP at 2*H*D per pair; %lld "
      "pairs (%.2f GFLOP) in rows with more than K visible keys\n",
      name, static_cast<long long>(work.pairs), work.flops / 1e9,
      static_cast<long long>(work.ranked_pairs), ranked_flops / 1e9);
  std::printf("[%s] speed (best run): %s effective over all pairs, %s over those rows' pairs\n",
              name, rate(work.flops / best, "FLOP").c_str(),
              rate(ranked_flops / best, "FLOP").c_str());
  std::printf(
      "[%s] K-cache read floor (each visible key once per request): %.1f MB -> %s; "
      "per-row K reads (each row its own keys): %.1f MB -> %s\n",
      name, megabytes(work.floor_bytes), rate(work.floor_bytes / best, "B").c_str(),
      megabytes(work.row_bytes), rate(work.row_bytes / best, "B").c_str());
  std::fflush(stdout);

  stage = clock_type::now();
  const std::vector<int64_t> rows = rows_to_check(w, phase.check_rows, seed ^ s.seed);
  const int64_t mismatches = check_rows(w, rows, topk, phase.name);
  std::printf("[%s] check: %zu rows checked, %lld mismatches (%.1f s)\n", name, rows.size(),
              static_cast<long long>(mismatches), seconds_since(stage));
  std::fflush(stdout);
  return mismatches == 0;
}

}  // namespace mxi::tools
