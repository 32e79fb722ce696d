#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan + coverage, build/fuzz) and
# runs each for SECONDS (default 20) on a copy of its seed corpus. Fails on any crash, hang
# (an input running past 10 s), leak, sanitizer report or failed property; the input that caused
# it is left in build/fuzz/artifacts/. Prints executions and coverage per target.
#   tools/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_npy fuzz_problem fuzz_mxi_run_args fuzz_mxfp4 fuzz_host_api)

# clang-14 with libFuzzer and the sanitizer runtimes, and LLVM's OpenMP for clang.
tools/setup-deps.sh clang-14 libclang-rt-14-dev libomp-14-dev
build=$PWD/build/fuzz  # absolute: fuzz_mxi_run_args changes directory
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
  -DMXI_BUILD_FUZZERS=ON -DMXI_BUILD_TESTS=OFF -DMXI_BUILD_TOOLS=ON -DMXI_INSTALL=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
mkdir -p "$build/artifacts" "$build/logs"
summary=()
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  log="$build/logs/$t.log"
  echo "---- $t: ${seconds} s"
  if ! "$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/artifacts/$t-" "$corpus" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "FAILED: $t (log $log, input in $build/artifacts/)" >&2
    exit 1
  fi
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  summary+=("$(printf '%-20s %6s s %10s execs  cov %6s  ft %6s  corpus %5s' "$t" "$seconds" \
    "$execs" "$cov" "$ft" "$(ls "$corpus" | wc -l)")")
done
printf '%s\n' "---- fuzzing clean:" "${summary[@]}"
