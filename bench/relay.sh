#!/bin/bash
# bench/relay.sh [--quick] — kubehsm-relayd's benchmarks (issue #15), as root.
# Also `bench/run.sh --relay [--quick]`.
#
# Every figure is a ratio against a baseline measured in the same run,
# interleaved round by round (A B, B A, ...), as bench/run.sh does:
#   1. kubectl.1.33 get --raw /version through the relay / kubectl with a
#      static certificate straight to the mTLS endpoint        (target <= 1.0)
#   2. per-request time, curl keep-alive: through the relay - straight to the
#      endpoint on a reused TLS connection, median             (target <= +0.3 ms)
#   3. a 100 MiB streamed response: throughput through the relay / straight
#                                                               (target >= 0.8)
#   4. 20 users x 50 concurrent requests each, repeated: failures and answers
#      for another user                                         (target 0 and 0)
#   5. the relay's RSS with 1000 open connections (each with its mTLS
#      connection upstream, a request pending)                 (target <= 16 MiB)
# The same nginx mTLS endpoint (tests/harness/kubeapi.sh, with the streaming
# backend tests/harness/kubeback.py) serves both paths.
#
#   KH_BUILDDIR=DIR   an existing build (relay/kubehsm-relayd, tests/probes/relay_client
#                     are built if missing); default /var/tmp/kubehsm-bench-build
#   BENCH_ROUNDS / BENCH_RUNS / BENCH_WARMUP   override the mode
#
# Results: the relay section of bench/RESULTS.md; the raw data (hyperfine
# JSON, CSVs, summary.json) in ${BENCH_OUT:-/var/tmp/kubehsm-bench}/relay/,
# outside the source tree.  Everything it creates goes at exit.
set -u
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(dirname "$BENCH")
QUICK=0
case "${1:-}" in
--quick) QUICK=1 ;;
"") ;;
*) echo "usage: $0 [--quick]" >&2; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "bench: run as root (binds a privileged port, creates users)" >&2; exit 2; }
for c in hyperfine nginx curl openssl setpriv useradd softhsm2-util pkcs11-tool keyctl \
	/usr/bin/python3; do
	command -v "$c" >/dev/null 2>&1 || { echo "bench: needs '$c'" >&2; exit 2; }
done
KUBECTL=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
[ -x "$KUBECTL" ] || { echo "bench: needs $KUBECTL" >&2; exit 2; }
if [ $QUICK = 1 ]; then
	ROUNDS=${BENCH_ROUNDS:-3} RUNS=${BENCH_RUNS:-5} WARMUP=${BENCH_WARMUP:-2}
	REQS=50 STREAM_ROUNDS=2 LOAD_ROUNDS=1 MODE=quick
else
	ROUNDS=${BENCH_ROUNDS:-10} RUNS=${BENCH_RUNS:-15} WARMUP=${BENCH_WARMUP:-3}
	REQS=200 STREAM_ROUNDS=5 LOAD_ROUNDS=5 MODE=full
fi
LOAD_USERS=20 LOAD_P=50 OPEN_CONNS=1000

# --- the build ----------------------------------------------------------------
KH_SRCDIR=$SRC
if [ -z "${KH_BUILDDIR:-}" ]; then
	KH_BUILDDIR=/var/tmp/kubehsm-bench-build
	if [ ! -x "$KH_BUILDDIR/relay/kubehsm-relayd" ]; then
		echo "bench: building kubehsm in $KH_BUILDDIR" >&2
		mkdir -p "$KH_BUILDDIR" &&
			(cd "$KH_BUILDDIR" && { [ -f Makefile ] || "$SRC/configure" >configure.log 2>&1; } &&
				make -j"$(nproc)" >make.log 2>&1) ||
			{ echo "bench: build failed, see $KH_BUILDDIR/{configure,make}.log" >&2; exit 1; }
	fi
fi
export KH_SRCDIR KH_BUILDDIR
if [ ! -x "$KH_BUILDDIR/tests/probes/relay_client" ]; then
	(cd "$KH_BUILDDIR" && make tests/probes/relay_client >>make.log 2>&1) ||
		{ echo "bench: cannot build tests/probes/relay_client in $KH_BUILDDIR" >&2; exit 1; }
fi

. "$SRC/tests/harness/tap.sh"
. "$SRC/tests/harness/users.sh"
. "$SRC/tests/harness/pki.sh"
. "$SRC/tests/harness/kubeapi.sh"
. "$SRC/tests/harness/relay.sh"
trap 'exit 130' INT TERM HUP
chmod 0755 "$KH_BUILDDIR" "$KH_BUILDDIR/helper" 2>/dev/null || true
RES=${BENCH_OUT:-/var/tmp/kubehsm-bench}/relay
RAW=$RES/raw
rm -rf "$RES"; mkdir -p "$RAW"
log() { echo "bench: $*" >&2; }
die() { echo "bench: FAILED: $*" >&2; exit 1; }
{
	echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf "mode=%s\nrounds=%s\nruns_per_round=%s\nwarmup=%s\nrequests_per_round=%s\n" \
		"$MODE" "$ROUNDS" "$RUNS" "$WARMUP" "$REQS"
	echo "nproc=$(nproc)"
	echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "kernel=$(uname -srm)"
	echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "hyperfine=$(hyperfine --version | cut -d' ' -f2)"
	echo "curl=$(curl --version | head -1 | cut -d' ' -f2)"
	echo "kubehsm_commit=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null)"
} >"$RES/machine.txt"

