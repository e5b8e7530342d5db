#!/bin/sh
# Install what building and testing txexec needs, when it is missing:
# libseccomp headers (cgo), a C compiler, the tools the tests use (mkfs.xfs
# makes the reflink-capable file system of the copy-up test), and the Go
# modules.
set -eu
need=""
[ -f /usr/include/seccomp.h ] || need="$need libseccomp-dev"
command -v gcc >/dev/null 2>&1 || need="$need gcc"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
command -v setpriv >/dev/null 2>&1 || need="$need util-linux"
command -v dpkg-deb >/dev/null 2>&1 || need="$need dpkg"
command -v strace >/dev/null 2>&1 || need="$need strace"
PATH="$PATH:/usr/sbin:/sbin" command -v mkfs.xfs >/dev/null 2>&1 || need="$need xfsprogs"
if [ -n "$need" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "txexec: missing packages:$need (run as root or install them)" >&2
    exit 1
  fi
  echo "installing:$need" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  # shellcheck disable=SC2086
  apt-get install -y -qq -o DPkg::Lock::Timeout=300 $need >/dev/null
fi
go mod download
