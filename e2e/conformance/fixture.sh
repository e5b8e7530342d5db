#!/bin/sh
# fixture.sh DIR — make the tree every conformance case starts in.
#
# DIR must not exist. The cases (ours and the shared ones) rely on every
# name, content, mode and owner below, so change none of them without
# checking the cases. All times end at one instant of 2001, which lets the
# loose manifest tell the times a case left alone from the ones it moved.
set -eu
[ $# -eq 1 ] || { echo "usage: fixture.sh DIR" >&2; exit 2; }
[ ! -e "$1" ] && [ ! -L "$1" ] || { echo "fixture.sh: $1 already exists" >&2; exit 1; }
umask 022
mkdir -p "$1"
cd "$1"

# put NAME MODE LINE: a one-line text file with the given mode.
put() { printf '%s\n' "$3" > "$1" && chmod "$2" "$1"; }

put a.txt 644 alpha
put b.txt 600 bravo
put ro.txt 444 'read only'
put 'sp ace.txt' 644 space
put 'ünï.txt' 644 unicode
# One MiB of a repeated 9-byte line: large enough to span many pages and
# extents, and cut off mid-line so its end is not a line boundary.
yes abcdefgh | head -c 1048576 > big.bin
printf '#!/bin/sh\necho exec-ok "$@"\n' > exec.sh
chmod 755 exec.sh

mkdir dir1 dir1/sub empty dir-ro userdir
put dir1/c.txt 644 charlie
put dir1/sub/d.txt 644 delta
put dir-ro/e.txt 644 'inside read-only dir'
chmod 555 dir-ro

ln -s a.txt link-to-a
ln -s nowhere dangling
ln a.txt hard-a
mkfifo fifo

# What uid 1000 owns: the cases that drop to it (setpriv) write here.
put user.txt 644 'owned by 1000'
chown 1000:1000 user.txt userdir

# Last, so that nothing made afterwards moves a time again (-h: a symlink's
# own time, not its target's).
find . -exec touch -h -d '2001-01-01 00:00:00 UTC' {} +