# --- the relay, the endpoint, the users -----------------------------------------------
# nginx, the backend and the clients hold thousands of connections.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 8192 ] ||
	{ echo "bench: needs 8192 open files (ulimit -n is $(ulimit -n))" >&2; exit 2; }
KUBEAPI_WORKER_CONNECTIONS=8192
RELAY_DEBUG=
relay_init
relay_policy relay="max_connections = 8192; max_connections_per_user = 4096;" ||
	die "relay policy"
relay_start || die "kubehsm-relayd did not start"
make_user bench
U=$bench
relay_mint "$U" && relay_deliver "$U" || die "session for $U"
# The same session, as a static certificate straight to the endpoint.
KC_STATIC=$KH_TMP/kubeconfig-static
cat >"$KC_STATIC" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: direct
  cluster:
    server: $KUBEAPI_URL
    certificate-authority: $KUBEAPI_CA
users:
- name: u
  user:
    client-certificate: $RELAY_SESS/$U.chain
    client-key: $RELAY_SESS/$U.key
contexts:
- name: direct
  context: {cluster: direct, user: u}
current-context: direct
EOF
chown "$U" "$KC_STATIC" "$RELAY_SESS/$U.key" "$RELAY_SESS/$U.chain"
chmod 0600 "$KC_STATIC"
asu() { local u=$1; shift; setpriv --reuid="$(id -u "$u")" --regid="$(id -g "$u")" --init-groups --reset-env "$@"; }
RELAY_URL=http://127.0.0.1:$RELAY_PORT
CURL_DIRECT=(curl -s --cacert "$KUBEAPI_CA" --cert "$RELAY_SESS/$U.chain" --key "$RELAY_SESS/$U.key")
for kc in "$RELAY_KUBECONFIG" "$KC_STATIC"; do
	out=$(asu "$U" "$KUBECTL" --kubeconfig "$kc" get --raw /version </dev/null) &&
		grep -q '"gitVersion"' <<<"$out" || die "kubectl with ${kc##*/}: $out"
done

# --- 1. kubectl end to end ------------------------------------------------------------
HF=$KH_TMP/hf
install -d -o "$U" -m 0700 "$HF"
log "kubectl: $ROUNDS rounds x $RUNS runs, relay and static certificate"
for ((r = 0; r < ROUNDS; r++)); do
	a=(-n relay "$KUBECTL --kubeconfig $RELAY_KUBECONFIG get --raw /version")
	b=(-n static-cert "$KUBECTL --kubeconfig $KC_STATIC get --raw /version")
	if ((r % 2)); then args=("${b[@]}" "${a[@]}"); else args=("${a[@]}" "${b[@]}"); fi
	asu "$U" hyperfine -N --style none --warmup "$WARMUP" --runs "$RUNS" \
		--export-json "$HF/hf.json" "${args[@]}" </dev/null >/dev/null || die "hyperfine kubectl round $r"
	cp "$HF/hf.json" "$RAW/kubectl.r$r.json"
done

