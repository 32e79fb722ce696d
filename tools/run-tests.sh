#!/usr/bin/env bash
# The test command: installs what is missing, builds the library and its Catch2 suite (CPU
# backend) and the PyTorch ops with their pytest suite (Debian's torch) in build/tests, and runs
# every test. Extra arguments go to ctest (e.g. -R layout); --build-only stops after the build
# (CI builds first and runs the suite last).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-deps.sh python3-torch libtorch-dev python3-pytest
cmake -S . -B build/tests -DCMAKE_BUILD_TYPE=Release -DMXI_BUILD_TESTS=ON -DMXI_BUILD_TOOLS=ON \
  -DMXI_BUILD_TORCH=ON
cmake --build build/tests -j "$(nproc)"
if [ "${1:-}" = --build-only ]; then exit 0; fi
ctest --test-dir build/tests --output-on-failure --no-tests=error "$@"
