#!/usr/bin/env bash
# Builds the PyTorch ops (python/, the mxi_torch package) on their own in build/torch, against the
# torch that python3 imports; installs Debian's python3-torch and libtorch-dev first where no
# python3 here imports torch. Extra arguments go to CMake's configure step, e.g. for CUDA:
#   tools/torch-build.sh -DMXI_BACKEND=cuda -DCMAKE_CUDA_ARCHITECTURES=90a
# Then: PYTHONPATH=build/torch python3 examples/python/torch_decode.py
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cmake >/dev/null || ! python3 -c "import torch" 2>/dev/null; then
  tools/setup-deps.sh python3-torch libtorch-dev
fi
cmake -S python -B build/torch -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build/torch -j "$(nproc)"
echo "mxi_torch: built in build/torch (PYTHONPATH=build/torch)"
