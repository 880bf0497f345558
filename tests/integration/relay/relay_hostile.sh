#!/bin/bash
# relay_hostile: peers that try to wear kubehsm-relayd down or slip past it.
#
# With a small per-user connection limit: garbage bytes and request heads
# an API server might read differently from the relay (smuggling with both
# Content-Length and chunked, obs-fold, bare LF, oversized heads...) get a
# 400 from the relay and never reach the API server (its access log says
# so), with or without a session; a user holding every user.sock slot
# cannot delay root's revoke or a login's delivery; a revoke the relay
# cannot take (stopped with SIGSTOP) is applied from root's note when it
# runs again; a slowloris that trickles a request head a byte at a time and
# connections that send nothing (handshake_timeout 3s: both are cut at the
# deadline); then, with a long handshake_timeout so that only the limit
# counts, 5,000 idle connections held by one user, and clients that stop
# reading large responses.  Through all of it two other users' kubectl
# requests succeed; the relay keeps running.
set -u
. "$KH_SRCDIR/tests/harness/relay.sh"
relay_preamble prlimit

PER_USER=64
HS=3
plan_auto
relay_init
relay_policy relay="handshake_timeout = \"${HS}s\"; max_connections_per_user = $PER_USER;"
make_user alice
make_user bob
make_user mallory   # has a session
make_user eve       # has none
relay_start || exit 1
for u in "$alice" "$bob" "$mallory"; do
	relay_mint "$u" && relay_deliver "$u" || { echo "Bail out! session for $u"; exit 1; }
done
# others_ok WHAT: alice and bob are both served as themselves right now
others_ok() {
	local u bad=""
	for u in "$alice" "$bob"; do
		relay_kc "$u" get --raw /kh-whoami
		[ "$rc:$out" = "0:$(relay_serial "$u") CN=$u,O=dev" ] || bad="$bad $u($rc: $err)"
	done
	is "$bad" "" "$1: other users are still served"
}
# hostile USER SECONDS SCRIPT: a Python peer as USER, in the background
hostile() {
	local u=$1 secs=$2; shift 2
	timeout "$((secs + 60))" prlimit --nofile=8192:8192 setpriv --reuid="$(id -u "$u")" \
		--regid="$(id -g "$u")" --init-groups --reset-env env PYTHONPATH="$KH_TMP/py" \
		$PY -c "$*" >"$KH_TMP/h.out" 2>&1 &
	HPID=$!
}
relay_alive() { kill -0 "$RELAY_PID" 2>/dev/null; }
# The peers below ask whether the relay still holds their sockets open.
mkdir -p "$KH_TMP/py" && chmod 0755 "$KH_TMP/py"
cat >"$KH_TMP/py/khalive.py" <<'EOF'
def alive(s):
    """The relay has not closed s (nothing to read, or a byte)."""
    s.setblocking(False)
    try:
        return s.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
EOF

# --- garbage ----------------------------------------------------------
cat >"$KH_TMP/garbage.py" <<EOF
import os, socket, sys
res = []
for n in (64, 4096, 65536):
    s = socket.create_connection(("127.0.0.1", $RELAY_PORT), timeout=30)
    s.sendall(os.urandom(n) + b"\r\n\r\n")
    got = b""
    try:
        while True:
            b = s.recv(4096)
            if not b:
                break
            got += b
    except (ConnectionResetError, socket.timeout):
        pass
    res.append(got.split(b"\r\n")[0].decode("latin-1") or "closed")
print("|".join(res))
EOF
upstream_lines() { wc -l <"$KUBEAPI_DIR/logs/access.log"; }
before=$(upstream_lines)
run relay_as "$eve" $PY "$KH_TMP/garbage.py"
is "$rc:$out" "0:HTTP/1.1 400 Bad Request|HTTP/1.1 400 Bad Request|HTTP/1.1 400 Bad Request" \
	"garbage without a session: a 400 from the relay" || diag "$err"
