#!/usr/bin/env bash
# Runs replay.py with Debian's Python and numpy (python3-numpy, installed with apt when missing:
# root or sudo needed then) against a built mxi-run. Arguments go to replay.py; without
# --mxi-run it uses build/tests/tools/mxi-run, which tools/run-tests.sh builds.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=/usr/bin/python3  # Debian's interpreter: the one python3-numpy installs into
if ! "$python" -c 'import numpy' 2>/dev/null; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null ||
      { echo "examples/python: need root (or sudo) to install python3-numpy" >&2; exit 1; }
    sudo=sudo
  fi
  echo "examples/python: installing python3-numpy"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends python3 python3-numpy
fi
exec "$python" examples/python/replay.py "$@"
