#!/bin/sh
# manifest.sh DIR [exact|loose] — describe the tree at DIR, one line per
# entry, sorted by path, so that two trees compare with cmp or diff:
#
#   PATH TYPE MODE UID:GID MTIME [size=N sha=HASH] [links=N group=PATH] [-> TARGET]
#
# size and sha are those of regular files; links and group are given for
# every non-directory with more than one name, group being the first (in
# byte order) of its names in the tree, so that which names share an inode
# is compared, not inode numbers. Names are printed with \ and newline
# escaped.
#
# exact (the default) prints every mtime in seconds: for a tree that must
# not have changed. loose, for comparing a tree changed natively with one
# changed under txexec, prints "new" for mtimes after 2020 (the fixture's
# are of 2001, so those are the ones the case set to now) and "-" for
# directories (any entry made or removed moves them).
set -eu
[ $# -ge 1 ] || { echo "usage: manifest.sh DIR [exact|loose]" >&2; exit 2; }
dir=$1 mode=${2:-exact}
case $mode in exact | loose) ;; *) echo "manifest.sh: mode $mode: want exact or loose" >&2; exit 2 ;; esac
cd "$dir"
hashes=$(mktemp)
trap 'rm -f "$hashes"' EXIT
# One sha256sum for many files; -z keeps any name intact (no escaping).
find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum -z > "$hashes"
find . -printf '%y\0%m\0%U\0%G\0%s\0%n\0%D:%i\0%T@\0%p\0%l\0' |
  LC_ALL=C awk -v RS='\0' -v mode="$mode" -v hashes="$hashes" '
    function esc(s) { gsub(/\\/, "\\\\", s); gsub(/\n/, "\\n", s); return s }
    BEGIN {
      while ((getline rec < hashes) > 0) sha[substr(rec, 67)] = substr(rec, 1, 16)
      close(hashes)
    }
    { f[NR % 10] = $0 }
    NR % 10 == 0 {
      type = f[1]; perm = f[2]; owner = f[3] ":" f[4]; size = f[5]; nlink = f[6]
      ino = f[7]; path = f[9]; target = f[0]
      t = f[8]; sub(/\..*/, "", t)
      if (mode == "loose") { if (type == "d") t = "-"; else if (t + 0 >= 1577836800) t = "new" }
      line = esc(path) " " type " " perm " " owner " " t
      if (type == "f") line = line " size=" size " sha=" sha[path]
      if (type == "l") line = line " -> " esc(target)
      n++; lines[n] = line; paths[n] = path
      if (type != "d" && nlink > 1) {
        links[n] = nlink; inode[n] = ino
        if (!(ino in first) || path < first[ino]) first[ino] = path
      }
    }
    END {
      for (i = 1; i <= n; i++) {
        if (i in links) lines[i] = lines[i] " links=" links[i] " group=" esc(first[inode[i]])
        print lines[i]
      }
    }' | LC_ALL=C sort
