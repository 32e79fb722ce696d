#!/usr/bin/env bash
# Installs, with apt, whatever the build needs and this machine lacks (a fresh Debian 12 has
# none of it). Safe to run again: it installs nothing when everything is present. Arguments name
# more packages a caller needs (tools/fuzz.sh: clang and its sanitizer runtimes).
set -euo pipefail

packages=(g++ make cmake catch2 libbenchmark-dev nlohmann-json3-dev libcli11-dev "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "mxi: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "mxi: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
