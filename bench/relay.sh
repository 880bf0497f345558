#!/bin/bash
# bench/relay.sh [--quick] — kubehsm-relayd against haproxy and a direct
# connection (issue #23), as root.  Also `bench/run.sh --relay [--quick]`.
#
# One nginx mTLS endpoint (tests/harness/kubeapi.sh, with the streaming
# backend tests/harness/kubeback.py) serves three paths in the same run:
# straight to nginx with the session certificate ("direct"), through the
# relay, and through haproxy 2.6 configured as the same plain-HTTP -> mTLS
# proxy with the same certificate (one thread, like the relay).  Every
# comparison is interleaved round by round (A B C, C B A, ...):
#   1. kubectl.1.33 get --raw /version: relay / static certificate direct
#                                                               (target <= 0.95)
#   2. per-request time on a kept-alive connection (curl): relay - direct on
#      a reused TLS connection, and relay - haproxy, median    (target <= +0.3 ms)
#   3. a 100 MiB response, upstream TLS records of 16 KiB (a static file) and
#      of 4 KiB (proxied with proxy_buffering off): relay / direct (>= 0.95),
#      relay / haproxy (>= 1.0), and CPU seconds per 100 MiB, relay vs haproxy
#   4. 20 users x 50 concurrent requests: failures, answers for another user
#   5. memory: 1000 kept-alive client connections that each made one request
#      and now sit idle (relay RSS <= 16 MiB), and 1000 with a request in
#      flight (bytes per connection, relay <= 0.5 x haproxy)
#   6. audit log on / off: per-request median difference     (<= +0.05 ms)
#
#   KH_BUILDDIR=DIR   an existing build (relay/kubehsm-relayd, tests/probes/relay_client
#                     are built if missing); default /var/tmp/kubehsm-bench-build
#   BENCH_OUT=DIR     raw data under DIR/relay (default /var/tmp/kubehsm-bench; never in the tree)
#   BENCH_ROUNDS / BENCH_RUNS / BENCH_WARMUP   override the mode
#   BENCH_PARTS="rss audit"   run only those parts (kubectl requests stream load
#                     rss audit), print their CSVs and write no report
#   BENCH_RELAYD=FILE another kubehsm-relayd to measure (an older build; with
#                     RELAY_AUDIT_SET="" for one that predates relay.audit)
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
for c in hyperfine nginx haproxy curl openssl setpriv useradd softhsm2-util pkcs11-tool keyctl \
	/usr/bin/python3; do
	command -v "$c" >/dev/null 2>&1 || { echo "bench: needs '$c' (scripts/install-deps.sh)" >&2; exit 2; }
done
KUBECTL=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
[ -x "$KUBECTL" ] || { echo "bench: needs $KUBECTL" >&2; exit 2; }
if [ $QUICK = 1 ]; then
	ROUNDS=${BENCH_ROUNDS:-3} RUNS=${BENCH_RUNS:-5} WARMUP=${BENCH_WARMUP:-2}
	REQS=50 STREAM_ROUNDS=2 LOAD_ROUNDS=1 AUDIT_ROUNDS=2 MODE=quick
else
	ROUNDS=${BENCH_ROUNDS:-10} RUNS=${BENCH_RUNS:-15} WARMUP=${BENCH_WARMUP:-3}
	REQS=300 STREAM_ROUNDS=5 LOAD_ROUNDS=3 AUDIT_ROUNDS=6 MODE=full
fi
LOAD_USERS=20 LOAD_P=50 OPEN_CONNS=1000
PARTS=${BENCH_PARTS:-kubectl requests stream load rss audit}
part() { [[ " $PARTS " == *" $1 "* ]]; }

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

. "$SRC/tests/harness/relay.sh"
RELAYD=${BENCH_RELAYD:-$RELAYD}
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
	echo "haproxy=$(haproxy -v | head -1 | cut -d' ' -f3)"
	echo "curl=$(curl --version | head -1 | cut -d' ' -f2)"
	echo "kubehsm_commit=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null)"
} >"$RES/machine.txt"

