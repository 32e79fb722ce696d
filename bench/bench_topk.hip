// Top-k alone on fp32 score rows, k = 2048: the decode shapes of the anchors (vLLM's top-k 33 us
// and torch.topk 137 us for 64 x 32768 on the H200). Rows up to ~55K columns take the one-block
// path, wider ones the multi-block passes (device/topk.hpp). GPU-event timing around one launch, L2
// flushed before each, random N(0,1) rows; bytes/s counts one read of the scores.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "device_buffer.hpp"
#include "gpu_timer.hpp"
#include "mxi/device/topk.hpp"

namespace {

using namespace mxi;
using mxi::testing::device_buffer;
using mxi::testing::gpu_check;

void bench_topk(benchmark::State& state, output_order order) {
  if (!mxi::testing::gpu_present()) {
    state.SkipWithError("no GPU");
    return;
  }
  const int64_t rows = state.range(0), cols = state.range(1);
  const int k = static_cast<int>(state.range(2));
  std::vector<float> host(static_cast<size_t>(rows * cols));
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal;
  for (float& x : host) x = normal(rng);
  device_buffer<float> scores(host);
  device_buffer<int32_t> lengths(std::vector<int32_t>(static_cast<size_t>(rows), static_cast<int32_t>(cols)));
  device_buffer<int32_t> out(static_cast<size_t>(rows * k));
  const device::topk_shape shape{rows, cols, k, order};
  device_buffer<char> workspace(device::topk_workspace_bytes(shape));
  device_buffer<char> flush(size_t{256} << 20);  // > the 60 MiB L2

  testing::gpu_timer timer;
  auto launch = [&] {
    gpu_check(device::launch_topk(shape, device::float_score_keys{scores.data(), cols},
                                  device::int_lengths{lengths.data()}, device::identity_map{},
                                  out.data(), k, workspace.data(), nullptr),
              "launch_topk");
  };
  for (int i = 0; i < 3; ++i) launch();
  for (auto _ : state) {
    flush.fill_bytes(static_cast<int>(state.iterations() & 0x7F));
    state.SetIterationTime(timer.time([&] { launch(); }));
  }
  state.SetBytesProcessed(state.iterations() * rows * cols * static_cast<int64_t>(sizeof(float)));
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["cols"] = static_cast<double>(cols);
}

void shapes(benchmark::internal::Benchmark* b) {
  for (auto s : {std::vector<int64_t>{64, 32768, 2048}, {16, 165440, 2048}, {4, 262144, 2048},
                 {32, 131072, 2048}, {256, 10688, 2048}, {64, 42560, 2048}, {128, 42304, 2048}})
    b->Args(s);
  b->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.2);
}

}  // namespace

BENCHMARK_CAPTURE(bench_topk, position, output_order::position)->Apply(shapes);
BENCHMARK_CAPTURE(bench_topk, score, output_order::score)->Apply(shapes);
BENCHMARK_MAIN();
