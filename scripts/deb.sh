#!/bin/sh
# deb.sh BIN OUTDIR — build a Debian package of txexec from the binary BIN
# (and the man page and bash completion of docs/), with dpkg-deb, into
# OUTDIR; print the package's path.
#
# Its version is that of git describe (or $TXEXEC_VERSION), made a valid
# Debian version: below a tag vX.Y.Z it is X.Y.Z..., without a tag
# 0~gCOMMIT (sorting before any release); "-" becomes "+" (a "-" would
# start a Debian revision).
set -eu
[ $# -eq 2 ] || { echo "usage: deb.sh BIN OUTDIR" >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$1 out=$2
[ -x "$bin" ] || { echo "deb.sh: $bin is not an executable" >&2; exit 1; }
command -v dpkg-deb >/dev/null || { echo "deb.sh: dpkg-deb not installed" >&2; exit 1; }
if [ -n "${TXEXEC_VERSION:-}" ]; then
  v=$TXEXEC_VERSION
elif git -C "$top" describe --tags >/dev/null 2>&1; then
  v=$(git -C "$top" describe --tags --dirty)
else
  v=0~g$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
fi
v=${v#v}
v=$(printf '%s' "$v" | tr -- - +)
arch=$(dpkg --print-architecture)

stage=$(mktemp -d /tmp/txexec-deb.XXXXXX)
trap 'rm -rf "$stage"' EXIT
chmod 755 "$stage" # the package's root directory
make -s -C "$top" --no-print-directory install-files BIN="$bin" LAUNCHER="$(dirname "$bin")/txexec-launcher" DESTDIR="$stage" PREFIX=/usr
# Debian keeps man pages compressed; -n: no name or time in the header, so
# the package's bytes depend on its inputs alone.
gzip -9n "$stage/usr/share/man/man1/txexec.1"
mkdir -p "$stage/usr/share/doc/txexec"
install -m 0644 "$top/README.md" "$stage/usr/share/doc/txexec/README.md"
install -m 0644 "$top/docs/semantics.md" "$stage/usr/share/doc/txexec/semantics.md"
# dpkg's hook: after every dpkg run, wrapped set-ID programs an upgrade
# replaced are wrapped again (README, "Protecting set-user-ID programs").
mkdir -p "$stage/etc/dpkg/dpkg.cfg.d"
echo 'post-invoke=if [ -x /usr/bin/txexec ]; then /usr/bin/txexec wrap --check; fi' > "$stage/etc/dpkg/dpkg.cfg.d/txexec-wrap"
chmod 0644 "$stage/etc/dpkg/dpkg.cfg.d/txexec-wrap"
mkdir "$stage/DEBIAN"
echo /etc/dpkg/dpkg.cfg.d/txexec-wrap > "$stage/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<CONTROL
Package: txexec
Version: $v
Architecture: $arch
Maintainer: txexec developers <txexec@localhost>
Installed-Size: $size
Depends: libc6, libseccomp2 (>= 2.5.0)
Section: utils
Priority: optional
Description: run unmodified programs as ACID file-system transactions
 txexec runs a command and everything it starts as one file-system
 transaction: its changes are private until the whole process tree has
 exited, then committed durably (a SQLite redo log, then written through
 with renames) or rolled back.
CONTROL
mkdir -p "$out"
deb=$out/txexec_${v}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
