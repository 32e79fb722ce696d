// Paged MXFP4 logits alone (plan + scoring kernel; row_info runs once before the clock), on the
// anchor shapes: decode B=64 x ~32K (0.7-1.3x) H=64 page 64, next_n 1 and 2 (DeepGEMM's FP8
// logits: 82 us on the H200), and causal prefill of one 8K / 32K-token request. GPU events
// around one launch, L2 flushed (256 MiB memset, bench/l2_flush.hpp) before each; bytes/s counts
// the K bytes of every visible position once plus the logits written; FLOP/s counts 2 * H * D per
// (row, key).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "device_buffer.hpp"
#include "device_inputs.hpp"
#include "gpu_timer.hpp"
#include "l2_flush.hpp"
#include "mxi/device/args_from_views.hpp"
#include "workload.hpp"

namespace {

using namespace mxi;
using mxi::testing::device_buffer;
using mxi::testing::gpu_check;

void bench_logits(benchmark::State& state, bool prefill, arch::target target) {
  if (!mxi::testing::gpu_present()) {
    state.SkipWithError("no GPU");
    return;
  }
  const int batch = static_cast<int>(state.range(0)), context = static_cast<int>(state.range(1));
  const int next_n = static_cast<int>(state.range(2));
  testing::workload_spec spec = prefill ? testing::prefill_spec({context}) : testing::decode_spec(batch, context, next_n);
  spec.extra_pages = 0;
  const testing::host_workload w = testing::make_workload(spec);

  indexer_args args = w.indexer();
  const testing::device_inputs inputs(args);
  inputs.point(args);
  device_buffer<device::row_info> rows(static_cast<size_t>(w.num_tokens));
  const int requests = args.requests.num_requests;
  device_buffer<char> row_ws(device::row_info_workspace(requests));
  gpu_check(
      device::launch_row_info(device::row_info_problem_of(args.queries, args.cache, args.requests,
                                                          args.compress_ratio, args.max_model_len),
                              rows.data(), row_ws.data(), nullptr, nullptr),
      "row_info");

  device::paged_logits_args a = device::paged_logits_args_of(
      args.queries, args.cache, args.requests, args.compress_ratio, rows.data());
  a.ld = w.max_model_len;
  const int64_t out_rows = prefill ? 4096 : w.num_tokens;  // prefill: rows in slices of 4096
  device_buffer<float> out(static_cast<size_t>(out_rows * a.ld));
  a.out = out.data();
  device_buffer<char> ws(device::paged_logits_workspace(w.num_tokens, requests));

  int64_t keys = 0;
  for (int64_t t = 0; t < w.num_tokens; ++t) keys += w.visible(t);
  int64_t distinct_keys = 0;  // K bytes: each request's visible range read once
  for (int r = 0; r < requests; ++r) distinct_keys += w.seq_lens[r];

  testing::gpu_timer timer;
  const auto run = [&] {
    for (int64_t r0 = 0; r0 < w.num_tokens; r0 += out_rows) {
      a.row_begin = r0;
      a.row_end = std::min(w.num_tokens, r0 + out_rows);
      gpu_check(device::launch_paged_logits(a, ws.data(), nullptr, &target), "logits");
    }
  };
  run();  // warm-up
  for (auto _ : state) {
    bench::flush_l2(/*memset=*/true);
    state.SetIterationTime(timer.time([&] { run(); }));
  }
  const double bytes = static_cast<double>(distinct_keys) * 68 + static_cast<double>(keys) * 4;
  const double flops = static_cast<double>(keys) * 2 * spec.num_heads * spec.head_dim;
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["FLOP/s"] = benchmark::Counter(flops * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["rows"] = static_cast<double>(w.num_tokens);
  state.counters["keys"] = static_cast<double>(keys);
}

void decode_args(benchmark::internal::Benchmark* b) {
  b->Args({64, 32768, 1})->Args({64, 32768, 2})->Args({16, 131072, 1})->Args({1, 32768, 1});
  b->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(20);
}
void prefill_args(benchmark::internal::Benchmark* b) {
  b->Args({1, 8192, 0})->Args({1, 32768, 0});
  b->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(5);
}

#if !MXI_PLATFORM_HIP
BENCHMARK_CAPTURE(bench_logits, decode_sm90, false, arch::target::sm90)->Apply(decode_args);
BENCHMARK_CAPTURE(bench_logits, prefill_sm90, true, arch::target::sm90)->Apply(prefill_args);
#else
BENCHMARK_CAPTURE(bench_logits, decode_gfx950, false, arch::target::gfx950)->Apply(decode_args);
BENCHMARK_CAPTURE(bench_logits, prefill_gfx950, true, arch::target::gfx950)->Apply(prefill_args);
#endif
BENCHMARK_CAPTURE(bench_logits, decode_generic, false, arch::target::generic)
    ->Args({64, 32768, 1})->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
