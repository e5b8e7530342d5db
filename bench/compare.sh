#!/bin/sh
# Measure one optimization: run BenchmarkPerCall with the build after it
# (AFTER) and the build before it (BEFORE, the "-base" modes) side by side,
# ROUNDS times over, one go test run per round so that every round compares
# numbers taken seconds apart, and write the result as a bench/history file
# that bench/report renders in docs/performance.md.
#
#   bench/compare.sh BEFORE AFTER OUT TITLE [DESCRIPTION [REGEXP [ROUNDS]]]
#
# BEFORE and AFTER are txexec binaries; REGEXP selects the calls
# (default "PerCall/(stat|open|mkdir)/"), ROUNDS defaults to 5.
set -eu
[ $# -ge 4 ] || { echo "usage: $0 BEFORE AFTER OUT TITLE [DESCRIPTION [REGEXP [ROUNDS]]]" >&2; exit 2; }
before=$1 after=$2 out=$3 title=$4
desc=${5:-}
re=${6:-PerCall/(stat|open|mkdir)/}
rounds=${7:-5}
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
  echo "# $title"
  [ -z "$desc" ] || printf '%s\n' "$desc" | sed 's/^/# /'
  echo "# Measured $(date -u '+%Y-%m-%d %H:%M UTC') (load average $(cut -d' ' -f1-3 /proc/loadavg)) with \`bench/compare.sh BEFORE AFTER $out TITLE DESCRIPTION '$re' $rounds\`: medians of $rounds rounds."
} >"$tmp"
i=0
while [ "$i" -lt "$rounds" ]; do
  (cd "$top" && TXEXEC_BENCH_BIN=$after TXEXEC_BENCH_BASE=$before \
    go test -run '^$' -bench "$re" -benchtime 2000x ./bench/) | grep '^Benchmark' >>"$tmp"
  i=$((i + 1))
done
mv "$tmp" "$out"
trap - EXIT
