#!/bin/bash
# relay_hostile: peers that try to wear kubehsm-relayd down.
#
# With a small per-user connection limit: garbage bytes (with and without a
# session), a slowloris that trickles a request head a byte at a time and
# connections that send nothing (handshake_timeout 3s: both are cut at the
# deadline); then, with a long handshake_timeout so that only the limit
# counts, 5,000 idle connections held by one user, and clients that stop
# reading large responses.  Through all of it two other users' kubectl
# requests succeed; the relay keeps running.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/kubeapi.sh"
. "$KH_SRCDIR/tests/harness/relay.sh"

need_root
need_cmd softhsm2-util pkcs11-tool openssl keyctl setpriv nginx ss useradd prlimit
[ -x "$RELAYD" ] || skip_all "relay/kubehsm-relayd not built"
[ -x "$RELAY_CLIENT" ] || skip_all "tests/probes/relay_client not built"
[ -x "$RELAY_KUBECTL" ] || skip_all "no $RELAY_KUBECTL"
PY=/usr/bin/python3

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
serial() { openssl x509 -noout -serial -in "$RELAY_SESS/$1.pem" | cut -d= -f2; }
# others_ok WHAT: alice and bob are both served as themselves right now
others_ok() {
	local u bad=""
	for u in "$alice" "$bob"; do
		relay_kc "$u" get --raw /kh-whoami
		[ "$rc:$out" = "0:$(serial "$u") CN=$u,O=dev" ] || bad="$bad $u($rc: $err)"
	done
	is "$bad" "" "$1: other users are still served"
}
# hostile USER SECONDS SCRIPT: a Python peer as USER, in the background
hostile() {
	local u=$1 secs=$2; shift 2
	timeout "$((secs + 60))" prlimit --nofile=8192:8192 setpriv --reuid="$(id -u "$u")" \
		--regid="$(id -g "$u")" --init-groups --reset-env $PY -c "$*" >"$KH_TMP/h.out" 2>&1 &
	HPID=$!
}
relay_alive() { kill -0 "$RELAY_PID" 2>/dev/null; }

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
run setpriv --reuid="$(id -u "$eve")" --regid="$(id -g "$eve")" --init-groups --reset-env \
	$PY "$KH_TMP/garbage.py"
is "$rc:$out" "0:HTTP/1.1 401 Unauthorized|HTTP/1.1 401 Unauthorized|HTTP/1.1 401 Unauthorized" \
	"garbage without a session: a 401, whatever came before the empty line" ||
	diag "$err"
run setpriv --reuid="$(id -u "$mallory")" --regid="$(id -g "$mallory")" --init-groups \
	--reset-env $PY "$KH_TMP/garbage.py"
like "$rc:$out" "^0:(closed|HTTP/1.1 400 [^|]*)\|" \
	"garbage with a session is relayed as is: the API server answers (or drops) it" ||
	diag "$err"
relay_alive
ok $? "the relay runs on"
others_ok "after garbage"

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
def alive(s):
    s.setblocking(False)
    try:
        return s.recv(1) != b''
    except BlockingIOError:
        return True
    except OSError:
        return False
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
def alive(s):
    s.setblocking(False)
    try:
        return s.recv(1) != b''
    except BlockingIOError:
        return True
    except OSError:
        return False
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

relay_stop
is "$RELAY_STATUS" 0 "and stops cleanly"
done_testing
