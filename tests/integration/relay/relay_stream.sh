#!/bin/bash
# relay_stream: long-lived streams through kubehsm-relayd, and what ends them.
#
# Behind the nginx mTLS endpoint a small backend (tests/harness/kubeback.py)
# streams watch events, speaks the WebSocket exec protocol and echoes an
# Upgrade stream.  Through the relay, with one credential-less kubeconfig:
# a watch and an exec round trip with every kubectl that speaks WebSocket
# exec (1.29 with KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true, 1.30 on by
# default), `get --raw` and a watch with 1.27 and 1.28 (SPDY-only exec,
# which the stand-in does not speak), the Python client's exec, a raw
# Upgrade stream carrying 4 MiB both ways unchanged.  Revoking a session
# during an open watch closes it before the revoke returns and the next
# request gets a 401; so does the session's expiry; kill -9 of the relay
# mid-stream ends the client's stream with an error instead of a hang, and
# after a restart the same sessions work with no new delivery (they were
# kept in the keyring); a logout while the relay is down is applied when
# it starts.
set -u
. "$KH_SRCDIR/tests/harness/relay.sh"
relay_preamble
relay_need_py kubernetes.stream websocket

plan_auto
relay_init
make_user alice
make_user bob
relay_start || exit 1
for u in "$alice" "$bob"; do
	relay_mint "$u" && relay_deliver "$u" || { echo "Bail out! session for $u"; exit 1; }
