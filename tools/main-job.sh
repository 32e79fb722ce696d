#!/usr/bin/env bash
# The main job: builds mxi (with the CUDA backend where nvcc and an NVIDIA GPU are present),
# then runs the indexer on a generated DeepSeek-shaped workload on the best backend, checks it
# against the float64 reference and prints the speed. Extra arguments go to mxi-main-job
# (--size small|default|large, --backend, --seed).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-deps.sh
backend=cpu
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
if [ -x "$nvcc" ] && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  backend=cuda
fi
cmake -S . -B "build/main-$backend" -DCMAKE_BUILD_TYPE=Release -DMXI_BACKEND=$backend \
  -DMXI_BUILD_TESTS=OFF -DMXI_BUILD_TOOLS=ON $([ $backend = cuda ] && echo "-DCMAKE_CUDA_COMPILER=$nvcc")
cmake --build "build/main-$backend" -j "$(nproc)" --target mxi-main-job
"build/main-$backend/tools/mxi-main-job" "$@"