run relay_as "$mallory" $PY "$KH_TMP/garbage.py"
is "$rc:$out" "0:HTTP/1.1 400 Bad Request|HTTP/1.1 400 Bad Request|HTTP/1.1 400 Bad Request" \
	"garbage with a session: a 400 from the relay too" || diag "$err"
is "$(upstream_lines)" "$before" "... and none of it reached the API server"
relay_alive
ok $? "the relay runs on"
others_ok "after garbage"

# --- request heads two parsers could read differently -------------------------
cat >"$KH_TMP/heads.py" <<'EOF'
import socket, sys
port = int(sys.argv[1])
heads = {
    "CL then TE": b"POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /kh-whoami HTTP/1.1\r\nHost: x\r\n\r\n",
    "TE then CL": b"POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
    "two CLs": b"POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 30\r\n\r\nabc",
    "TE gzip, chunked": b"POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    "TE with a space": b"POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\nContent-Length: 3\r\n\r\nabc",
    "obs-fold": b"GET /version HTTP/1.1\r\nHost: x\r\nX-A: a\r\n Transfer-Encoding: chunked\r\n\r\n",
    "bare LF": b"GET /version HTTP/1.1\nHost: x\n\n",
    "oversized": b"GET /version HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n",
    "absolute-form": b"GET http://10.0.0.1/version HTTP/1.1\r\nHost: x\r\n\r\n",
    "CONNECT": b"CONNECT 10.0.0.1:443 HTTP/1.1\r\nHost: x\r\n\r\n",
}
out = []
for name, head in heads.items():
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        s.sendall(head)
    except OSError:
        pass
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except (ConnectionResetError, socket.timeout):
        pass
    status = got.split(b"\r\n")[0].decode("latin-1")
    warned = b"\r\nWarning: 299 - \"kubehsm-relayd: bad request: " in got
    out.append("%s: %s%s" % (name, status, " (warned)" if warned else ""))
print("\n".join(out))
EOF
want=$(for h in "CL then TE" "TE then CL" "two CLs" "TE gzip, chunked" "TE with a space" obs-fold \
	"bare LF" oversized absolute-form CONNECT; do echo "$h: HTTP/1.1 400 Bad Request (warned)"; done)
before=$(upstream_lines)
run relay_as "$mallory" $PY "$KH_TMP/heads.py" "$RELAY_PORT"
is "$rc:$out" "0:$want" "hostile request heads (with a session): each a 400 saying why" || diag "$err"
is "$(upstream_lines)" "$before" "... and none reached the API server (its access log is unchanged)"
relay_alive
ok $? "the relay runs on"

# --- a user holding every user.sock slot cannot block root --------------------
# The kernel completes a connect() before the relay accepts it, so what the
# user holds is counted once the relay has caught up (two polls agree), and
# before its 1 s idle limit closes the ones it kept.
cat >"$KH_TMP/ctlflood.py" <<EOF
import socket, time
socks = []
for i in range(200):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect("$RELAY_RUNDIR/user.sock")
        socks.append(s)
    except OSError:
        pass
from khalive import alive
start, last, held = time.monotonic(), None, None
while time.monotonic() - start < 0.8:
    n = sum(alive(s) for s in socks)
    if n == last:
        held = n
        break
    last = n
    time.sleep(0.02)
print("connected", len(socks), "held", held if held is not None else last, flush=True)
open("$KH_TMP/ctlflood/ready", "w").close()
time.sleep(30)
EOF
mkdir -m 0777 "$KH_TMP/ctlflood"
timeout 60 setpriv --reuid="$(id -u "$eve")" --regid="$(id -g "$eve")" --init-groups --reset-env \
	env PYTHONPATH="$KH_TMP/py" $PY "$KH_TMP/ctlflood.py" >"$KH_TMP/ctlflood.out" 2>&1 &
FLOOD=$!
for i in $(seq 1 100); do [ -e "$KH_TMP/ctlflood/ready" ] && break; sleep 0.1; done
like "$(cat "$KH_TMP/ctlflood.out")" "^connected ([5-9]|[1-9][0-9]+) held [1-4]\$" \
	"a user opening 200 user.sock connections holds at most 4 (the per-uid cap)"