done
# watch_start USER FILE [KUBECTL]: kubectl get ns -w in the background;
# WATCH_PID is timeout(1)'s, which passes a kill on to kubectl.
watch_start() {
	timeout 120 setpriv --reuid="$(id -u "$1")" --regid="$(id -g "$1")" --init-groups \
		--reset-env "${3:-$RELAY_KUBECTL}" --kubeconfig "$RELAY_KUBECONFIG" \
		get namespaces -w -o name </dev/null >"$2" 2>"$2.err" &
	WATCH_PID=$!
}
# curl_watch_start USER FILE: the raw watch stream, with curl's verdict at its end
curl_watch_start() {
	timeout 120 setpriv --reuid="$(id -u "$1")" --regid="$(id -g "$1")" --init-groups \
		--reset-env curl -sSN "http://127.0.0.1:$RELAY_PORT/api/v1/namespaces?watch=1" \
		</dev/null >"$2" 2>"$2.err" &
	CURL_PID=$!
}
# wait_lines FILE N: until FILE has N lines (up to 30 s)
wait_lines() {
	local i
	for i in $(seq 1 300); do
		[ "$(cat "$1" 2>/dev/null | wc -l)" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# wait_exit PID SECONDS: 0 when it ended in time; WAIT_MS says how long it took
wait_exit() {
	local t0 i
	t0=$(date +%s%N)
	for i in $(seq 1 $(($2 * 50))); do
		if ! kill -0 "$1" 2>/dev/null; then
			WAIT_MS=$((($(date +%s%N) - t0) / 1000000))
			wait "$1" 2>/dev/null
			WAIT_RC=$?
			return 0
		fi
		sleep 0.02
	done
	return 1
}
conns_of() {   # established client connections of USER to the relay port
	ss -Htnpe state established "dport = :$RELAY_PORT" | grep -c "uid:$(id -u "$1") " || true
}

# --- every kubectl: a watch; WebSocket exec where kubectl speaks it --------
for K in "${KUBECTLS[@]}"; do
	v=${K##*kubectl.}
	watch_start "$alice" "$KH_TMP/w.$v" "$K"
	wait_lines "$KH_TMP/w.$v" 3
	ok $? "kubectl $v: a watch streams events through the relay" || diag "$(cat "$KH_TMP/w.$v.err")"
	kill "$WATCH_PID" 2>/dev/null
	wait "$WATCH_PID" 2>/dev/null
	case $v in 1.27|1.28) continue ;; esac
	run relay_as "$alice" env KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true timeout 60 "$K" \
		--kubeconfig "$RELAY_KUBECONFIG" exec -i kh-test-pod -- cat <<<"round trip $v"
	is "$rc:$out" "0:round trip $v" "kubectl $v: exec -i round trip (WebSocket Upgrade)" ||
		diag "$err"
done

cat >"$KH_TMP/pyexec.py" <<EOF
from kubernetes import client, config
from kubernetes.stream import stream
config.load_kube_config(config_file="$RELAY_KUBECONFIG")
api = client.CoreV1Api()
r = stream(api.connect_get_namespaced_pod_exec, "kh-test-pod", "default", command=["cat"],
           stdin=True, stdout=True, stderr=True, tty=False, _preload_content=False)
r.write_stdin("python round trip\n")
out = ""
while "\n" not in out and r.is_open():
    r.update(timeout=10)
    out += r.read_stdout()
r.close()
print(out.strip())
EOF
run relay_as "$bob" timeout 60 $PY "$KH_TMP/pyexec.py"
is "$rc:$out" "0:python round trip" "the Python client: exec round trip (WebSocket v4)" || diag "$err"

cat >"$KH_TMP/echo.py" <<EOF
import hashlib, os, socket, sys, threading
s = socket.create_connection(("127.0.0.1", $RELAY_PORT), timeout=60)
s.sendall(b"GET /kh-echo HTTP/1.1\r\nHost: relay\r\nConnection: Upgrade\r\nUpgrade: kh-echo\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
print(head.split(b"\r\n")[0].decode())
data = os.urandom(4 << 20)
threading.Thread(target=s.sendall, args=(data,)).start()
got = bytearray()
while len(got) < len(data):
    b = s.recv(1 << 16)
    if not b:
        break
    got += b
print(len(got), hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest())
EOF
run relay_as "$bob" timeout 60 $PY "$KH_TMP/echo.py"
is "$rc:$out" "0:HTTP/1.1 101 Switching Protocols
4194304 True" "a raw Upgrade stream: 4 MiB each way, byte for byte" || diag "$err"

# --- revoke during an open watch ----------------------------------------
watch_start "$alice" "$KH_TMP/w.revoke"
curl_watch_start "$alice" "$KH_TMP/c.revoke"
wait_lines "$KH_TMP/w.revoke" 2 || diag "the watch did not start: $(cat "$KH_TMP/w.revoke.err")"
wait_lines "$KH_TMP/c.revoke" 2 || diag "curl's watch did not start: $(cat "$KH_TMP/c.revoke.err")"
n=$(conns_of "$alice")
[ "$n" -ge 2 ]
ok $? "$alice has watches open through the relay, kubectl's and curl's ($n connections)"
t0=$(date +%s%N)
run relay_ctl forget "$(id -u "$alice")" '*' revoked
t1=$(date +%s%N)
like "$rc:$out" "^0:sessions=1 connections=[1-9]" "revoke: the relay forgets $alice and closes her connections" ||
	diag "$err"
is "$(conns_of "$alice")" 0 "... the watch's connection is closed when the revoke returns ($(((t1 - t0) / 1000000)) ms)"
wait_exit "$WATCH_PID" 10
ok $? "... and kubectl's watch ends (after ${WAIT_MS:-?} ms)"
wait_exit "$CURL_PID" 10
is "$WAIT_RC:$(cat "$KH_TMP/c.revoke.err")" \
	"18:curl: (18) transfer closed with outstanding read data remaining" \
	"... curl's too, with an error: the stream was cut, not finished"
relay_kc "$alice" get --raw /kh-whoami
like "$rc:$err" "^1:.*ended at .* \(revoked\)" "the next request gets a 401: the session was revoked"
relay_kc "$bob" get --raw /kh-whoami
is "$rc" 0 "$bob is not affected"

# --- kill -9 mid-stream, restart: the sessions are still there --------------
relay_mint "$alice" && relay_deliver "$alice"
watch_start "$bob" "$KH_TMP/w.kill"
curl_watch_start "$bob" "$KH_TMP/c.kill"
wait_lines "$KH_TMP/w.kill" 2 || diag "the watch did not start: $(cat "$KH_TMP/w.kill.err")"
wait_lines "$KH_TMP/c.kill" 2 || diag "curl's watch did not start: $(cat "$KH_TMP/c.kill.err")"
old_pid=$RELAY_PID
relay_kill9
wait_exit "$WATCH_PID" 10
ok $? "kill -9 of the relay mid-stream: kubectl's watch ends, no hang (${WAIT_MS:-?} ms)"
wait_exit "$CURL_PID" 10
is "$WAIT_RC:$(cat "$KH_TMP/c.kill.err")" \
	"18:curl: (18) transfer closed with outstanding read data remaining" \
	"... curl's with a clean error"
lines=$(wc -l <"$KH_TMP/w.kill")
sleep 0.5
is "$(wc -l <"$KH_TMP/w.kill")" "$lines" "... and nothing more arrives"
relay_kc "$bob" get --raw /kh-whoami
like "$rc:$err" "^1:The connection to the server 127.0.0.1:$RELAY_PORT was refused" \
	"while it is down, kubectl says the connection was refused"
relay_start || exit 1
isnt "$RELAY_PID" "$old_pid" "the relay restarts"
run relay_ctl list
is "$(awk '{print $2}' <<<"$out" | sort | tr '\n' ' ')" "$(printf '%s\n' "$alice" "$bob" | sort | tr '\n' ' ')" \
	"after the restart it still holds both sessions (kept in its keyring)"
grep -q "2 session(s) restored from the keyring" "$KH_TMP/relayd.log"
ok $? "... restored from the keyring, as its log says"
for u in "$alice" "$bob"; do
	relay_kc "$u" get --raw /kh-whoami
	is "$rc:$out" "0:$(relay_serial "$u") CN=$u,O=dev" "$u is served again without a new login" || diag "$err"
done
watch_start "$bob" "$KH_TMP/w.after"
wait_lines "$KH_TMP/w.after" 2
ok $? "a new watch streams after the restart"
relay_stop
wait_exit "$WATCH_PID" 10
ok $? "stopping the relay ends it too"

# --- a logout while the relay is down is not forgotten ------------------------
run relay_ctl forget "$(id -u "$alice")" '*' logout
like "$rc:$out" "^0:noted \\(kubehsm-relayd is not running" "root's forget while the relay is down succeeds"
pending=$(ls -d /run/kubehsm/relay-forget/"$(id -u "$alice")"-logout-* 2>/dev/null | head -1)
is "$(stat -c '%a %U' "$pending" 2>&1)" "600 root" "... as a root-only note for the relay's next start"
relay_start || exit 1
run relay_ctl list
is "$(awk '{print $2}' <<<"$out")" "$bob" "at the restart the relay drops $alice's session, keeps $bob's"
[ ! -e "$pending" ]
ok $? "... and removes the note"
relay_kc "$alice" get --raw /kh-whoami
like "$rc:$err" "^1:.*ended at .* \(logout\)" "$alice gets a 401: her session ended at logout"
relay_mint "$alice" && relay_deliver "$alice"
relay_kc "$alice" get --raw /kh-whoami
is "$rc:$out" "0:$(relay_serial "$alice") CN=$alice,O=dev" "a new session of $alice is served"

# --- expiry ends a session like a revoke -----------------------------------
relay_mint "$bob" && relay_deliver "$bob" "$(($(date +%s) + 4))"
curl_watch_start "$bob" "$KH_TMP/c.exp"
wait_lines "$KH_TMP/c.exp" 2 || diag "curl's watch did not start: $(cat "$KH_TMP/c.exp.err")"
wait_exit "$CURL_PID" 20
ok $? "at the session's expiry the relay closes $bob's open watch"
is "$WAIT_RC:$(cat "$KH_TMP/c.exp.err")" "18:curl: (18) transfer closed with outstanding read data remaining" \
	"... cut, not finished"
relay_kc "$bob" get --raw /kh-whoami
like "$rc:$err" "^1:.*ended at .* \(expired\)" "... and the next request gets a 401: expired"
relay_stop

done_testing
