#!/usr/bin/env bash
# The device check: every GPU suite (the wave64 ones too), the kernel examples, the main job, the
# GPU soak, the benchmarks and compute-sanitizer (memcheck, racecheck; synccheck over the wave64
# exchange), in parts that each end well inside a 10-minute command.
#
#   tools/device-check.sh --list                          the parts and their steps
#   tools/device-check.sh --build BUILD [W64] --part P... here: configure where needed, build only
#                                                         the targets the parts run
#   tools/device-check.sh --stage DIR BUILD [W64] --part P...
#                                                         also copy what the parts run into DIR
#                                                         (DIR/<name of BUILD>, DIR/<name of W64>):
#                                                         one folder to take to the GPU machine
#   tools/device-check.sh BUILD [W64] --part P...         on the GPU machine: run the parts
#   tools/device-check.sh BUILD [W64] --jobs N --part P...
#                                                         the same, up to N parts side by side
#   tools/device-check.sh --targets --part P...           the CMake targets the parts need, a
#                                                         line a build ("BUILD: ...", "W64: ...")
#
# BUILD is the CUDA build (configured by --build as
#   cmake -S . -B BUILD -DMXI_BACKEND=cuda -DCMAKE_BUILD_TYPE=Release -DMXI_BUILD_BENCH=ON \
#     -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_COMPILER=$CUDACXX (default /usr/local/cuda/bin/nvcc)
# ); W64 the wave64 build the *-wave64 parts need (two warps act as one 64-lane wave,
# docs/portability.md), configured as
#   cmake -S . -B W64 -DMXI_BACKEND=cuda -DMXI_EMULATE_WAVE64=ON -DMXI_BUILD_TOOLS=OFF \
#     -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_COMPILER=...
# --part takes a part or a group (tests, all, sanitize, ...; --list names them), repeated or
# comma-separated; --build and --stage default to every part.
#
# Parts (normal build unless named *-wave64; the sanitizers skip the [large] cases):
#   tests             the GPU suites: wave ops, logits, top-k, indexer, reliability
#   examples          the kernel examples, test_mxi_run [gpu], mxi-main-job --size large
#   soak              mxi-soak --backend gpu for MXI_SOAK_SECONDS (default 500) from seed
#                     MXI_SOAK_SEED (default 1)
#   bench-indexer     bench_indexer (its JSON beside the logs)
#   bench-kernels     bench_logits, bench_topk, and the PyTorch eager baseline where torch with
#                     CUDA is present
#   memcheck-1, -2    memcheck over the suites and the top-k example
#   racecheck-1 .. -5 racecheck over wave ops, reliability and the example; logits; the reliability
#                     suite's concurrency cases (its two-GPU case skips with one GPU); the indexer
#                     suite's random problems; its other cases
#   racecheck-topk-1 .. -13
#                     racecheck over the top-k suite, split by test name: a cluster case (one
#                     k) a part
#   wave64, memcheck-wave64-1, -2, racecheck-wave64-1 .. -5, racecheck-wave64-topk-1 .. -13,
#   synccheck-wave64  the same over the wave64 binaries; synccheck over wave ops and logits
#
# Each step prints one line as it ends (PASS, FAIL, SKIP or TIMEOUT, seconds, the Catch2 and
# sanitizer summaries); the output ends with one line a part: PASS or FAIL, steps passed of
# steps, seconds. A step that does not finish within the command's budget (--budget SECONDS,
# default 570; 0: none) is stopped and counted as failed, so the summary is always printed. Logs
# go to ${OUT:-.}/device-check/<part>/; where OUT is set (the GPU machine's output folder) they are
# packed into $OUT/device-check.tar.gz at the end. --jobs N runs up to N parts side by side (each
# a run of this script with the budget left when it starts, its console in <part>.console.txt;
# the sanitizers' parts can share the GPU, the benches must not). Exit status: 0 when
# every step passed, 1 otherwise, 2 on a bad command line.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)  # the source tree; BUILD, W64 and DIR are as given