t0=$(date +%s%N)
run env KUBEHSM_CONFIG="$RELAY_CONF" "$KUBEHSM" admin revoke "$mallory"
t1=$(date +%s%N)
like "$rc:$out" "^0:kubehsm-relayd forgot the session and closed 0 connections" \
	"meanwhile kubehsm admin revoke reaches the relay ($(((t1 - t0) / 1000000)) ms)" || diag "$err"
run relay_deliver "$mallory"
is "$rc" 0 "... and a login's delivery too" || diag "$err"
kill "$FLOOD" 2>/dev/null
wait "$FLOOD" 2>/dev/null

# --- a revoke the relay cannot take is applied from root's note ----------------
timeout 120 setpriv --reuid="$(id -u "$mallory")" --regid="$(id -g "$mallory")" --init-groups \
	--reset-env curl -sSN "http://127.0.0.1:$RELAY_PORT/api/v1/namespaces?watch=1" \
	</dev/null >"$KH_TMP/w.stop" 2>"$KH_TMP/w.stop.err" &
WPID=$!
for i in $(seq 1 100); do [ "$(wc -l <"$KH_TMP/w.stop")" -ge 2 ] && break; sleep 0.1; done
kill -STOP "$RELAY_PID"
t0=$(date +%s%N)
run env KUBEHSM_CONFIG="$RELAY_CONF" "$KUBEHSM" admin revoke "$mallory"
t1=$(date +%s%N)
like "$rc:$out" "^0:kubehsm-relayd did not answer \(.*\); it ends the session within a second" \
	"revoke while the relay is stopped: root leaves a note ($(((t1 - t0) / 1000000)) ms)" ||
	diag "$err"
kill -CONT "$RELAY_PID"
t0=$(date +%s%N)
for i in $(seq 1 100); do kill -0 "$WPID" 2>/dev/null || break; sleep 0.05; done
t1=$(date +%s%N)
kill -0 "$WPID" 2>/dev/null
is "$?" 1 "once it runs again, the relay applies the note: the watch ends ($(((t1 - t0) / 1000000)) ms)"
wait "$WPID" 2>/dev/null
relay_kc "$mallory" get --raw /kh-whoami
like "$rc:$err" "^1:.*ended at .* \(revoked\)" "... and the next request gets a 401: revoked"
relay_mint "$mallory" && relay_deliver "$mallory"
relay_kc "$mallory" get --raw /kh-whoami
is "$rc:$out" "0:$(relay_serial "$mallory") CN=$mallory,O=dev" \
	"a session delivered after the note is served (the note is older than it)"

# --- slowloris: a request head one byte a second ---------------------------
hostile "$eve" 30 "
import socket, time
socks = [socket.create_connection(('127.0.0.1', $RELAY_PORT)) for _ in range(20)]
head = b'GET /version HTTP/1.1\r\nHost: x\r\nX-Slow: ' + b'a' * 100
start = time.time(); closed_at = None
for i in range(len(head)):
    alive = 0
    for s in socks:
        try:
            s.send(head[i:i+1]); alive += 1
        except OSError:
            pass
    if alive == 0:
        closed_at = time.time() - start
        break
    time.sleep(1)
print('cut after %.0f s' % closed_at if closed_at is not None else 'never cut')
"
sleep 1
others_ok "during a slowloris of 20 connections"
wait "$HPID"
like "$(cat "$KH_TMP/h.out")" "^cut after [0-9]+ s$" \
	"the slowloris is cut (handshake_timeout = ${HS}s): $(cat "$KH_TMP/h.out")"

# --- idle connections are cut at the handshake deadline ------------------------
hostile "$eve" 20 "
import socket, time
socks = [socket.create_connection(('127.0.0.1', $RELAY_PORT)) for _ in range(10)]
time.sleep($HS + 3)
from khalive import alive
print('left', sum(alive(s) for s in socks), flush=True)
"
wait "$HPID"
is "$(cat "$KH_TMP/h.out")" "left 0" "connections that send nothing are closed at handshake_timeout (${HS}s)"

