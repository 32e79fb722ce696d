#!/usr/bin/env bash
# Runs a CUDA build's GPU suite, the sanitizers, the benchmarks and the main job on a machine with
# an NVIDIA GPU, writing logs to $OUT (or ./device-check). Usage: tools/device-check.sh BUILD_DIR
# The build must come from `cmake --preset cuda` or -DMXI_BACKEND=cuda -DMXI_BUILD_BENCH=ON; it
# needs the GPU test binaries, test_mxi_run, the tools and the benches (the CPU suite runs in CI).
# MXI_BENCHES picks the benchmarks (default: bench_indexer bench_logits bench_topk).
set -uo pipefail
build=${1:?usage: tools/device-check.sh BUILD_DIR}
out=${OUT:-device-check}
mkdir -p "$out"
export LD_LIBRARY_PATH="$build/bench:${LD_LIBRARY_PATH:-}"
status=0
step() { printf '\n==== %s ====\n' "$*"; }
run() { "$@" || { echo "FAILED: $*"; status=1; }; }

step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
step "GPU tests (Catch2 summaries)"
# test_mxi_run: only its [gpu] cases; its CPU cases run in CI, and under Catch2 v2 a skipped
# case (the no-GPU one) ends a directly run binary (tests/common/skip.hpp).
for t in test_gpu_wave_ops test_gpu_logits test_gpu_topk test_gpu_indexer test_gpu_reliability "test_mxi_run [gpu]"; do
  set -- $t
  run "$build/tests/$1" ${2:+"$2"} > "$out/$1.log" 2>&1
  echo "$1: $(tail -3 "$out/$1.log" | tr '\n' ' ')"
done
step "kernel examples (examples/kernels: custom kernels over the device headers)"
for e in example_paged_key_dot example_own_scores_topk; do
  run "$build/examples/kernels/$e" > "$out/$e.log" 2>&1  # not piped: run's status must count
  cat "$out/$e.log"
done
step "benchmarks"
for b in ${MXI_BENCHES-bench_indexer bench_logits bench_topk}; do
  run "$build/bench/$b" --benchmark_out="$out/$b.json" --benchmark_out_format=json 2>&1 | tee "$out/$b.log"
done
step "PyTorch eager baseline (bench/torch_baseline.py; skipped where torch is absent)"
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  run python3 "$(dirname "$0")/../bench/torch_baseline.py" --json "$out/torch_baseline.json"
else
  echo "SKIPPED: no torch with CUDA here"
fi
step "main job on the GPU"
run "$build/tools/mxi-main-job" --size large 2>&1 | tee "$out/main-job.log" | tail -25
for tool in memcheck racecheck; do
  step "compute-sanitizer $tool (all but the [large] cases)"
  for t in test_gpu_wave_ops test_gpu_topk test_gpu_indexer test_gpu_logits test_gpu_reliability; do
    run compute-sanitizer --tool "$tool" --error-exitcode 1 "$build/tests/$t" '~[large]' \
      > "$out/$tool-$t.log" 2>&1
    tail -2 "$out/$tool-$t.log"
  done
  run compute-sanitizer --tool "$tool" --error-exitcode 1 "$build/examples/kernels/example_own_scores_topk" \
    > "$out/$tool-example_own_scores_topk.log" 2>&1
  tail -2 "$out/$tool-example_own_scores_topk.log"
done
exit $status
