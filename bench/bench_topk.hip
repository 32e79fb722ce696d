// Top-k alone on fp32 score rows, k = 2048: the decode shapes of the anchors (vLLM's top-k 33 us
// and torch.topk 137 us for 64 x 32768 on the H200). Arguments: rows, columns (every row's
// length and the rows' stride), k, and the width the call declares (the engine passes its
// max_model_len; 1M in the decode shapes below, which launches the multi-block passes beside the
// one-block kernel where there are no clusters). GPU-event timing around one launch, L2 flushed
// before each by reading 256 MiB (bench/l2_flush.hpp; position_memset flushes with a memset, as
// the peers' figures do), random N(0,1) rows; bytes/s counts one read of the scores.
//
// Variants: position / score take the device's tuned path (on sm90 position order: the cluster
// select, device/detail/topk_cluster_kernel.hpp); position_equal_rows the same on rows whose
// scores are all 0 (every key one bin: the ties' worst case); position_one_block forces the
// one-block kernel with the passes (the path before clusters); position_cluster_cN forces N blocks
// a row and position_cluster_t512 512-thread cluster blocks on every shape (the tuned blocks have
// 1024, or 512 where the rows need a second wave and fit them; sm90 only; they tune topk_tuned's
// numbers).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "device_buffer.hpp"
#include "gpu_timer.hpp"
#include "l2_flush.hpp"
#include "mxi/device/topk.hpp"

namespace {

using namespace mxi;
using mxi::testing::device_buffer;
using mxi::testing::gpu_check;

/// launch_topk with the device's tuned numbers.
struct tuned {
  template <class... Args>
  platform::error_t operator()(Args&&... args) const {
    return device::launch_topk(std::forward<Args>(args)...);
  }
};
/// launch_topk with Config's numbers.
template <class Config>
struct forced {
  template <class... Args>
  platform::error_t operator()(Args&&... args) const {
    return device::launch_topk<Config>(std::forward<Args>(args)...);
  }
};
template <device::topk_path Path, int ClusterBlocks = 0>
using sm90_config = device::topk_config_for<arch::target::sm90, Path, ClusterBlocks>;
constexpr auto sm90_tuned = device::topk_tuned(arch::target::sm90);
using cluster_512_threads =
    device::topk_config<sm90_tuned.pass_threads, sm90_tuned.pass_items, sm90_tuned.max_blocks,
                        sm90_tuned.one_block_min_rows, sm90_tuned.cluster_blocks_max, 512,
                        device::topk_path::cluster>;

template <class Launch>
void bench_topk(benchmark::State& state, output_order order, Launch launch_topk,
                bool memset_flush = false, bool equal_rows = false) {
  if (!mxi::testing::gpu_present()) {
    state.SkipWithError("no GPU");
    return;
  }
  const int64_t rows = state.range(0), cols = state.range(1);
  const int k = static_cast<int>(state.range(2));
  const int64_t width = state.range(3);
  std::vector<float> host(static_cast<size_t>(rows * cols));
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal;
  for (float& x : host) x = equal_rows ? 0.0f : normal(rng);
  device_buffer<float> scores(host);
  device_buffer<int32_t> lengths(std::vector<int32_t>(static_cast<size_t>(rows), static_cast<int32_t>(cols)));
  device_buffer<int32_t> out(static_cast<size_t>(rows * k));
  const device::topk_shape shape{rows, width, k, order};
  device_buffer<char> workspace(device::topk_workspace_bytes(shape));

  testing::gpu_timer timer;
  auto enqueue = [&] {
    return launch_topk(shape, device::float_score_keys{scores.data(), cols},
                       device::int_lengths{lengths.data()}, device::identity_map{}, out.data(),
                       int64_t{k}, workspace.data(), platform::stream_t{});
  };
  // A forced variant the device cannot run (a cluster size it does not place) skips.
  if (const platform::error_t e = enqueue(); e != platform::success) {
    state.SkipWithError(platform::error_string(e));
    return;
  }
  auto launch = [&] { gpu_check(enqueue(), "launch_topk"); };
  for (int i = 0; i < 3; ++i) launch();
  for (auto _ : state) {
    bench::flush_l2(memset_flush);
    state.SetIterationTime(timer.time([&] { launch(); }));
  }
  state.SetBytesProcessed(state.iterations() * rows * cols * static_cast<int64_t>(sizeof(float)));
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["cols"] = static_cast<double>(cols);
}

constexpr int64_t mml = int64_t{1} << 20;  // the engine's max_model_len

void shapes(benchmark::internal::Benchmark* b) {
  for (auto s : {std::vector<int64_t>{64, 32768, 2048, 32768},
                 {16, 165440, 2048, 165440},
                 {4, 262144, 2048, 262144},
                 {32, 131072, 2048, 131072},
                 {256, 10688, 2048, 10688},
                 {64, 42560, 2048, 42560},
                 {128, 42304, 2048, 42304},
                 // decode at max_model_len 1M
                 {64, 32768, 2048, mml},
                 {1, 32768, 2048, mml},
                 {4, 262144, 2048, mml},
                 {32, 131072, 2048, mml},
                 // 40 rows (4 blocks a row would need a second wave), decode 16 x 128K (clusters
                 // of 8 would: an H200 holds 15)
                 {40, 32768, 2048, mml},
                 {16, 131072, 2048, mml},
                 // the candidate call's select (16 x 128K, pool 2048 x 8), one row at its length
                 {16, 16384, 2048, 16384},
                 {1, 32768, 2048, 32768},
                 // short rows at their own width, where the plan's smallest slice
                 // (detail::min_cluster_slice) decides the cluster size
                 {1, 5000, 2048, 5000},
                 {1, 8192, 2048, 8192},
                 {1, 16384, 2048, 16384},
                 {4, 16384, 2048, 16384},
                 {16, 8192, 2048, 8192}})
    b->Args(s);
  b->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.2);
}

