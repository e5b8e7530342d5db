#!/bin/sh
# Install what building and testing txexec needs, when it is missing:
# libseccomp headers (cgo), a C compiler and a static libc (for the set-ID
# launcher), the tools the tests use (mkfs.xfs makes the reflink-capable file system of the copy-up test, losetup the
# escape suite's loop device; CPython's test suite is run under txexec),
# and the Go modules.
#
# Without root it cannot install: a missing build dependency is an error,
# missing test tools only a warning (make build and make demo need none of
# them; the tests that do skip, or fail under CI=true).
set -eu
need=""
[ -f /usr/include/seccomp.h ] || need="$need libseccomp-dev"
command -v gcc >/dev/null 2>&1 || need="$need gcc"
# The set-ID launcher (launcher/launcher.c) is linked statically: libc.a.
if ! command -v gcc >/dev/null 2>&1 || [ "$(gcc -print-file-name=libc.a)" = libc.a ]; then
  need="$need libc6-dev"
fi
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
build_need=$need
command -v setpriv >/dev/null 2>&1 || need="$need util-linux"
# setcap and getcap: the wrap tests of programs with file capabilities.
command -v setcap >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v setcap >/dev/null 2>&1 || need="$need libcap2-bin"
command -v dpkg-deb >/dev/null 2>&1 || need="$need dpkg"
command -v strace >/dev/null 2>&1 || need="$need strace"
command -v chattr >/dev/null 2>&1 || need="$need e2fsprogs"
# Python's own file-system tests, which the e2e suite runs under txexec.
if pyver=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) &&
   ! /usr/bin/python3 -c 'import test.test_os' >/dev/null 2>&1; then
  need="$need libpython$pyver-testsuite"
fi
# Programs the conformance corpus (e2e/conformance/cases) runs: a missing
# one fails natively and under txexec alike, so the case would pass
# without testing anything.
for tool in git:git cmake:cmake make:make patch:patch zip:zip unzip:unzip zstd:zstd \
  xz:xz-utils bzip2:bzip2 sqlite3:sqlite3 file:file python3:python3 perl:perl; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need="$need ${tool#*:}"
done
# The power-loss tests mount a FUSE file system (internal/crashfs); root
# mounts it itself, without fusermount, but the kernel needs its module.
if [ ! -e /dev/fuse ] && [ "$(id -u)" -eq 0 ]; then
  PATH="$PATH:/usr/sbin:/sbin" modprobe fuse 2>/dev/null || echo "txexec: warning: no /dev/fuse (modprobe fuse failed): the power-loss tests cannot run" >&2
fi
PATH="$PATH:/usr/sbin:/sbin" command -v mkfs.xfs >/dev/null 2>&1 || need="$need xfsprogs"
# The escape suite writes to a loop device it sets up.
PATH="$PATH:/usr/sbin:/sbin" command -v losetup >/dev/null 2>&1 || need="$need mount"
if [ -n "$need" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    if [ -n "$build_need" ]; then
      echo "txexec: missing packages:$need (run as root or install them)" >&2
      exit 1
    fi
    echo "txexec: warning: packages the tests use are missing:$need (run as root or install them)" >&2
    need=""
  fi
fi
if [ -n "$need" ]; then
  echo "installing:$need" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  # shellcheck disable=SC2086
  apt-get install -y -qq -o DPkg::Lock::Timeout=300 $need >/dev/null
fi
go mod download
# Analyzers make vet runs besides go vet's own, installed into bin/tools
# (not on PATH, removed by make clean): gVisor's checklocks checks the
# "+checklocks:mu" annotations on the fields the main locks guard. Its
# version is the one the gVisor packages are pinned to.
tools=$(pwd)/bin/tools
if [ ! -x "$tools/checklocks" ]; then
  GOBIN=$tools GOFLAGS= go install gvisor.dev/gvisor/tools/checklocks/cmd/checklocks@v0.0.0-20260905035102-160fafc42237
fi
# staticcheck (make lint, make test), in bin/tools too so that CI and every
# checkout get this version: 2026.2.2, which knows Go 1.26.
staticcheck_version=v0.8.2
if ! "$tools/staticcheck" -version 2>/dev/null | grep -q "(${staticcheck_version#v})"; then
  echo "installing: staticcheck $staticcheck_version in $tools" >&2
  GOBIN=$tools GOFLAGS= go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
fi
