#!/bin/sh
# Run the differential conformance corpus against bin/txexec with the
# repository's runner (e2e/conformance/run.sh): our cases,
# e2e/conformance/cases/*.sh, always; the shared corpus too when it is
# there ($TXEXEC_SHARED/conformance/cases, by default ../shared beside the
# repository), and its absence is no error.
#
# Arguments, if any, are the cases to run instead (paths to CASE.sh files).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
tx=$top/bin/txexec
[ -x "$tx" ] || { echo "conformance: $tx not built (make build)" >&2; exit 1; }
# A state directory of our own, removed at exit (also when interrupted);
# one the user named is theirs to keep.
own_state=""
trap 'rm -rf ${own_state:+"$own_state"}' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ -z "${TXEXEC_STATE_DIR:-}" ]; then
  own_state=$(mktemp -d /var/tmp/txexec-state.XXXXXX)
  export TXEXEC_STATE_DIR="$own_state"
fi
if [ $# -eq 0 ]; then
  set -- "$top"/e2e/conformance/cases/*.sh
  shared=${TXEXEC_SHARED:-$top/../shared}/conformance/cases
  if [ -d "$shared" ]; then
    for c in "$shared"/*.sh; do
      [ -f "$c" ] && set -- "$@" "$c"
    done
  else
    echo "conformance: no shared corpus at $shared; running ours only"
  fi
fi
"$top/e2e/conformance/run.sh" "$tx" "$@"