# --- 5,000 idle connections from one user -------------------------------
# A long handshake_timeout now, so what is counted is the per-user limit.
relay_stop
relay_policy relay="handshake_timeout = \"60s\"; max_connections_per_user = $PER_USER;"
relay_start || exit 1
mkdir -m 0777 "$KH_TMP/flood"
hostile "$eve" 60 "
import socket, time
socks = []
for i in range(5000):
    try:
        socks.append(socket.create_connection(('127.0.0.1', $RELAY_PORT), timeout=10))
    except OSError:
        pass
print('opened', len(socks), flush=True)
time.sleep(1)
from khalive import alive
print('held', sum(alive(s) for s in socks), flush=True)
open('$KH_TMP/flood/ready', 'w').close()
time.sleep(30)
"
for i in $(seq 1 900); do [ -e "$KH_TMP/flood/ready" ] && break; sleep 0.1; done
held=$(ss -Htne state established "dport = :$RELAY_PORT" | grep -c "uid:$(id -u "$eve") " || true)
is "$held" "$PER_USER" "while one user opened 5,000 connections, the relay holds max_connections_per_user = $PER_USER"
others_ok "while one user holds 5,000 connections"
kill "$HPID" 2>/dev/null
wait "$HPID"
out=$(cat "$KH_TMP/h.out")
like "$out" "^opened 5000" "one user opened 5,000 connections"
like "$out" "held $PER_USER\$" "... and only $PER_USER stayed open"
relay_alive
ok $? "the relay runs on"

# --- a client that stops reading a large response ---------------------------
hostile "$mallory" 20 "
import socket, time
socks = []
for i in range(8):
    s = socket.create_connection(('127.0.0.1', $RELAY_PORT))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b'GET /kh-stream?bytes=1073741824 HTTP/1.1\r\nHost: x\r\n\r\n')
    socks.append(s)
time.sleep(3)
print('stalled', len(socks), flush=True)
time.sleep(8)
"
sleep 2
rss0=$(awk '/^VmRSS:/{print $2}' "/proc/$RELAY_PID/status")
others_ok "while 8 clients stall 1 GiB downloads"
sleep 2
rss1=$(awk '/^VmRSS:/{print $2}' "/proc/$RELAY_PID/status")
diag "relay VmRSS with 8 stalled 1 GiB downloads: ${rss0} kB, then ${rss1} kB"
wait "$HPID"
relay_alive
ok $? "the relay runs on"
run relay_ctl list
like "$out" "$(id -u "$alice") $alice" "the relay still holds the sessions"

# --- a forget of one issuer leaves root's notes for every issuer ------------
# A note (every issuer of the uid, not yet applied: a uid with no session
# here, whose note nothing consumes) survives a forget of one issuer that
# the relay took; a forget of every issuer, newer than it, covers it.
NOTE_UID=$((4000000 + $$ % 100000))
NOTE=/run/kubehsm/relay-forget/$NOTE_UID-logout-$(date +%s%N)
mkdir -p -m 0700 /run/kubehsm/relay-forget && : >"$NOTE" && on_exit "rm -f '$NOTE'"
run relay_ctl forget "$NOTE_UID" other-issuer
is "$rc:$out" "0:sessions=0 connections=0" "the relay takes a forget of one issuer" || diag "$err"
[ -e "$NOTE" ]
ok $? "... which leaves root's note for every issuer of the uid in place"
run relay_ctl forget "$NOTE_UID" '*'
is "$rc:$out" "0:sessions=0 connections=0" "the relay takes a forget of every issuer" || diag "$err"
[ ! -e "$NOTE" ]
ok $? "... which covers the older note: it goes"

relay_stop
is "$RELAY_STATUS" 0 "and stops cleanly"
done_testing