# --- the relay, haproxy, the endpoint, the users ----------------------------------------
ulimit -n "$(ulimit -Hn)" 2>/dev/null
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 8192 ] ||
	{ echo "bench: needs 8192 open files (ulimit -n is $(ulimit -n))" >&2; exit 2; }
KUBEAPI_WORKER_CONNECTIONS=8192
# A static 100 MiB file: nginx sends it in 16 KiB TLS records (ssl_buffer_size);
# /kh-stream comes from the backend with proxy_buffering off: 4 KiB records.
RELAY_KUBEAPI_EXTRA="location = /kh-big { default_type application/octet-stream; }"
RELAY_DEBUG=
relay_init
BYTES=$((100 << 20))
head -c "$BYTES" /dev/zero | tr '\0' 'k' >"$KUBEAPI_DIR/www/kh-big" && chmod 0644 "$KUBEAPI_DIR/www/kh-big"
relay_policy relay="max_connections = 8192; max_connections_per_user = 4096;" ||
	die "relay policy"
relay_start || die "kubehsm-relayd did not start"
make_user bench
U=$bench
relay_mint "$U" && relay_deliver "$U" || die "session for $U"
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

# haproxy: the same plain-HTTP -> mTLS proxy an admin would put there.
HAP_DIR=$KH_TMP/haproxy
mkdir -p "$HAP_DIR"
cat "$RELAY_SESS/$U.chain" "$RELAY_SESS/$U.key" >"$HAP_DIR/client.pem"
chmod 0600 "$HAP_DIR/client.pem"
HAP_PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$HAP_DIR/haproxy.cfg" <<EOF
global
  nbthread 1
  maxconn 8000
defaults
  mode http
  timeout connect 10s
  timeout client 1h
  timeout server 1h
frontend fe
  bind 127.0.0.1:$HAP_PORT
  default_backend be
backend be
  server s 127.0.0.1:${KUBEAPI_URL##*:} ssl crt $HAP_DIR/client.pem ca-file $KUBEAPI_CA verify required verifyhost 127.0.0.1
EOF
haproxy -db -f "$HAP_DIR/haproxy.cfg" >"$HAP_DIR/log" 2>&1 &
HAP_PID=$!
on_exit 'kill $HAP_PID'
for i in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$HAP_PORT") 2>/dev/null && break; sleep 0.1; done

RELAY_URL=http://127.0.0.1:$RELAY_PORT
HAP_URL=http://127.0.0.1:$HAP_PORT
CURL_DIRECT=(curl -s --cacert "$KUBEAPI_CA" --cert "$RELAY_SESS/$U.chain" --key "$RELAY_SESS/$U.key")
for kc in "$RELAY_KUBECONFIG" "$KC_STATIC"; do
	out=$(relay_as "$U" "$KUBECTL" --kubeconfig "$kc" get --raw /version </dev/null) &&
		grep -q '"gitVersion"' <<<"$out" || die "kubectl with ${kc##*/}: $out"
done
out=$(relay_as "$U" curl -s "$HAP_URL/kh-whoami") && grep -q "CN=$U" <<<"$out" || die "haproxy: $out $(tail -5 "$HAP_DIR/log")"
# url_for PATH-KIND: the URL of a path through relay, haproxy or direct
url_for() { case $1 in relay) echo "$RELAY_URL$2" ;; haproxy) echo "$HAP_URL$2" ;; direct) echo "$KUBEAPI_URL$2" ;; esac; }
curl_for() { if [ "$1" = direct ]; then echo "${CURL_DIRECT[*]}"; else echo curl -s; fi; }
# order r A B C: A B C on even rounds, C B A on odd ones
order() { local r=$1; shift; if ((r % 2)); then echo "$3 $2 $1"; else echo "$1 $2 $3"; fi; }
cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat"; }   # clock ticks
TCK=$(getconf CLK_TCK)