usage() {
  sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
}
die() { echo "device-check: $*" >&2; exit 2; }

# ---- the parts --------------------------------------------------------------------------------
# A step is "BUILD|TOOL|BINARY|ARGUMENT|FLAG": BUILD n (normal) or w (wave64); TOOL run,
# memcheck, racecheck, synccheck, bench, torch or soak; BINARY relative to the build; ARGUMENT
# one argument (a Catch2 test spec, or the binary's option); FLAG skip-ok where a skip (exit 4)
# is a pass.

large='~[large]'
# The top-k suite's racecheck parts: Catch2 test specs (names with wildcards, comma for "or").
# The cluster cases are one test case a k, named so a part can take exactly its own.
topk_specs=(
  "\"gpu top-k: *\"~[large]"
  "\"gpu score_key: *\",\"gpu candidates: *\""
  "\"gpu top-k clusters k 1: *\""
  "\"gpu top-k clusters k 2: *\""
  "\"gpu top-k clusters k 37: *\""
  "\"gpu top-k clusters k 512: *\""
  "\"gpu top-k cluster ties k 1: *\""
  "\"gpu top-k cluster ties k 100: *\""
  "\"gpu top-k clusters k 2048: *\""
  "\"gpu top-k clusters k 4095: *\""
  "\"gpu top-k clusters k 4096: *\""
  "\"gpu top-k cluster ties k 2048: *\""
  "\"gpu top-k cluster ties k 4096: *\""
)
normal_parts=(tests examples soak bench-indexer bench-kernels memcheck-1 memcheck-2)
wave64_parts=(wave64 memcheck-wave64-1 memcheck-wave64-2)
for i in 1 2 3 4 5; do
  normal_parts+=("racecheck-$i")
  wave64_parts+=("racecheck-wave64-$i")
done
for i in "${!topk_specs[@]}"; do
  normal_parts+=("racecheck-topk-$((i + 1))")
  wave64_parts+=("racecheck-wave64-topk-$((i + 1))")
done
wave64_parts+=(synccheck-wave64)

# Steps of a part, one a line.
steps_of() {
  local part=$1 b=n s=gpu
  case $part in
    *wave64*) b=w s=gpu_wave64 ;;
  esac
  local rel="tests/test_${s}_reliability"
  case $part in
    tests | wave64)
      for t in wave_ops logits topk indexer; do echo "$b|run|tests/test_${s}_$t||"; done
      echo "$b|run|$rel|~[multi-gpu]|"
      echo "$b|run|$rel|[multi-gpu]|skip-ok"  # skips (exit 4) with one GPU
      ;;
    examples)
      echo "n|run|examples/kernels/example_paged_key_dot||"
      echo "n|run|examples/kernels/example_own_scores_topk||"
      echo "n|run|tests/test_mxi_run|[gpu]|"
      echo "n|run|tools/mxi-main-job|--size=large|"
      ;;
    soak) echo "n|soak|tools/mxi-soak|--seconds=${MXI_SOAK_SECONDS:-500}|" ;;
    bench-indexer) echo "n|bench|bench/bench_indexer||" ;;
    bench-kernels)
      echo "n|bench|bench/bench_logits||"
      echo "n|bench|bench/bench_topk||"
      echo "n|torch|bench/torch_baseline.py||skip-ok"
      ;;
    memcheck-1 | memcheck-wave64-1)
      echo "$b|memcheck|tests/test_${s}_wave_ops|$large|"
      echo "$b|memcheck|tests/test_${s}_topk|$large|"
      [ $b = n ] && echo "n|memcheck|examples/kernels/example_own_scores_topk||"
      ;;
    memcheck-2 | memcheck-wave64-2)
      echo "$b|memcheck|tests/test_${s}_logits|$large|"
      echo "$b|memcheck|tests/test_${s}_indexer|$large|"
      echo "$b|memcheck|$rel|$large~[multi-gpu]|"
      ;;
    # Racecheck slows the reliability and indexer suites about a hundredfold: each is split so
    # that a part ends within a command beside other jobs.
    racecheck-1 | racecheck-wave64-1)
      echo "$b|racecheck|tests/test_${s}_wave_ops|$large|"
      echo "$b|racecheck|$rel|$large~[multi-gpu]~[concurrency]|"
      [ $b = n ] && echo "n|racecheck|examples/kernels/example_own_scores_topk||"
      ;;
    racecheck-2 | racecheck-wave64-2) echo "$b|racecheck|tests/test_${s}_logits|$large|" ;;
    racecheck-3 | racecheck-wave64-3)
      echo "$b|racecheck|$rel|[concurrency]$large~[multi-gpu]|"
      echo "$b|racecheck|$rel|[multi-gpu]|skip-ok"  # skips (exit 4) with one GPU
      ;;
    racecheck-4 | racecheck-wave64-4) echo "$b|racecheck|tests/test_${s}_indexer|\"gpu entry *\"|" ;;
    racecheck-5 | racecheck-wave64-5)
      echo "$b|racecheck|tests/test_${s}_indexer|$large~\"gpu entry *\"|"
      ;;
    racecheck-topk-* | racecheck-wave64-topk-*)
      local i=${part##*-}
      [[ $i =~ ^[0-9]+$ ]] && [ "$i" -ge 1 ] && [ "$i" -le ${#topk_specs[@]} ] || return 1
      echo "$b|racecheck|tests/test_${s}_topk|${topk_specs[$((i - 1))]}|"
      ;;
    synccheck-wave64)  # the binaries whose kernels use the emulated exchange
      echo "w|synccheck|tests/test_gpu_wave64_wave_ops|$large|"
      echo "w|synccheck|tests/test_gpu_wave64_logits|$large|"
      ;;
    *) return 1 ;;
  esac
  return 0
}

