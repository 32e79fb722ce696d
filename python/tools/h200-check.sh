#!/usr/bin/env bash
# On a CUDA machine with torch installed (the H200: torch 2.11, CUDA 13; no network needed):
# builds mxi_torch against that torch with mxi's CUDA backend (sm_90a) and the bench's C++ side,
# then runs the op tests on the CPU and the GPU (torch.compile, opcheck, CUDA graphs included),
# the example on the GPU in every cache layout and on the CPU, and the host-overhead bench.
# Every step runs; the last lines list the ones that failed. Usage:
#   python/tools/h200-check.sh [BUILD_DIR]       (default build/torch-h200; PYTHON=... to pick)
set -uo pipefail
cd "$(dirname "$0")/../.."
py=$(command -v "${PYTHON:-python3}")
build=${1:-build/torch-h200}
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
failed=()
step() {  # step NAME COMMAND...: runs it, records a failure, goes on
  local name=$1
  shift
  printf '\n==== %s ====\n' "$name"
  "$@" || failed+=("$name")
}

"$py" -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, '|',
torch.cuda.get_device_name() if torch.cuda.is_available() else 'NO CUDA DEVICE')"
step "configure" cmake -S python -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DMXI_BACKEND=cuda -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DMXI_TORCH_BENCH=ON -DMXI_TORCH_PYTHON="$py"
step "build" cmake --build "$build" -j "$(nproc)"
export PYTHONPATH=$PWD/$build${PYTHONPATH:+:$PYTHONPATH}
step "pytest (CPU and CUDA)" "$py" -m pytest -q -rs -p no:cacheprovider python/tests
for layout in linear aiter32 aiter16 mfma16; do
  step "example on cuda, $layout pages" "$py" examples/python/torch_decode.py --device cuda --layout "$layout" --steps 2
done
step "example on cpu" "$py" examples/python/torch_decode.py --device cpu --steps 1
step "bench: op against the C++ call, cuda" "$py" python/bench/op_overhead.py --device cuda
step "bench: op against the C++ call, cpu" "$py" python/bench/op_overhead.py --device cpu

printf '\n==== summary ====\n'
if [ ${#failed[@]} -eq 0 ]; then
  echo "h200-check: every step passed"
else
  printf 'h200-check: FAILED: %s\n' "${failed[@]}"
  exit 1
fi
