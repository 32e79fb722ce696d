#!/usr/bin/env python3
"""Times the phases of the cluster top-k (device/detail/topk_cluster_kernel.hpp) block by block.

Nsight Compute says the top-k is latency-bound (few instructions, most cycles waiting), not which
of its barrier-separated phases the time goes to. This builds a copy of the kernel with a stamp
after each phase (a block barrier, then clock64() by thread 0 into a __device__ table), and a
driver that runs launch_topk on fp32 N(0, 1) rows (the bench_topk shapes, k 2048, L2 flushed by
reading 256 MiB, bench/l2_flush.hpp) and prints, per phase, the median and largest time over the
blocks. The stamps' barriers add a little to each phase; compare phases, not totals with
bench_topk.

    tools/topk-phase-probe.py build/h200/topk-probe [--split-stage]  # writes, compiles (sm_90a)
    build/h200/topk-probe/probe_topk [read|code|hot]                 # on the GPU

--split-stage: after the stage (which loads the slice, copies it into shared memory and counts
its first digit), the copy counts the slice again from shared memory ("count from smem": the
atomics without the loads) and then copies it again from global memory without counting ("copy
from L2": the loads without the atomics); compare the two with the stage. The phases after them
are unchanged but start later.

The flush: `read` (default) evicts the L2 before each call, the scores and the kernel's code
alike; `code` then runs the same select on a second copy of the rows, so that the timed call
finds its code in the L2 but its scores in memory; `hot` flushes nothing.

The copy is made by inserting stamps after markers in the kernel's source; a marker that is no
longer there stops the script (update the MARKERS below with the kernel).
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNEL = "include/mxi/device/detail/topk_cluster_kernel.hpp"

# (text in the kernel, the same text with a stamp next to it). Stamps: 0 start, 1 stage and count
# of the first digit, 2 its pick, 3 the masks, 4 the bin's keys gathered, 5 copied into the pool,
# 6 the passes over the pool, 7 refine and scan; 8 the radix passes over the slices (fallback or
# streamed); 10 tally, 11 the slices' counts, 12 place. Slot 14 keeps the first bin's keys.
MARKERS = [
    ("namespace mxi::device::detail {",
     "__device__ long long probe_stamps[8192][16];\n"
     "#define STAMP(i) do { __syncthreads(); if (threadIdx.x == 0) "
     "probe_stamps[blockIdx.x][i] = clock64(); } while (0)\n"
     "namespace mxi::device::detail {"),
    ("  platform::allow_next_grid();\n  auto& head",
     "  platform::allow_next_grid();\n  STAMP(0);\n  auto& head"),
    ("block::fine_first_digit{});\n",
     "block::fine_first_digit{});\n    STAMP(1);\n"),
    ("        push ? push_pick(head.hist[0], t.rest) : pick(head.hist[0], t.rest);\n",
     "        push ? push_pick(head.hist[0], t.rest) : pick(head.hist[0], t.rest);\n    STAMP(2);\n"
     "    if (threadIdx.x == 0) probe_stamps[blockIdx.x][14] = first.count;\n"),
    ("      t.rest = first.rest;\n",
     "      STAMP(3);\n      t.rest = first.rest;\n"),
    ("        sync();  // every slice's keys are in, and every pick has read the counts\n",
     "        sync();  // every slice's keys are in, and every pick has read the counts\n"
     "        STAMP(4);\n"),
    ("          pool = head.pool;\n        }\n",
     "          pool = head.pool;\n        }\n        STAMP(5);\n"),
    ("        steps::refine(tally, staged, t);\n",
     "        STAMP(6);\n        steps::refine(tally, staged, t);\n"),
    ("      tallied = true;\n",
     "      STAMP(7);\n      tallied = true;\n"),
    ("  // Streamed slices are compacted",
     "  STAMP(8);\n  // Streamed slices are compacted"),
    ("  if (tid == 0) {\n    head.above = above;",
     "  STAMP(10);\n  if (tid == 0) {\n    head.above = above;"),
    ("  // Lane q < rank of every warp reads block q's counts",
     "  STAMP(11);\n  // Lane q < rank of every warp reads block q's counts"),
    ("  if (!alone) platform::cluster_wait();",
     "  STAMP(12);\n  if (!alone) platform::cluster_wait();"),
]

DRIVER = r'''// Written by tools/topk-phase-probe.py: per-phase times of the cluster top-k.
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "l2_flush.hpp"
#include "mxi/device/topk.hpp"

using namespace mxi;
static long long stamps[8192][16];

int main(int argc, char** argv) {
  const std::string flush_kind = argc > 1 ? argv[1] : "read";
  if (flush_kind != "read" && flush_kind != "code" && flush_kind != "hot") {
    std::printf("probe_topk: the flush is read, code or hot, not %s\n", flush_kind.c_str());
    return 2;
  }
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  const double cycles_per_us = clock_khz / 1000.0;
  const long shapes[][3] = {{256, 10688, 10688}, {64, 32768, 1 << 20}, {1, 32768, 1 << 20},
                            {4, 262144, 1 << 20}, {32, 131072, 1 << 20}, {16, 165440, 165440},
                            {16, 16384, 16384}};
  const char* names[] = {"start",         "stage + count", "first pick", "masks",
                         "gather",        "pool copy",     "pool passes", "refine + scan",
                         "slice passes",  "",              "tally",      "slice counts",
                         "place"};
  for (const auto& s : shapes) {
    const long rows = s[0], cols = s[1], width = s[2];
    const int k = 2048;
    std::vector<float> host(static_cast<size_t>(rows * cols));
    std::mt19937_64 rng(1);
    std::normal_distribution<float> normal;
    for (float& x : host) x = normal(rng);
    float *scores = nullptr, *other = nullptr;
    int32_t *lengths = nullptr, *out = nullptr;
    cudaMalloc(&scores, host.size() * 4);
    cudaMemcpy(scores, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
    if (flush_kind == "code") {  // the rows the untimed call reads
      cudaMalloc(&other, host.size() * 4);
      cudaMemcpy(other, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
    }
    const std::vector<int32_t> n(static_cast<size_t>(rows), static_cast<int32_t>(cols));
    cudaMalloc(&lengths, rows * 4);
    cudaMemcpy(lengths, n.data(), rows * 4, cudaMemcpyHostToDevice);
    cudaMalloc(&out, rows * k * 4);
    const device::topk_shape shape{rows, width, k, output_order::position};
    void* ws = nullptr;
    cudaMalloc(&ws, device::topk_workspace_bytes(shape) + 16);
    static long long zero[8192][16] = {};
    std::vector<float> times;
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    const auto select = [&](const float* rows) {
      return device::launch_topk(shape, device::float_score_keys{rows, cols},
                                 device::int_lengths{lengths}, device::identity_map{}, out,
                                 int64_t{k}, ws, platform::stream_t{});
    };
    for (int it = 0; it < 11; ++it) {
      if (flush_kind != "hot")
        bench::flush_l2(/*memset=*/false);  // reading: a memset leaves dirty lines to write back
      if (flush_kind == "code") select(other);
      cudaMemcpyToSymbol(probe_stamps, zero, sizeof(zero));
      cudaEventRecord(a);
      const auto e = select(scores);
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      if (e != platform::success) {
        std::printf("launch_topk failed: %s\n", platform::error_string(e));
        return 1;
      }
      float ms = 0;
      cudaEventElapsedTime(&ms, a, b);
      times.push_back(ms * 1000);
    }
    cudaMemcpyFromSymbol(stamps, probe_stamps, sizeof(stamps));
    std::sort(times.begin(), times.end());
    int blocks = 0;
    for (int i = 0; i < 8192; ++i)
      if (stamps[i][0] != 0) blocks = i + 1;
    std::vector<long long> pool;
    for (int i = 0; i < blocks; ++i) pool.push_back(stamps[i][14]);
    std::sort(pool.begin(), pool.end());
    std::printf("\n%ld x %ld (width %ld, %s flush): %.1f us (events, median of 11), %d blocks,"
                " first bin median %lld keys, largest %lld\n", rows, cols, width,
                flush_kind.c_str(), times[times.size() / 2], blocks, pool[pool.size() / 2],
                pool.back());
    for (int p : {13, 15}) {  // --split-stage: each since the stamp before it (1, then 13)
      std::vector<double> d;
      for (int i = 0; i < blocks; ++i)
        if (stamps[i][p] != 0) d.push_back((stamps[i][p] - stamps[i][p == 13 ? 1 : 13]) / cycles_per_us);
      if (d.empty()) continue;
      std::sort(d.begin(), d.end());
      std::printf("  %-16s median %6.2f us  max %6.2f us\n", p == 13 ? "count from smem" : "copy from L2",
                  d[d.size() / 2], d.back());
    }
    std::vector<double> total;
    for (int p = 1; p <= 12; ++p) {
      std::vector<double> d;
      for (int i = 0; i < blocks; ++i) {
        if (stamps[i][p] == 0) continue;
        int q = p - 1;
        while (q > 0 && stamps[i][q] == 0) --q;
        d.push_back((stamps[i][p] - stamps[i][q]) / cycles_per_us);
      }
      if (d.empty()) continue;
      std::sort(d.begin(), d.end());
      std::printf("  %-16s median %6.2f us  max %6.2f us\n", names[p], d[d.size() / 2], d.back());
    }
    for (int i = 0; i < blocks; ++i)
      if (stamps[i][12] != 0) total.push_back((stamps[i][12] - stamps[i][0]) / cycles_per_us);
    std::sort(total.begin(), total.end());
    if (!total.empty())
      std::printf("  in the kernel    median %6.2f us  max %6.2f us\n", total[total.size() / 2],
                  total.back());
    cudaFree(scores);
    cudaFree(other);
    cudaFree(lengths);
    cudaFree(out);
    cudaFree(ws);
  }
  std::printf("\nSM clock %d kHz (cycles to us)\n", clock_khz);
  return 0;
}
'''


# --split-stage: after stamp 1, count the staged slice again (stamp 13), then stage it again from
# global memory without counting (stamp 15), into `own` (free until the gather: hist[1] may hold
# the first pick's zeroed sums).
SPLIT_STAGE = ("block::fine_first_digit{});\n    STAMP(1);\n",
               "block::fine_first_digit{});\n    STAMP(1);\n"
               "    steps::clear(head.own);\n"
               "    steps::sweep(staged, true, block::fine_first_digit{}, head.own,\n"
               "                 [](int, const uint4&) {});\n"
               "    STAMP(13);\n"
               "    steps::stage(slice, false, head.own, tile, block::fine_first_digit{});\n"
               "    STAMP(15);\n")


def main():
    args = [a for a in sys.argv[1:] if a != "--split-stage"]
    if len(args) != 1:
        sys.exit(__doc__)
    out = os.path.abspath(args[0])
    text = open(os.path.join(ROOT, KERNEL)).read()
    markers = MARKERS + ([SPLIT_STAGE] if "--split-stage" in sys.argv[1:] else [])
    for marker, stamped in markers:
        if text.count(marker) != 1:
            sys.exit(f"topk-phase-probe: marker not found once in {KERNEL}:\n{marker}")
        text = text.replace(marker, stamped)
    kernel = os.path.join(out, "include", KERNEL[len("include/"):])
    os.makedirs(os.path.dirname(kernel), exist_ok=True)
    open(kernel, "w").write(text)
    driver = os.path.join(out, "probe_topk.cu")
    open(driver, "w").write(DRIVER)
    # The instrumented copy comes first on the include path; topk.hpp's quoted include of it
    # finds no file beside itself, so the search falls through to this directory.
    nvcc = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")
    cmd = [nvcc, "-O3", "-DNDEBUG", "-arch=sm_90a", "-std=c++17", "--expt-relaxed-constexpr",
           "-I" + os.path.join(out, "include"), "-I" + os.path.join(ROOT, "include"),
           "-I" + os.path.join(ROOT, "bench"), "-I" + os.path.join(ROOT, "tests", "common"),
           driver, "-o", os.path.join(out, "probe_topk")]
    print(" ".join(cmd))
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