# --- 1. kubectl end to end ------------------------------------------------------------
HF=$KH_TMP/hf
install -d -o "$U" -m 0700 "$HF"
part kubectl && log "kubectl: $ROUNDS rounds x $RUNS runs, relay and static certificate"
for ((r = 0; r < ROUNDS; r++)); do
	part kubectl || break
	a=(-n relay "$KUBECTL --kubeconfig $RELAY_KUBECONFIG get --raw /version")
	b=(-n static-cert "$KUBECTL --kubeconfig $KC_STATIC get --raw /version")
	if ((r % 2)); then args=("${b[@]}" "${a[@]}"); else args=("${a[@]}" "${b[@]}"); fi
	relay_as "$U" hyperfine -N --style none --warmup "$WARMUP" --runs "$RUNS" \
		--export-json "$HF/hf.json" "${args[@]}" </dev/null >/dev/null || die "hyperfine kubectl round $r"
	cp "$HF/hf.json" "$RAW/kubectl.r$r.json"
done

# --- 2. per-request time on a kept-alive connection -----------------------------------
urls() { local i; for ((i = 0; i < REQS; i++)); do printf -- '-o /dev/null %s\n' "$1"; done; }
echo "round,path,request,seconds" >"$RES/requests.csv"
log "per request: $ROUNDS rounds x $REQS requests, relay, haproxy, direct"
for ((r = 0; r < ROUNDS; r++)); do
	part requests || break
	for path in $(order "$r" relay haproxy direct); do
		mapfile -t t < <(relay_as "$U" $(curl_for "$path") -w '%{time_total}\n' \
			$(urls "$(url_for "$path" /version)"))
		# The first request of each opens the connection (and the TLS session).
		for ((i = 1; i < ${#t[@]}; i++)); do echo "$r,$path,$i,${t[$i]}"; done >>"$RES/requests.csv"
	done
done

# --- 3. 100 MiB streamed, 16 KiB and 4 KiB records, with CPU per proxy -------------------
echo "round,records,path,bytes,bytes_per_s,proxy_cpu_s" >"$RES/stream.csv"
log "stream: $STREAM_ROUNDS rounds x 100 MiB x {16k,4k} x {relay,haproxy,direct}"
for ((r = 0; r < STREAM_ROUNDS; r++)); do
	part stream || break
	for rec in 16k 4k; do
		[ $rec = 16k ] && p=/kh-big || p="/kh-stream?bytes=$BYTES"
		for path in $(order "$r" relay haproxy direct); do
			pid=; [ "$path" = relay ] && pid=$RELAY_PID; [ "$path" = haproxy ] && pid=$HAP_PID
			c0=$([ -n "$pid" ] && cpu_of "$pid" || echo 0)
			o=$(relay_as "$U" $(curl_for "$path") -o /dev/null -w '%{size_download} %{speed_download}' \
				"$(url_for "$path" "$p")")
			c1=$([ -n "$pid" ] && cpu_of "$pid" || echo 0)
			echo "$r,$rec,$path,${o% *},${o#* },$(echo "($c1 - $c0) / $TCK" | bc -l)" >>"$RES/stream.csv"
		done
	done
done

# --- 4. 20 users x 50 concurrent requests ----------------------------------------------------
log "load: $LOAD_USERS users x $LOAD_P concurrent requests, $LOAD_ROUNDS rounds"
LU=()
part load || LOAD_USERS=0 LOAD_ROUNDS=0
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
		relay_as "$u" curl -s -Z --parallel-immediate --parallel-max "$LOAD_P" \
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

# --- 5. memory: 1000 idle kept-alive clients, then 1000 requests in flight --------------
# Each measurement starts from a fresh process (the relay's sessions come
# back from its keyring), so what earlier parts left in a heap does not
# count; haproxy is measured the same way.
rss() { awk '/^VmRSS:/{print $2}' "/proc/$1/status"; }
start_haproxy() {
	haproxy -db -f "$HAP_DIR/haproxy.cfg" >>"$HAP_DIR/log" 2>&1 &
	HAP_PID=$!
	for i in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$HAP_PORT") 2>/dev/null && break; sleep 0.1; done
}
# fresh PROXY: restart it; PID and PORT name the new process
fresh() {
	if [ "$1" = relay ]; then
		relay_stop
		relay_start || die "kubehsm-relayd did not restart"
		pid=$RELAY_PID port=$RELAY_PORT
	else
		kill "$HAP_PID"; wait "$HAP_PID" 2>/dev/null
		start_haproxy
		pid=$HAP_PID port=$HAP_PORT
	fi
	sleep 1
}
echo "proxy,state,connections,rss_kib,upstream,baseline_kib" >"$RES/rss.csv"
mkdir -m 0777 "$KH_TMP/open"
# open_clients PORT MODE: OPEN_CONNS connections; idle = one request each,
# answered, then silence; inflight = a request each the server answers in 2 min
open_clients() {
	rm -f "$KH_TMP/open/ready"
	relay_as "$U" prlimit --nofile=4096:4096 /usr/bin/python3 -c "
import socket, time
socks = []
for i in range($OPEN_CONNS):
    s = socket.create_connection(('127.0.0.1', $1))
    if '$2' == 'idle':
        s.sendall(b'GET /kh-whoami HTTP/1.1\r\nHost: relay\r\n\r\n')
        got = b''
        while b'\r\n\r\n' not in got or not got.endswith(b'\n'):
            got += s.recv(4096)
    else:
        s.sendall(b'GET /kh-whoami-slow?ms=120000 HTTP/1.1\r\nHost: relay\r\n\r\n')
    socks.append(s)
open('$KH_TMP/open/ready', 'w').close()
time.sleep(90)
" </dev/null >/dev/null 2>&1 &
	OPENER=$!
	for i in $(seq 1 900); do [ -e "$KH_TMP/open/ready" ] && break; sleep 0.1; done
}
for proxy in relay haproxy; do
	part rss || break
	for mode in idle inflight; do
		log "rss: $proxy, $OPEN_CONNS clients, $mode"
		fresh $proxy
		base=$(rss "$pid")
		open_clients "$port" $mode
		if [ $mode = inflight ]; then
			for i in $(seq 1 300); do
				n=$(ss -Htn state established "sport = :${KUBEAPI_URL##*:}" | wc -l)
				[ "$n" -ge "$OPEN_CONNS" ] && break
				sleep 0.1
			done
		fi
		# Steady state: idle buffers given back, the heap trimmed (once a second).
		sleep 3
		up=$(ss -Htn state established "sport = :${KUBEAPI_URL##*:}" | wc -l)
		echo "$proxy,$mode,$OPEN_CONNS,$(rss "$pid"),$up,$base" >>"$RES/rss.csv"
		kill "$OPENER" 2>/dev/null; wait "$OPENER" 2>/dev/null
		sleep 2
	done
done

# --- 6. audit on / off ------------------------------------------------------------------------
echo "round,audit,request,seconds" >"$RES/audit.csv"
log "audit: $AUDIT_ROUNDS rounds x $REQS requests, audit on and off (a restart each)"
for ((r = 0; r < AUDIT_ROUNDS; r++)); do
	part audit || break
	for a in $( ((r % 2)) && echo "off on" || echo "on off"); do
		relay_stop
		if [ $a = on ]; then unset RELAY_AUDIT_SET; else RELAY_AUDIT_SET='audit = { file = ""; };'; fi
		relay_policy relay="max_connections = 8192; max_connections_per_user = 4096;" || die policy
		relay_start || die "relay restart (audit $a)"
		relay_as "$U" curl -s -o /dev/null "$RELAY_URL/version"
		mapfile -t t < <(relay_as "$U" curl -s -w '%{time_total}\n' $(urls "$RELAY_URL/version"))
		for ((i = 1; i < ${#t[@]}; i++)); do echo "$r,$a,$i,${t[$i]}"; done >>"$RES/audit.csv"
	done
done
unset RELAY_AUDIT_SET
echo "audit_lines=$(wc -l <"$RELAY_AUDIT")" >>"$RES/machine.txt"

echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RES/machine.txt"
echo "relay_sessions=$(relay_ctl list | wc -l)" >>"$RES/machine.txt"
relay_stop
if [ -n "${BENCH_PARTS:-}" ]; then
	tail -n +1 "$RES"/*.csv
	exit 0
fi
/usr/bin/python3 "$BENCH/relay_report.py" "$BENCH" "$RES" || die "report"
log "done: $BENCH/RESULTS.md (relay section); raw data in $RES"
