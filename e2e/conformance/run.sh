#!/bin/sh
# run.sh TXEXEC CASE.sh... — differential conformance: does a shell script
# do under txexec what it does natively?
#
# Each case runs three times, each time with `sh CASE.sh` in a freshly made
# fixture tree (fixture.sh) as its working directory, stdin /dev/null:
#
#   native   no txexec: what Linux does;
#   commit   under `TXEXEC --on-exit=commit --`: the same exit status,
#            stdout and stderr as native, and after the commit the same tree
#            (loose manifest: times the case set are only "new"). commit,
#            not the default success, so that a case ending in a failing
#            command is compared too;
#   abort    under `TXEXEC --on-exit=abort --`: the same exit status, stdout
#            and stderr as native, and the tree left exactly as the fixture
#            was (exact manifest, times included).
#
# Lines of stderr that start with "txexec:" are txexec's own (the abort run
# reports its abort) and left out of the comparison. Every run uses the
# same path for the tree, since some programs record it in the files they
# write (cmake, git): the trees could not compare otherwise.
#
# It prints "PASS NAME" or "FAIL NAME: what differed" (and the differences)
# per case (ours by name, others by path), then "conformance: N passed, N failed"; it exits 1 if any failed.
#
# Environment: TXEXEC_CONFORMANCE_DIR, the work directory (default: a new
# one under /tmp, removed at exit; a named one is kept); TXEXEC_CASE_TIMEOUT,
# seconds a run may take before it is killed and fails (default 300);
# TXEXEC_CONFORMANCE_OPTIONS, txexec options (words) added to every run;
# TXEXEC_CONFORMANCE_PASSTHROUGH=1, instead of the commit and abort runs, one
# under `TXEXEC --passthrough --`, compared as the commit run is (options
# that exist only there, such as --fast-lookups, are tried this way).
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: run.sh TXEXEC CASE.sh..." >&2; exit 2; }
tx=$1
shift
case $tx in /*) ;; *) tx=$(pwd)/$tx ;; esac
[ -x "$tx" ] || { echo "conformance: $tx is not an executable" >&2; exit 2; }
limit=${TXEXEC_CASE_TIMEOUT:-300}
opts=${TXEXEC_CONFORMANCE_OPTIONS:-}
passthrough=${TXEXEC_CONFORMANCE_PASSTHROUGH:-}

if [ -n "${TXEXEC_CONFORMANCE_DIR:-}" ]; then
  work=$TXEXEC_CONFORMANCE_DIR
  mkdir -p "$work"
else
  work=$(mktemp -d /tmp/txexec-conformance.XXXXXX)
  trap 'remove_tree "$work"' EXIT
fi
trap 'exit 130' INT
trap 'exit 143' TERM
tree=$work/tree

# remove_tree PATH: remove what a case left, even what it made immutable or
# append-only (chattr), which rm alone cannot.
remove_tree() {
  [ -e "$1" ] || [ -L "$1" ] || return 0
  rm -rf "$1" 2>/dev/null && return 0
  chattr -R -i -a "$1" 2>/dev/null
  rm -rf "$1"
}

# fresh: a new fixture tree at $tree.
fresh() {
  remove_tree "$tree" && "$here/fixture.sh" "$tree" >/dev/null
}

# run LABEL CASE [TXEXEC OPTION]: run the case in $tree; keep its exit
# status, stdout and stderr (without txexec's lines) as $work/LABEL.*.
run() {
  label=$1 script=$2
  shift 2
  (cd "$tree" && exec timeout -k 10 "$limit" "$@" sh "$script") \
    </dev/null >"$work/$label.out" 2>"$work/$label.err.raw"
  echo $? >"$work/$label.rc"
  grep -v '^txexec:' "$work/$label.err.raw" >"$work/$label.err" || true
}

# differ FILE1 FILE2 WHAT: add WHAT to the reasons, and the first lines of
# the difference to the report, when the files differ.
differ() {
  cmp -s "$1" "$2" && return 0
  why="$why $3"
  {
    echo "  --- $3"
    diff "$1" "$2" | head -n 20 | sed 's/^/  /'
  } >>"$work/report"
}

pass=0 fail=0
for c in "$@"; do
  case $c in /*) ;; *) c=$(pwd)/$c ;; esac
  # Our cases by their name, others (the shared corpus) by their path.
  name=$c
  [ "$(dirname "$c")" != "$here/cases" ] || name=$(basename "$c")
  # What a previous case left must not stand for a run that did not happen.
  rm -f "$work"/*.rc "$work"/*.out "$work"/*.err "$work"/*.man
  fresh && run native "$c" && "$here/manifest.sh" "$tree" loose >"$work/native.man"
  why=""
  : >"$work/report"
  if [ -n "$passthrough" ]; then
    # shellcheck disable=SC2086 # opts are words
    fresh && run passthrough "$c" "$tx" --passthrough $opts -- &&
      "$here/manifest.sh" "$tree" loose >"$work/passthrough.man"
    differ "$work/native.rc" "$work/passthrough.rc" exit
    differ "$work/native.out" "$work/passthrough.out" stdout
    differ "$work/native.err" "$work/passthrough.err" stderr
    differ "$work/native.man" "$work/passthrough.man" tree
  else
    # shellcheck disable=SC2086 # opts are words
    fresh && run commit "$c" "$tx" --on-exit=commit $opts -- &&
      "$here/manifest.sh" "$tree" loose >"$work/commit.man"
    # shellcheck disable=SC2086
    fresh && "$here/manifest.sh" "$tree" exact >"$work/fixture.man" &&
      run abort "$c" "$tx" --on-exit=abort $opts -- && "$here/manifest.sh" "$tree" exact >"$work/abort.man"
    differ "$work/native.rc" "$work/commit.rc" exit
    differ "$work/native.out" "$work/commit.out" stdout
    differ "$work/native.err" "$work/commit.err" stderr
    differ "$work/native.man" "$work/commit.man" committed-tree
    differ "$work/native.rc" "$work/abort.rc" abort-exit
    differ "$work/native.out" "$work/abort.out" abort-stdout
    differ "$work/native.err" "$work/abort.err" abort-stderr
    differ "$work/fixture.man" "$work/abort.man" abort-changed-tree
  fi
  if [ -z "$why" ]; then
    pass=$((pass + 1))
    echo "PASS $name"
  else
    fail=$((fail + 1))
    echo "FAIL $name:$why"
    cat "$work/report"
  fi
done
remove_tree "$tree"
echo "conformance: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
