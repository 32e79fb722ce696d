#!/usr/bin/env bash
# Runs the wave64 suite (the GPU tests built with MXI_EMULATE_WAVE64: two warps act as one
# 64-lane wave) on an NVIDIA GPU, then compute-sanitizer over it, writing logs to $OUT (or
# ./wave64-check). Usage:
#   tools/wave64-check.sh BUILD_DIR [tests|memcheck|racecheck|synccheck|all [BINARY...]]
# BINARY names some of the binaries below (default: all of them), to split a run in parts.
# BUILD_DIR/tests must hold the test_gpu_wave64_* binaries, from
#   cmake -S . -B build/w64 -DMXI_BACKEND=cuda -DMXI_EMULATE_WAVE64=ON \
#     -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_BUILD_TYPE=Release
#   cmake --build build/w64 --target test_gpu_wave64_{wave_ops,logits,topk,indexer,reliability}
# (tools/wave64-check.sh --targets prints that target list). The sanitizers skip the [large]
# cases, as tools/device-check.sh does; synccheck covers the binaries whose kernels use the
# emulated exchange (wave ops and logits: the generic scorer's wave barrier).
set -uo pipefail
binaries=(test_gpu_wave64_wave_ops test_gpu_wave64_logits test_gpu_wave64_topk
          test_gpu_wave64_indexer test_gpu_wave64_reliability)
if [ "${1:-}" = "--targets" ]; then
  echo "${binaries[@]}"
  exit 0
fi
build=${1:?usage: tools/wave64-check.sh BUILD_DIR [tests|memcheck|racecheck|synccheck|all [BINARY...]]}
part=${2:-all}
shift $(($# < 2 ? $# : 2))
[ $# -gt 0 ] && binaries=("$@")
out=${OUT:-wave64-check}
mkdir -p "$out"
status=0
step() { printf '\n==== %s ====\n' "$*"; }
run() { "$@" || { echo "FAILED: $*"; status=1; }; }

for b in "${binaries[@]}"; do
  [ -x "$build/tests/$b" ] || { echo "missing $build/tests/$b (configure with -DMXI_EMULATE_WAVE64=ON)"; exit 1; }
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || { echo "no NVIDIA GPU here"; exit 1; }

if [ "$part" = tests ] || [ "$part" = all ]; then
  step "wave64 tests (Catch2 summaries)"
  for b in "${binaries[@]}"; do
    start=$SECONDS
    run "$build/tests/$b" > "$out/$b.log" 2>&1
    echo "$b ($((SECONDS - start)) s): $(tail -3 "$out/$b.log" | tr '\n' ' ')"
  done
fi
for tool in memcheck racecheck synccheck; do
  [ "$part" = "$tool" ] || [ "$part" = all ] || continue
  step "compute-sanitizer $tool (all but the [large] cases)"
  list=("${binaries[@]}")
  [ "$tool" = synccheck ] && [ $# -eq 0 ] && list=(test_gpu_wave64_wave_ops test_gpu_wave64_logits)
  for b in "${list[@]}"; do
    start=$SECONDS
    run compute-sanitizer --tool "$tool" --error-exitcode 1 "$build/tests/$b" '~[large]' \
      > "$out/$tool-$b.log" 2>&1
    echo "$b ($((SECONDS - start)) s): $(tail -2 "$out/$tool-$b.log" | tr '\n' ' ')"
  done
done
exit $status
