// The cluster select's time on short rows: the plan's cluster size (device::detail::plan_cluster)
// against forced sizes 1, 2, 4 and 8, rows of N(0, 1) scores, k 2048, the L2 evicted by reading
// 256 MiB before each call, CUDA events around launch_topk, median of 21 (us).
//
//   nvcc -O3 -DNDEBUG -arch=sm_90a -std=c++17 --expt-relaxed-constexpr -Iinclude -Ibench \
//     -Itests/common -o build/topk-cluster-sizes tools/topk-cluster-sizes.cu
//   build/topk-cluster-sizes        # on the GPU
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "l2_flush.hpp"
#include "mxi/device/topk.hpp"

using namespace mxi;

template <int C>
using config = device::topk_config_for<arch::target::sm90, device::topk_path::cluster, C>;

int main() {
  const long shapes[][2] = {{1, 5000},  {1, 8192},   {1, 16384}, {4, 16384},
                            {16, 8192}, {16, 16384}, {1, 32768}};
  for (const auto& sh : shapes) {
    const long rows = sh[0], cols = sh[1];
    const int k = 2048;
    std::vector<float> host(static_cast<size_t>(rows * cols));
    std::mt19937_64 rng(1);
    std::normal_distribution<float> normal;
    for (float& x : host) x = normal(rng);
    float* scores = nullptr;
    int32_t *lengths = nullptr, *out = nullptr;
    cudaMalloc(&scores, host.size() * 4);
    cudaMemcpy(scores, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
    const std::vector<int32_t> n(static_cast<size_t>(rows), static_cast<int32_t>(cols));
    cudaMalloc(&lengths, rows * 4);
    cudaMemcpy(lengths, n.data(), rows * 4, cudaMemcpyHostToDevice);
    cudaMalloc(&out, rows * k * 4);
    const device::topk_shape shape{rows, cols, k, output_order::position};
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::printf("%ld x %ld:", rows, cols);
    const auto time = [&](const char* name, auto cfg) {
      using Config = decltype(cfg);
      std::vector<float> t;
      for (int it = 0; it < 22; ++it) {
        bench::flush_l2(/*memset=*/false);
        cudaEventRecord(a);
        const auto e = device::launch_topk<Config>(
            shape, device::float_score_keys{scores, cols}, device::int_lengths{lengths},
            device::identity_map{}, out, int64_t{k}, nullptr, platform::stream_t{});
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        if (e != platform::success) {
          std::printf(" %s failed", name);
          return;
        }
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        if (it > 0) t.push_back(ms * 1000);
      }
      std::sort(t.begin(), t.end());
      std::printf("  %s %.2f", name, t[t.size() / 2]);
    };
    time("plan", config<0>{});
    time("c1", config<1>{});
    time("c2", config<2>{});
    time("c4", config<4>{});
    time("c8", config<8>{});
    std::printf("\n");
    cudaFree(scores);
    cudaFree(lengths);
    cudaFree(out);
  }
  return 0;
}
