#!/bin/bash
# bench/rprog.sh [BUILD_DIR] — the relay's per-connection cost of naming the
# client program (issue #32), with 2,000 extra processes on the host:
#   none          the host as it is
#   other-uid     2,000 sleeps of root (the scan stats them and skips them)
#   same-uid      2,000 sleeps of the client's own uid (the scan may read
#                 each one's fd directory)
# The client (the bench) runs as BENCH_UID (default 65534, nobody), as a
# user's kubectl does; the uid's processes need no privilege to be read,
# so the figures are the finder's.
# Each row: medians of the connection's own cost to the relay (accept, the
# sock_diag lookup it already makes, close) and of the scan, and their
# ratio, for a client that is a new process ("new"), one that connects
# again ("again"), and one older than all the sleeps that is not among the
# pids found last ("old": the scan reads every process of the uid).  The scan runs in the relay's finder process, not on the
# request path; this is what it costs the host.  Run as root.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
N=${N:-2000}
BU=${BENCH_UID:-65534}
ROUNDS=${ROUNDS:-300}
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
[ -f "$BUILD/config.h" ] || { echo "no $BUILD/config.h: configure first" >&2; exit 1; }
T=$(mktemp -d)
PIDS=()
cleanup() { [ ${#PIDS[@]} -eq 0 ] || kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$T"; }
trap cleanup EXIT
chmod 0755 "$T"
cc -O2 -Wall -Wextra -I"$BUILD" -I"$SRC" -o "$T/rprog_bench" "$SRC/bench/rprog_bench.c" \
	"$SRC/relay/kh_rprog.c" "$SRC/relay/kh_rpeer.c" "$SRC/lib/kh_error.c"
spawn() {   # spawn USER: N sleeps as USER
	local i
	for i in $(seq 1 "$N"); do
		setpriv --reuid="$1" --regid="$1" --clear-groups sleep 600 &
		PIDS+=($!)
	done
	sleep 1
}
row() {   # row LABEL: each mode on the host as it is now
	local m procs
	procs=$(find /proc -maxdepth 1 -name '[0-9]*' 2>/dev/null | wc -l)
	for m in new again old; do
		printf '%-10s procs=%-5s %s\n' "$1" "$procs" "$(setpriv --reuid="$BU" --regid="$BU" --clear-groups "$T/rprog_bench" "$ROUNDS" "$m")"
	done
}
row none
spawn 0
row other-uid
kill "${PIDS[@]}" 2>/dev/null || true; wait "${PIDS[@]}" 2>/dev/null || true; PIDS=()
spawn "$BU"
row same-uid
