#!/bin/sh
# bench.sh: the maildir example server, one transaction per request
# (txexec --in-program) against the same server with a flock per mailbox,
# driven by concurrent clients; every run is checked for consistency.
#
#   examples/maildir/bench.sh [ROUNDS] [CLIENTS] [REQUESTS] [USERS]
#
# Run from the repository root. Prints one line per run and the median
# deliveries/s of each configuration, with its ratio to native flock.
set -eu
rounds=${1:-3} clients=${2:-8} requests=${3:-100} users=${4:-16}
work=$(mktemp -d /tmp/maildir-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/txexec" ./cmd/txexec
go build -o "$work/maildir" ./examples/maildir
export TXEXEC_STATE_DIR="$work/state"

# run NAME WRAPPER... -- SERVER-FLAGS...: one server, one drive, one check.
run() {
	name=$1; shift
	wrapper=""
	while [ "$1" != "--" ]; do wrapper="$wrapper $1"; shift; done
	shift
	rm -rf "$work/mail" "$work/sock"; mkdir "$work/mail"
	$wrapper "$work/maildir" serve -dir "$work/mail" -socket "$work/sock" "$@" &
	server=$!
	while [ ! -S "$work/sock" ]; do sleep 0.05; done
	out=$("$work/maildir" drive -socket "$work/sock" -clients "$clients" -requests "$requests" -users "$users" -out "$work/acks")
	wait "$server" || true
	"$work/maildir" check -dir "$work/mail" -acks "$work/acks" >/dev/null
	rate=$(echo "$out" | sed 's/.*: \([0-9]*\) deliveries\/s/\1/')
	echo "$name $rate" >>"$work/results"
	echo "$name: $out (checked)"
}

for r in $(seq "$rounds"); do
	run flock-native -- -mode flock
	run flock-txexec "$work/txexec" --in-program -- -mode flock
	run tx-nondurable "$work/txexec" --in-program --no-durable -- -mode tx
	run flock-fsync-native -- -mode flock -fsync
	run tx-durable "$work/txexec" --in-program -- -mode tx
done

median() { grep "^$1 " "$work/results" | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(median flock-native)
echo
echo "clients=$clients requests/client=$requests users=$users rounds=$rounds (median deliveries/s, ratio to flock-native)"
for c in flock-native flock-txexec tx-nondurable flock-fsync-native tx-durable; do
	m=$(median "$c")
	echo "$c $m $(awk -v m="$m" -v b="$base" 'BEGIN {printf "%.2f", m / b}')"
done
