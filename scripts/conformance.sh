#!/bin/sh
# Run the differential conformance corpus (../shared/conformance and our own
# e2e/conformance/cases) against bin/txexec.
#
# A case whose script ends with a failing command cannot commit under the
# documented default --on-exit=success (the command tree did not exit 0, so
# the transaction rolls back — DESIGN §5). Those cases are listed in
# e2e/conformance/commit-on-failure.txt with the reason, and run with
# --on-exit=commit so that their committed tree is still compared with
# Linux; their abort run is unchanged.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
tx=$top/bin/txexec
shared=${TXEXEC_SHARED:-$top/../shared}/conformance
runner=$shared/run.sh
[ -x "$runner" ] || { echo "conformance: $runner not found" >&2; exit 1; }
# What this run makes for itself it removes at exit, also when interrupted;
# a state or work directory the user named is theirs to keep.
own_state="" own_work="" wrap=""
trap 'rm -rf ${own_state:+"$own_state"} ${own_work:+"$own_work"} ${wrap:+"$wrap"}' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ -z "${TXEXEC_STATE_DIR:-}" ]; then
  own_state=$(mktemp -d /var/tmp/txexec-state.XXXXXX)
  export TXEXEC_STATE_DIR="$own_state"
fi
# The runner's work directory defaults to one fixed path, which two runs at
# once on a shared machine (other worktrees) would trample: use our own.
if [ -z "${TXEXEC_CONFORMANCE_DIR:-}" ]; then
  own_work=$(mktemp -d /tmp/txexec-conformance.XXXXXX)
  export TXEXEC_CONFORMANCE_DIR="$own_work"
fi
wrap=$(mktemp /tmp/txexec-commit.XXXXXX)
printf '#!/bin/sh\nexec %s --on-exit=commit "$@"\n' "$tx" > "$wrap"
chmod +x "$wrap"
list=$top/e2e/conformance/commit-on-failure.txt
plain="" commit=""
for c in "$shared"/cases/*.sh "$top"/e2e/conformance/cases/*.sh; do
  [ -f "$c" ] || continue
  if grep -q "^$(basename "$c") " "$list" 2>/dev/null; then commit="$commit $c"; else plain="$plain $c"; fi
done
rc=0
# shellcheck disable=SC2086
"$runner" "$tx" $plain || rc=1
if [ -n "$commit" ]; then
  echo "conformance: with --on-exit=commit (see e2e/conformance/commit-on-failure.txt):"
  # shellcheck disable=SC2086
  "$runner" "$wrap" $commit || rc=1
fi
exit $rc