/// The decode shapes at 1M (the forced variants), a few rows short and long (which cluster size
/// few rows want), the candidate call's select, and short rows at their own width (the smallest
/// slice the plan takes: forced sizes 1-8 against the plan's `position`).
void decode_shapes(benchmark::internal::Benchmark* b) {
  for (auto s : {std::vector<int64_t>{64, 32768, 2048, mml},
                 {1, 32768, 2048, mml},
                 {4, 262144, 2048, mml},
                 {32, 131072, 2048, mml},
                 {2, 262144, 2048, mml},
                 {4, 32768, 2048, mml},
                 {8, 32768, 2048, mml},
                 {16, 16384, 2048, 16384},
                 {1, 32768, 2048, 32768},
                 {1, 5000, 2048, 5000},
                 {1, 8192, 2048, 8192},
                 {1, 16384, 2048, 16384},
                 {4, 16384, 2048, 16384},
                 {16, 8192, 2048, 8192}})
    b->Args(s);
  b->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.2);
}

}  // namespace

BENCHMARK_CAPTURE(bench_topk, position, output_order::position, tuned{})->Apply(shapes);
BENCHMARK_CAPTURE(bench_topk, position_equal_rows, output_order::position, tuned{}, false, true)
    ->Apply(decode_shapes);
BENCHMARK_CAPTURE(bench_topk, position_memset, output_order::position, tuned{}, true)
    ->Apply(shapes);
BENCHMARK_CAPTURE(bench_topk, score, output_order::score, tuned{})->Apply(shapes);
BENCHMARK_CAPTURE(bench_topk, position_one_block, output_order::position,
                  forced<sm90_config<device::topk_path::one_block>>{})->Apply(shapes);
BENCHMARK_CAPTURE(bench_topk, position_cluster_c1, output_order::position,
                  forced<sm90_config<device::topk_path::cluster, 1>>{})->Apply(decode_shapes);
BENCHMARK_CAPTURE(bench_topk, position_cluster_c2, output_order::position,
                  forced<sm90_config<device::topk_path::cluster, 2>>{})->Apply(decode_shapes);
BENCHMARK_CAPTURE(bench_topk, position_cluster_c4, output_order::position,
                  forced<sm90_config<device::topk_path::cluster, 4>>{})->Apply(decode_shapes);
BENCHMARK_CAPTURE(bench_topk, position_cluster_c8, output_order::position,
                  forced<sm90_config<device::topk_path::cluster, 8>>{})->Apply(decode_shapes);
BENCHMARK_CAPTURE(bench_topk, position_cluster_c16, output_order::position,
                  forced<sm90_config<device::topk_path::cluster, 16>>{})->Apply(decode_shapes);
BENCHMARK_CAPTURE(bench_topk, position_cluster_t512, output_order::position,
                  forced<cluster_512_threads>{})->Apply(shapes);
/// The benchmark's context names how many clusters of each size the tuned cluster select keeps
/// resident at once on this GPU (which sizes plan_cluster may take for a row count).
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  int device = 0;
  device::detail::cluster_device d;
  if (mxi::testing::gpu_present() && platform::get_device(&device) == platform::success &&
      device::detail::cluster_device_for<device::topk_tuned(arch::target::sm90).cluster_threads,
                                         device::float_score_keys, device::int_lengths,
                                         device::identity_map>(device, &d) == platform::success) {
    std::string held;
    for (int c = 2; c <= d.max_blocks; ++c)
      held += std::to_string(c) + ":" + std::to_string(d.clusters[c]) + " ";
    benchmark::AddCustomContext("clusters_resident", held);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
