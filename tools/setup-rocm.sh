#!/usr/bin/env bash
# Builds (or reuses) a Debian sid chroot holding the ROCm 7.2 toolchain from Debian experimental:
# hipcc with clang 22 (knows gfx950 and its scaled MFMA), HIP and rocPRIM 7.2, plus the build's
# other needs from sid (cmake, ninja, g++, Catch2, Google Benchmark, CLI11, nlohmann-json). About
# 1.5 GB and 1-2 minutes on a fresh machine; on a healthy chroot it only installs packages added
# to the lists below since. Run commands in it with tools/rocm-chroot.sh.
#
#   MXI_ROCM_ROOT      where the chroot lives (default /var/cache/mxi-rocm; survives between runs)
#   MXI_DEBIAN_MIRROR  Debian mirror URI (default: read from this machine's apt configuration)
#
# Why not sid's ROCm: rocPRIM 6.4 does not know gfx950 (#error on 128-bit atomics); 7.2 does.
# Known pitfall: rocPRIM 7.2's iterator/texture_cache_iterator.hpp calls memset without including
# <cstring>: include it first (block/detail/vendor.hpp does; so does the check below).
set -euo pipefail

root=${MXI_ROCM_ROOT:-/var/cache/mxi-rocm}
stamp=$root/.mxi-rocm-stamp
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
rocm_packages=(hipcc librocprim-dev libamdhip64-dev)
sid_packages=(cmake ninja-build g++ catch2 libbenchmark-dev libcli11-dev nlohmann-json3-dev)
start=$SECONDS

say() { echo "[setup-rocm +$((SECONDS - start))s] $*"; }
die() { echo "[setup-rocm] ERROR: $*" >&2; exit 1; }
trap 'die "failed at line $LINENO: $BASH_COMMAND"' ERR

if [[ $EUID -ne 0 ]]; then  # chroot, mount and debootstrap need root
  command -v sudo >/dev/null || die "needs root (or sudo)"
  exec sudo --preserve-env=MXI_ROCM_ROOT,MXI_DEBIAN_MIRROR -- "$0" "$@"
fi

in_chroot() { MXI_ROCM_ROOT=$1 "$here/rocm-chroot.sh" "${@:2}"; }

# The stamp is written once debootstrap and the apt configuration have succeeded.
bootstrapped() { [[ -f $stamp ]] && in_chroot "$root" true >/dev/null 2>&1; }

# The first non-security URI of the machine's deb822 sources: the mirror this machine may use.
mirror() {
  if [[ -n ${MXI_DEBIAN_MIRROR:-} ]]; then echo "$MXI_DEBIAN_MIRROR"; return; fi
  local sources=/etc/apt/sources.list.d/debian.sources uri
  [[ -r $sources ]] || die "cannot read $sources; set MXI_DEBIAN_MIRROR"
  uri=$(awk '$1 == "URIs:" { for (i = 2; i <= NF; ++i) if ($i !~ /-security/) { print $i; exit } }
            ' "$sources")
  [[ -n $uri ]] || die "no Debian URI in $sources; set MXI_DEBIAN_MIRROR"
  echo "$uri"
}

# A leftover tree may still have debootstrap's mounts if it was killed: never delete through them.
remove_tree() {
  if findmnt -rn -o TARGET | grep -q "^$1\(/\|$\)"; then
    die "$1 has mounts below it; unmount them (findmnt | grep $1) and rerun"
  fi
  rm -rf --one-file-system "$1"
}

mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9  # one setup at a time per machine; a second caller waits, then finds the chroot ready

# Installs what the chroot lacks of a package list ($1: apt target release or "", then names).
install_missing() {
  local target=$1 missing=()
  shift
  for p in "$@"; do
    # shellcheck disable=SC2016  # ${Status} is dpkg-query's field, not a shell variable
    [[ $(in_chroot "$root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == *" installed" ]] ||
      missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  say "installing ${missing[*]} from ${target:-sid}"
  in_chroot "$root" apt-get update -qq
  in_chroot "$root" apt-get install -y -qq --no-install-recommends ${target:+-t "$target"} \
    "${missing[@]}" >/dev/null
}

if ! bootstrapped; then
  command -v debootstrap >/dev/null || {
    say "installing debootstrap"
    apt-get update -qq && apt-get install -y -qq debootstrap
  }
  uri=$(mirror)
  build=$root.partial
  [[ -e $root ]] && { say "removing broken chroot at $root"; remove_tree "$root"; }
  [[ -e $build ]] && { say "removing leftover $build"; remove_tree "$build"; }

  say "debootstrap sid (minbase) into $build"
  log=$(mktemp)  # kept only on failure
  debootstrap --variant=minbase --include=ca-certificates sid "$build" "$uri" > "$log" 2>&1 ||
    { tail -n 30 "$log" >&2; die "debootstrap failed (log: $log)"; }
  rm -f "$log"

  say "configuring apt: experimental, no Valid-Until check (the mirror's sid can be stale)"
  echo 'Acquire::Check-Valid-Until "false";' > "$build/etc/apt/apt.conf.d/99mxi-stale-mirror"
  echo "deb $uri experimental main" > "$build/etc/apt/sources.list.d/experimental.list"
  cp /etc/resolv.conf "$build/etc/resolv.conf" 2>/dev/null || true
  touch "$build/.mxi-rocm-stamp"
  mv "$build" "$root"
fi

install_missing experimental "${rocm_packages[@]}"
install_missing "" "${sid_packages[@]}"
in_chroot "$root" apt-get clean

say "checking: hipcc knows gfx950, rocPRIM 7.2 compiles (with <cstring> first)"
in_chroot "$root" sh -c 'printf "#include <cstring>\n#include <rocprim/rocprim.hpp>\n" \
  > /tmp/rocprim_check.hip &&
  hipcc --offload-arch=gfx950 -std=c++17 -fsyntax-only -Wno-unused-command-line-argument \
    /tmp/rocprim_check.hip'

say "ready: chroot at $root ($(du -sh --one-file-system "$root" | cut -f1)):"
in_chroot "$root" dpkg-query -W "${rocm_packages[@]}" "${sid_packages[@]}" | sed 's/^/    /'
in_chroot "$root" hipcc --version | head -n 2 | sed 's/^/    /'
