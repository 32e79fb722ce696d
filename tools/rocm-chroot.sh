#!/usr/bin/env bash
# Runs a command inside the ROCm chroot made by tools/setup-rocm.sh, with the repository
# bind-mounted at its own absolute path (so build folders and compile_commands.json stay valid
# outside) and the current directory kept when it lies inside the repository.
#
#   tools/rocm-chroot.sh hipcc --version
#   tools/rocm-chroot.sh cmake -S . -B build/hip -G Ninja -DMXI_BACKEND=hip
#
# MXI_ROCM_ROOT picks the chroot (default /var/cache/mxi-rocm). Mounts live in a private mount
# namespace (unshare), so nothing is left mounted when the command ends, whatever way it ends.
set -euo pipefail

root=${MXI_ROCM_ROOT:-/var/cache/mxi-rocm}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)

die() { echo "rocm-chroot: $*" >&2; exit 1; }
[[ $# -gt 0 ]] || die "usage: $0 COMMAND [ARGS...]"
if [[ $EUID -ne 0 ]]; then  # chroot, mount and debootstrap need root
  command -v sudo >/dev/null || die "needs root (or sudo)"
  exec sudo --preserve-env=MXI_ROCM_ROOT -- "$0" "$@"
fi
[[ -x $root/bin/sh ]] || die "no chroot at $root; run tools/setup-rocm.sh first"

workdir=$PWD
case "$workdir/" in "$repo"/*) ;; *) workdir=$repo ;; esac

# Inside the new namespace: proc, dev and the repository, then a clean environment in the chroot.
# shellcheck disable=SC2016  # expanded by the inner shell
exec unshare --mount --propagation private -- /bin/bash -euc '
  root=$1 repo=$2 workdir=$3; shift 3
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mkdir -p "$root$repo"
  mount --bind "$repo" "$root$repo"
  exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive \
    /bin/sh -c "cd \"\$0\" && exec \"\$@\"" "$workdir" "$@"
' rocm-chroot "$root" "$repo" "$workdir" "$@"