# --- 2. per-request time on a kept-alive connection -----------------------------------
# One curl process, REQS requests on one connection; curl times each transfer.
urls() { local i; for ((i = 0; i < REQS; i++)); do printf -- '-o /dev/null %s\n' "$1"; done; }
echo "round,path,request,seconds" >"$RES/requests.csv"
log "per request: $ROUNDS rounds x $REQS requests each way"
for ((r = 0; r < ROUNDS; r++)); do
	for path in $( ((r % 2)) && echo "direct relay" || echo "relay direct"); do
		if [ "$path" = relay ]; then
			mapfile -t t < <(asu "$U" curl -s -w '%{time_total}\n' \
				$(urls "$RELAY_URL/version"))
		else
			mapfile -t t < <(asu "$U" "${CURL_DIRECT[@]}" -w '%{time_total}\n' \
				$(urls "$KUBEAPI_URL/version"))
		fi
		# The first request of each opens the connection (and the TLS session).
		for ((i = 1; i < ${#t[@]}; i++)); do echo "$r,$path,$i,${t[$i]}"; done >>"$RES/requests.csv"
	done
done

# --- 3. a 100 MiB streamed response ----------------------------------------------------
echo "round,path,bytes,bytes_per_s" >"$RES/stream.csv"
BYTES=$((100 << 20))
log "stream: $STREAM_ROUNDS rounds x 100 MiB each way"
for ((r = 0; r < STREAM_ROUNDS; r++)); do
	for path in $( ((r % 2)) && echo "direct relay" || echo "relay direct"); do
		if [ "$path" = relay ]; then
			o=$(asu "$U" curl -s -o /dev/null -w '%{size_download} %{speed_download}' \
				"$RELAY_URL/kh-stream?bytes=$BYTES")
		else
			o=$(asu "$U" "${CURL_DIRECT[@]}" -o /dev/null -w '%{size_download} %{speed_download}' \
				"$KUBEAPI_URL/kh-stream?bytes=$BYTES")
		fi
		echo "$r,$path,${o% *},${o#* }" >>"$RES/stream.csv"
	done
done

# --- 4. 20 users x 50 concurrent requests ----------------------------------------------------
log "load: $LOAD_USERS users x $LOAD_P concurrent requests, $LOAD_ROUNDS rounds"
LU=()
for i in $(seq 1 $LOAD_USERS); do
	v=load$(printf "\\$(printf %o $((96 + i)))")
	make_user "$v"
	LU+=("${!v}")
	relay_mint "${!v}" && relay_deliver "${!v}" || die "session for ${!v}"
done
echo "round,user,answers,own,other,failed,wall_s" >"$RES/load.csv"
for ((r = 0; r < LOAD_ROUNDS; r++)); do
	pids=()
	t0=$(date +%s.%N)
	for u in "${LU[@]}"; do
		asu "$u" curl -s -Z --parallel-immediate --parallel-max "$LOAD_P" \
			-w '\n%{http_code}\n' $(for ((i = 0; i < LOAD_P; i++)); do
				printf -- '-o - %s ' "$RELAY_URL/kh-whoami"; done) \
			>"$KH_TMP/load.$u.out" 2>"$KH_TMP/load.$u.err" </dev/null &
		pids+=($!)
	done
	wait "${pids[@]}"
	t1=$(date +%s.%N)
	for u in "${LU[@]}"; do
		f=$KH_TMP/load.$u.out
		answers=$(grep -c ' CN=' "$f")
		own=$(grep -c " CN=$u,O=dev\$" "$f")
		ok200=$(grep -cx 200 "$f")
		echo "$r,$u,$answers,$own,$((answers - own)),$((LOAD_P - ok200)),$(echo "$t1 - $t0" | bc -l)" \
			>>"$RES/load.csv"
	done
done

# --- 5. RSS with 1000 open connections ---------------------------------------------------------
# A fresh relay (its sessions come back from the keyring), so what the load
# above left in its heap does not count.
relay_stop
relay_start || die "kubehsm-relayd did not restart"
rss() { awk '/^VmRSS:/{print $2}' "/proc/$RELAY_PID/status"; }
echo "state,connections,rss_kib" >"$RES/rss.csv"
echo "idle,0,$(rss)" >>"$RES/rss.csv"
mkdir -m 0777 "$KH_TMP/open"
log "rss: $OPEN_CONNS open connections, each with a pending request upstream"
asu "$U" prlimit --nofile=4096:4096 /usr/bin/python3 -c "
import socket, time, os
socks = []
for i in range($OPEN_CONNS):
    s = socket.create_connection(('127.0.0.1', $RELAY_PORT))
    s.sendall(b'GET /kh-whoami-slow?ms=120000 HTTP/1.1\r\nHost: relay\r\n\r\n')
    socks.append(s)
open('$KH_TMP/open/ready', 'w').close()
time.sleep(60)
" </dev/null >/dev/null 2>&1 &
OPENER=$!
for i in $(seq 1 600); do [ -e "$KH_TMP/open/ready" ] && break; sleep 0.1; done
# Wait until the relay holds them all upstream (its log names each connect).
for i in $(seq 1 300); do
	n=$(ss -Htn state established "sport = :${KUBEAPI_URL##*:}" | wc -l)
	[ "$n" -ge "$OPEN_CONNS" ] && break
	sleep 0.1
done
# Steady state: the relay compacts idle connections a second after their
# last bytes and trims its heap once a second (the peak is reported too).
sleep 3
echo "open,$OPEN_CONNS,$(rss)" >>"$RES/rss.csv"
echo "open_upstream,$n," >>"$RES/rss.csv"
kill "$OPENER" 2>/dev/null; wait "$OPENER" 2>/dev/null
awk '/^VmHWM:/{print "peak," 0 "," $2}' "/proc/$RELAY_PID/status" >>"$RES/rss.csv"

echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RES/machine.txt"
echo "relay_sessions=$(relay_ctl list | wc -l)" >>"$RES/machine.txt"
relay_stop
/usr/bin/python3 "$BENCH/relay_report.py" "$BENCH" "$RES" || die "report"
log "done: $BENCH/RESULTS.md (relay section), $RES/"