# Parts of a name: a part, or a group.
expand() {
  case $1 in
    all) printf '%s\n' "${normal_parts[@]}" "${wave64_parts[@]}" ;;
    normal) printf '%s\n' "${normal_parts[@]}" ;;
    wave64-all) printf '%s\n' "${wave64_parts[@]}" ;;
    bench) printf '%s\n' bench-indexer bench-kernels ;;
    sanitize) printf '%s\n' "${normal_parts[@]}" | grep -E '^(memcheck|racecheck)' ;;
    sanitize-wave64) printf '%s\n' "${wave64_parts[@]}" | grep -E 'check' ;;
    racecheck-topk) printf '%s\n' "${normal_parts[@]}" | grep '^racecheck-topk' ;;
    racecheck-wave64-topk) printf '%s\n' "${wave64_parts[@]}" | grep '^racecheck-wave64-topk' ;;
    *) steps_of "$1" > /dev/null && echo "$1" || die "unknown part '$1' (tools/device-check.sh --list)" ;;
  esac
}

# CMake target of a step's binary (test_mxi_run builds mxi-run and mxi-main-job with it).
target_of() {
  case $1 in
    bench/torch_baseline.py) ;;
    *) basename "$1" ;;
  esac
}

list_parts() {
  echo "parts and their steps (BUILD or W64, tool, binary, Catch2 test spec or option):"
  for p in "${normal_parts[@]}" "${wave64_parts[@]}"; do
    echo "$p"
    steps_of "$p" | while IFS='|' read -r b tool bin arg flag; do
      [ "$b" = n ] && b=BUILD || b=W64
      echo "    $b $tool $bin${arg:+ '$arg'}${flag:+ ($flag)}"
    done
  done
  echo "groups: all normal wave64-all bench sanitize sanitize-wave64 racecheck-topk" \
    "racecheck-wave64-topk"
}

