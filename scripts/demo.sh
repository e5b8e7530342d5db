#!/bin/sh
# make demo: a failing install rolled back, a good one committed, and the
# history — all in a scratch area, nothing outside it is touched.
#
# TXEXEC_BIN names another txexec binary (the e2e test's own build);
# TMPDIR, where the scratch area goes (default /var/tmp). It needs nothing
# beyond POSIX sh and coreutils, so that it runs on a fresh machine.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
tx=${TXEXEC_BIN:-$top/bin/txexec}
demo=$(mktemp -d "${TMPDIR:-/var/tmp}/txexec-demo.XXXXXX")
export TXEXEC_STATE_DIR="$demo/state"
trap 'rm -rf "$demo"' EXIT
root=$demo/root
mkdir -p "$root/etc" "$root/usr/bin"
printf 'root:x:0:0::/root:/bin/sh\n' > "$root/etc/passwd"

# An "installer" that copies a program and a config, updates a shared file,
# then runs a post-install step — which fails unless told to succeed.
cat > "$demo/install.sh" <<'SH'
#!/bin/sh
set -e
root=$1; outcome=$2
printf '#!/bin/sh\necho hello from the demo tool\n' > "$root/usr/bin/demo-tool"
chmod 755 "$root/usr/bin/demo-tool"
mkdir -p "$root/etc/demo"
echo "color=blue" > "$root/etc/demo/demo.conf"
echo "demo:x:1001:1001::/nonexistent:/bin/false" >> "$root/etc/passwd"
echo "post-install: configuring…"
[ "$outcome" = ok ] || { echo "post-install: failed!" >&2; exit 1; }
SH
chmod +x "$demo/install.sh"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show_tree() { (cd "$root" && find . -type f | sort | sed 's/^/   /'); }

say "The tree before"
show_tree

say "A failing install under txexec"
echo "\$ txexec -- ./install.sh ROOT fail"
"$tx" -- "$demo/install.sh" "$root" fail || echo "(exit status $?)"
say "The tree after the failed install: unchanged"
show_tree
grep -q demo "$root/etc/passwd" && { echo "demo: the failed install leaked!" >&2; exit 1; }

say "A good install under txexec"
echo "\$ txexec -- ./install.sh ROOT ok"
"$tx" -- "$demo/install.sh" "$root" ok
say "The tree after the good install: everything, at once"
show_tree
"$root/usr/bin/demo-tool"

say "txexec log"
"$tx" log
say "txexec show (the committed transaction)"
# The newest applied transaction: its id is the first column of its line.
id=$("$tx" log | awk '$2 == "applied" { print $1; exit }')
"$tx" show "$id"