# ---- the command line -------------------------------------------------------------------------
mode=run stage='' budget=570 jobs=1 parts=() builds=()
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage ;;
    --list) list_parts; exit 0 ;;
    --build) mode=build ;;
    --stage) mode=build; stage=${2:?--stage needs a folder}; shift ;;
    --budget) budget=${2:?--budget needs seconds}; shift
      [[ $budget =~ ^[0-9]+$ ]] || die "--budget must be whole seconds, got '$budget'" ;;
    --jobs) jobs=${2:?--jobs needs a count}; shift
      [[ $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a count >= 1, got '$jobs'" ;;
    --part) [ $# -ge 2 ] || die "--part needs a name"
      for name in ${2//,/ }; do
        expanded=$(expand "$name") || exit 2
        mapfile -t -O ${#parts[@]} parts <<< "$expanded"
      done
      shift ;;
    --targets) mode=targets ;;
    -*) die "unknown option '$1'" ;;
    *) builds+=("$1") ;;
  esac
  shift
done
[ ${#parts[@]} -eq 0 ] && [ $mode = run ] && die "name the parts to run: --part PART (--list shows them)"
[ ${#parts[@]} -eq 0 ] && parts=("${normal_parts[@]}" "${wave64_parts[@]}")
mapfile -t parts < <(printf '%s\n' "${parts[@]}" | awk '!seen[$0]++')  # each part once, in order
[ ${#builds[@]} -le 2 ] || die "at most two builds: BUILD [W64]"

# Steps of the chosen parts, each prefixed with its part.
all_steps=()
for p in "${parts[@]}"; do
  while IFS= read -r s; do all_steps+=("$p|$s"); done < <(steps_of "$p")
done
needs_w=0
for s in "${all_steps[@]}"; do [[ $s == *"|w|"* ]] && needs_w=1; done
normal_dir=${builds[0]:-}
w64_dir=${builds[1]:-}

targets_for() {  # targets of build $1 (n or w)
  local seen=" "
  for s in "${all_steps[@]}"; do
    IFS='|' read -r _ b _ bin _ _ <<< "$s"
    [ "$b" = "$1" ] || continue
    local t
    t=$(target_of "$bin")
    [ -n "$t" ] && [[ $seen != *" $t "* ]] && seen+="$t "
  done
  echo $seen
}

if [ $mode = targets ]; then
  [ -n "$(targets_for n)" ] && echo "BUILD: $(targets_for n)"
  [ -n "$(targets_for w)" ] && echo "W64: $(targets_for w)"
  exit 0
fi

# ---- building (here) --------------------------------------------------------------------------
if [ $mode = build ]; then
  [ -n "$normal_dir" ] || die "--build needs BUILD (and W64 for the wave64 parts)"
  [ $needs_w = 0 ] || [ -n "$w64_dir" ] || die "the wave64 parts need W64: --build BUILD W64"
  nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
  # configure DIR WAVE64 [extra cmake arguments]: a new build, or a check of an existing one.
  configure() {
    local dir=$1 w64=$2
    shift 2
    if [ ! -f "$dir/CMakeCache.txt" ]; then
      cmake -S "$root" -B "$dir" -DMXI_BACKEND=cuda -DMXI_EMULATE_WAVE64="$w64" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_COMPILER="$nvcc" "$@" || exit 1
    fi
    grep -q '^MXI_BACKEND:STRING=cuda$' "$dir/CMakeCache.txt" ||
      die "$dir is not a CUDA build (MXI_BACKEND=cuda)"
    local is_w64=OFF
    grep -Eq '^MXI_EMULATE_WAVE64:BOOL=(ON|1|TRUE)$' "$dir/CMakeCache.txt" && is_w64=ON
    [ "$is_w64" = "$w64" ] || die "$dir has MXI_EMULATE_WAVE64=$is_w64, this build needs $w64"
  }
  build_targets() {
    local dir=$1
    shift
    [ $# -gt 0 ] || return 0
    echo "device-check: building $* in $dir"
    cmake --build "$dir" -j "$(nproc)" --target "$@" || exit 1
  }
  n_targets=$(targets_for n)
  w_targets=$(targets_for w)
  if [ -n "$n_targets" ]; then
    configure "$normal_dir" OFF -DMXI_BUILD_BENCH=ON
    if [[ " $n_targets " == *" bench_"* ]] && ! grep -Eq '^MXI_BUILD_BENCH:BOOL=(ON|1|TRUE)$' "$normal_dir/CMakeCache.txt"; then
      die "$normal_dir builds no benchmarks: reconfigure it with -DMXI_BUILD_BENCH=ON"
    fi
    build_targets "$normal_dir" $n_targets
  fi
  if [ -n "$w_targets" ]; then
    configure "$w64_dir" ON -DMXI_BUILD_TOOLS=OFF
    build_targets "$w64_dir" $w_targets
  fi
  [ -n "$stage" ] || exit 0
  # Staging: the files the steps run, under DIR/<name of the build>/, the same paths inside; an
  # earlier staging of a build staged again is replaced.
  [ -z "$w64_dir" ] || [ "$(basename "$normal_dir")" != "$(basename "$w64_dir")" ] ||
    die "--stage needs BUILD and W64 of different names"
  [ -n "$n_targets" ] && rm -rf "${stage:?}/$(basename "$normal_dir")"
  [ -n "$w_targets" ] && rm -rf "${stage:?}/$(basename "$w64_dir")"
  mkdir -p "$stage" || exit 1
  copy() {  # build dir, relative path
    local to
    to="$stage/$(basename "$1")/$2"
    mkdir -p "$(dirname "$to")" && cp -p "$1/$2" "$to" || exit 1
  }
  for s in "${all_steps[@]}"; do
    IFS='|' read -r _ b tool bin _ _ <<< "$s"
    dir=$normal_dir
    [ "$b" = w ] && dir=$w64_dir
    case $tool in
      torch) continue ;;
      bench)  # the shared libraries the build copied beside the benchmarks
        for lib in "$dir"/bench/*.so*; do
          [ -e "$lib" ] && copy "$dir" "bench/$(basename "$lib")"
        done ;;
    esac
    copy "$dir" "$bin"
    [ "$bin" = tests/test_mxi_run ] && copy "$dir" tools/mxi-run && copy "$dir" tools/mxi-main-job
  done
  # The source the binaries were built from, for the summary line on the GPU machine (whose tree
  # may be another commit).
  for dir in "$normal_dir" "$w64_dir"; do
    [ -n "$dir" ] && [ -d "$stage/$(basename "$dir")" ] &&
      git -C "$root" describe --always --dirty > "$stage/$(basename "$dir")/built-from" 2> /dev/null
  done
  w_arg=
  [ $needs_w = 1 ] && w_arg=" $stage/$(basename "$w64_dir")"
  mib=$(du -sm "$stage" | cut -f1)
  echo "device-check: staged $mib MiB in $stage; on the GPU machine:"
  echo "  tools/device-check.sh $stage/$(basename "$normal_dir")$w_arg --part PART"
  [ "$mib" -le 60 ] || echo "device-check: $mib MiB: where what can be taken to the GPU machine" \
    "is limited, stage fewer parts at a time"
  exit 0
fi

# ---- running (on the GPU machine) -------------------------------------------------------------
[ -n "$normal_dir" ] || die "name the build: tools/device-check.sh BUILD [W64] --part PART"
[ $needs_w = 0 ] || [ -n "$w64_dir" ] ||
  die "the wave64 parts need the wave64 build: tools/device-check.sh BUILD W64 --part ..."
# A side-by-side run's parts (DEVICE_CHECK_LOGS set) write into its folder and leave the summary
# file and the packing to it.
out=${DEVICE_CHECK_LOGS:-${OUT:-.}/device-check}
mkdir -p "$out" || exit 1
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem \
  --format=csv,noheader
if ! nvidia-smi -L > /dev/null 2>&1; then
  echo "device-check: no NVIDIA GPU here (nvidia-smi -L failed)"
  exit 1
fi
gpus=$(nvidia-smi -L | grep -c '^GPU')
export LD_LIBRARY_PATH="$normal_dir/bench:${LD_LIBRARY_PATH:-}"
start_all=$SECONDS

# What the binaries were built from, for the summary's heading.
source_label() {
  if [ -f "$normal_dir/built-from" ]; then
    echo "binaries built from $(cat "$normal_dir/built-from")"
  else
    git -C "$root" describe --always --dirty 2> /dev/null || echo 'no git'
  fi
}

# Packs the logs into $OUT where it is set; a side-by-side run's parts leave it to that run.
pack_logs() {
  if [ -n "${DEVICE_CHECK_LOGS:-}" ]; then
    return
  elif [ -n "${OUT:-}" ]; then
    tar -czf "$OUT/device-check.tar.gz" -C "$OUT" device-check && rm -rf "$out"
    echo "logs: \$OUT/device-check.tar.gz"
  else
    echo "logs: $out/"
  fi
}

# ---- side by side (--jobs N): each part a run of this script, N at a time ----------------------
if [ "$jobs" -gt 1 ] && [ ${#parts[@]} -gt 1 ]; then
  build_paths=()
  for b in "${builds[@]}"; do build_paths+=("$(realpath "$b")"); done
  running=0
  for p in "${parts[@]}"; do
    if [ $running -ge "$jobs" ]; then
      wait -n
      running=$((running - 1))
    fi
    left=0
    [ "$budget" -gt 0 ] && left=$((budget - (SECONDS - start_all))) && [ $left -lt 1 ] && left=1
    DEVICE_CHECK_LOGS=$out "$0" "${build_paths[@]}" --budget "$left" --part "$p" \
      > "$out/$p.console.txt" 2>&1 < /dev/null &
    running=$((running + 1))
  done
  wait
  status=0
  for p in "${parts[@]}"; do
    printf '\n==== %s ====\n' "$p"
    grep -E '^  (PASS|FAIL|SKIP|TIMEOUT|NOT RUN) ' "$out/$p.console.txt"
  done
  printf '\n==== summary, side by side (%s) ====\n' "$(source_label)"
  for p in "${parts[@]}"; do
    line=$(grep "^part $p: " "$out/$p.console.txt" || echo "part $p: FAIL, no summary (see $p.console.txt)")
    [[ $line == *": PASS,"* ]] || status=1
    echo "$line" | tee -a "$out/summary.txt"
  done
  pack_logs
  exit $status
fi

declare -A part_steps part_passed part_skipped part_failed part_seconds

# The last summary lines of a log: Catch2's and compute-sanitizer's.
summary_of() {
  local found
  found=$(grep -E '^(All tests passed|test cases:|assertions:)|SUMMARY:|^mxi-soak: (PASS|FAIL)|^mxi-main-job: (PASS|FAIL)|^SKIPPED' "$1" |
    tail -3 | tr -s ' \n' ' ' | sed 's/ $//')
  [ -n "$found" ] && echo "$found" || tail -1 "$1"
}

run_step() {  # part build tool binary argument flag
  local part=$1 b=$2 tool=$3 bin=$4 arg=$5 flag=$6
  local dir=$normal_dir
  [ "$b" = w ] && dir=$w64_dir
  local name file
  name=$(basename "$bin")
  file=$name
  [ "$tool" = run ] || file="$tool-$name"
  local log="$out/$part/$file.log" n=2
  while [ -e "$log" ]; do log="$out/$part/$file-$((n++)).log"; done
  local cmd=()
  case $tool in
    run | bench | soak) cmd=("$dir/$bin") ;;
    torch) cmd=(python3 "$root/$bin") ;;
    memcheck | racecheck | synccheck)
      cmd=(compute-sanitizer --tool "$tool" --error-exitcode 1 "$dir/$bin") ;;
  esac
  case $tool in
    bench) cmd+=(--benchmark_out="$out/$part/$file.json" --benchmark_out_format=json) ;;
    torch) cmd+=(--json "$out/$part/torch_baseline.json") ;;
    soak) cmd+=(--backend gpu --seed "${MXI_SOAK_SEED:-1}") ;;
  esac
  [ -n "$arg" ] && cmd+=("$arg")
  local left=0 verdict rc
  if [ "$budget" -gt 0 ]; then
    left=$((budget - (SECONDS - start_all)))
    if [ $left -le 5 ]; then
      echo "  NOT RUN $tool $name${arg:+ '$arg'}: the budget of $budget s is spent"
      part_failed[$part]=$((${part_failed[$part]:-0} + 1))
      return
    fi
  fi
  local started=$SECONDS
  (
    echo "\$ ${cmd[*]}"
    if [ "$tool" = torch ] && ! python3 -c "import torch; assert torch.cuda.is_available()" 2> /dev/null; then
      echo "SKIPPED: no torch with CUDA here"
      exit 4
    fi
    if [ "$bin" = "tests/test_gpu_reliability" ] || [ "$bin" = "tests/test_gpu_wave64_reliability" ]; then
      [ "$arg" = "[multi-gpu]" ] && [ "$gpus" -lt 2 ] && { echo "SKIPPED: one GPU here"; exit 4; }
    fi
    if [ ! -x "$dir/$bin" ] && [ "$tool" != torch ]; then
      echo "missing $dir/$bin: build it with tools/device-check.sh --build (or --stage)"
      exit 127
    fi
    if [ "$budget" -gt 0 ]; then
      MXI_RUN_PATH="$(realpath "$dir")/tools/mxi-run" timeout -k 15 "$left" "${cmd[@]}"
    else
      MXI_RUN_PATH="$(realpath "$dir")/tools/mxi-run" "${cmd[@]}"
    fi
  ) > "$log" 2>&1 < /dev/null
  rc=$?
  local took=$((SECONDS - started))
  case $rc in
    0) verdict=PASS ;;
    4) verdict=SKIP ;;
    124 | 137) verdict=TIMEOUT ;;
    *) verdict=FAIL ;;
  esac
  if [ $verdict = SKIP ] && [ "$flag" != skip-ok ]; then verdict=FAIL; fi
  case $verdict in
    PASS) part_passed[$part]=$((${part_passed[$part]:-0} + 1)) ;;
    SKIP) part_skipped[$part]=$((${part_skipped[$part]:-0} + 1)) ;;
    *) part_failed[$part]=$((${part_failed[$part]:-0} + 1)) ;;
  esac
  printf '  %-7s %s %s%s (%d s, exit %d): %s\n' "$verdict" "$tool" "$name" "${arg:+ '$arg'}" \
    "$took" "$rc" "$(summary_of "$log")"
}

current=
for s in "${all_steps[@]}"; do
  IFS='|' read -r part b tool bin arg flag <<< "$s"
  if [ "$part" != "$current" ]; then
    [ -n "$current" ] && part_seconds[$current]=$((SECONDS - part_start))
    current=$part
    part_start=$SECONDS
    rm -rf "${out:?}/$part" && mkdir -p "$out/$part"
    printf '\n==== %s ====\n' "$part"
  fi
  part_steps[$part]=$((${part_steps[$part]:-0} + 1))
  run_step "$part" "$b" "$tool" "$bin" "$arg" "$flag"
done
[ -n "$current" ] && part_seconds[$current]=$((SECONDS - part_start))

status=0
printf '\n==== summary (%s) ====\n' "$(source_label)"
summary_file=$out/summary.txt
[ -n "${DEVICE_CHECK_LOGS:-}" ] && summary_file=/dev/null  # the side-by-side run writes it
: > "$summary_file"
declare -A printed
for s in "${all_steps[@]}"; do
  part=${s%%|*}
  [ -n "${printed[$part]:-}" ] && continue
  printed[$part]=1
  failed=${part_failed[$part]:-0}
  verdict=PASS
  [ "$failed" -gt 0 ] && verdict=FAIL && status=1
  line="part $part: $verdict, ${part_passed[$part]:-0} of ${part_steps[$part]} steps passed"
  [ "${part_skipped[$part]:-0}" -gt 0 ] && line+=", ${part_skipped[$part]} skipped"
  [ "$failed" -gt 0 ] && line+=", $failed failed"
  line+=", ${part_seconds[$part]:-0} s"
  echo "$line" | tee -a "$summary_file"
done
pack_logs
exit $status
