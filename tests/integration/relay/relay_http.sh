#!/bin/bash
# relay_http: kubehsm-relayd reads requests, pools upstream connections per
# uid, and writes one audit line per request.
#
# Against the nginx mTLS stand-in (whose access log names the TLS
# connection, the client certificate and the bytes of each request):
# pipelined and kept-alive requests of one client come back in order over
# one pooled upstream connection; a client idle longer than the pool's
# bound is served by a fresh one; two uids never share an upstream
# connection; revoking a uid closes its pooled connections; kubectl 1.27
# and 1.33 and the Python client (get pods, get --raw, a watch, an Upgrade
# round trip) each leave exactly one audit line with the right uid, login
# origin, method, path, status and byte counts (nginx's own counts); the
# audit log is root's only, follows a logrotate-style rename and SIGHUP,
# and no user can write or forge a line; `kubehsm admin audit` filters it;
# a session's expiry closes its connections within 100 ms.
set -u
. "$KH_SRCDIR/tests/harness/relay.sh"
relay_preamble jq
relay_need_py kubernetes kubernetes.stream websocket

K127=/usr/lib/google-cloud-sdk/bin/kubectl.1.27
K133=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
[ -x "$K127" ] && [ -x "$K133" ] || skip_all "needs kubectl 1.27 and 1.33"

plan_auto
relay_init
POOL_IDLE=5
relay_policy relay="upstream_idle_timeout = \"${POOL_IDLE}s\";" || { echo "Bail out! policy"; exit 1; }
make_user alice
make_user bob
relay_start || exit 1
export KH_ORIGIN_SERVICE=sshd KH_ORIGIN_RHOST=203.0.113.7 KH_ORIGIN_TTY=ssh
for u in "$alice" "$bob"; do
	relay_mint "$u" && relay_deliver "$u" || { echo "Bail out! session for $u"; exit 1; }
done
unset KH_ORIGIN_SERVICE KH_ORIGIN_RHOST KH_ORIGIN_TTY
ACCESS=$KUBEAPI_DIR/logs/access.log
UPPORT=${KUBEAPI_URL##*:}
# upstream_conns: the relay's established connections to the API server
upstream_conns() { ss -Htn state established "dport = :$UPPORT" | wc -l; }
# conn_of LINE: nginx's connection serial in an access log line
conn_of() { sed -n 's/.* conn=\([0-9]*\) .*/\1/p' <<<"$1"; }

# --- pipelining and keep-alive: in order, one pooled upstream connection ------
cat >"$KH_TMP/pipe.py" <<EOF
import socket, sys, time
s = socket.create_connection(("127.0.0.1", $RELAY_PORT), timeout=30)
f = s.makefile("rb")
def read_one():
    status = f.readline().decode().strip()
    n = 0
    while True:
        h = f.readline().decode().strip()
        if not h:
            break
        if h.lower().startswith("content-length:"):
            n = int(h.split(":")[1])
    return status, f.read(n).decode().strip()
paths = ["/kh-whoami", "/version", "/kh-whoami?second", "/api"]
s.sendall(b"".join(b"GET %s HTTP/1.1\r\nHost: relay\r\n\r\n" % p.encode() for p in paths))
for p in paths:
    status, body = read_one()
    print(p, status, body.split(",")[0][:40])
if len(sys.argv) > 1:
    time.sleep(float(sys.argv[1]))
    s.sendall(b"GET /kh-whoami?late HTTP/1.1\r\nHost: relay\r\n\r\n")
    status, body = read_one()
    print("late", status, body.split(",")[0][:40])
EOF
n0=$(wc -l <"$ACCESS")
run relay_as "$alice" $PY "$KH_TMP/pipe.py"
is "$rc:$out" "0:/kh-whoami HTTP/1.1 200 OK $(relay_serial "$alice") CN=$alice
/version HTTP/1.1 200 OK {\"major\":\"1\"
/kh-whoami?second HTTP/1.1 200 OK $(relay_serial "$alice") CN=$alice
/api HTTP/1.1 200 OK {\"kind\":\"APIVersions\"" \
	"four pipelined requests on one connection: four answers, in order" || diag "$err"
lines=$(tail -n +$((n0 + 1)) "$ACCESS")
is "$(awk '{print $4}' <<<"$lines" | tr '\n' ' ')" "/kh-whoami /version /kh-whoami?second /api " \
	"... they reached the API server in that order"
is "$(sed -n 's/.* conn=\([0-9]*\) .*/\1/p' <<<"$lines" | sort -u | wc -l)" 1 \
	"... all four over one upstream connection"
is "$(upstream_conns)" 1 "the connection stays in the pool after the client left"
n0=$(wc -l <"$ACCESS")
relay_kc "$alice" get --raw /kh-whoami
is "$rc:$out" "0:$(relay_serial "$alice") CN=$alice,O=dev" "the next client of the same uid is served ..."
is "$(conn_of "$(tail -1 "$ACCESS")")" "$(conn_of "$(sed -n "${n0}p" "$ACCESS")")" \
	"... over the pooled connection (no new handshake)"
n0=$(wc -l <"$ACCESS")
run relay_as "$alice" $PY "$KH_TMP/pipe.py" $((POOL_IDLE + 2))
like "$rc:$out" "late HTTP/1.1 200 OK $(relay_serial "$alice") CN=$alice\$" \
	"a kept-alive client idle longer than the pool's bound (${POOL_IDLE}s), then a request: served" ||
	diag "$err"
isnt "$(conn_of "$(tail -1 "$ACCESS")")" "$(conn_of "$(sed -n "$((n0 + 1))p" "$ACCESS")")" \
	"... over a new upstream connection: the idle one was closed at the bound"

# --- two uids never share an upstream connection -------------------------------
n0=$(wc -l <"$ACCESS")
pids=()
for i in 1 2 3; do
	for u in "$alice" "$bob"; do
		relay_as "$u" curl -s -o /dev/null "http://127.0.0.1:$RELAY_PORT/kh-whoami" &
		pids+=($!)
	done
done
wait "${pids[@]}"
for u in "$alice" "$bob"; do relay_kc "$u" get --raw /kh-whoami; done
shared=$(tail -n +$((n0 + 1)) "$ACCESS" | sed -n 's/.*dn="\([^"]*\)" conn=\([0-9]*\) .*/\2 \1/p' |
	sort -u | awk '{print $1}' | uniq -d | wc -l)
conns=$(tail -n +$((n0 + 1)) "$ACCESS" | sed -n 's/.* conn=\([0-9]*\) .*/\1/p' | sort -u | wc -l)
is "$shared" 0 "two uids, 8 requests at once: no upstream connection carried both ($conns connections seen at nginx)"

# --- revocation closes the uid's pooled connections ----------------------------
relay_kc "$bob" get --raw /kh-whoami
before=$(upstream_conns)
run relay_ctl forget "$(id -u "$bob")" '*' revoked
sleep 0.2
after=$(upstream_conns)
[ "$before" -gt "$after" ]
ok $? "revoking $bob closes his pooled upstream connections ($before -> $after)"
relay_mint "$bob" &&
	KH_ORIGIN_SERVICE=sshd KH_ORIGIN_RHOST=203.0.113.7 KH_ORIGIN_TTY=ssh relay_deliver "$bob"

# --- the audit log: one line per request ---------------------------------------
# audit_of UID PATH-PREFIX: the audit lines of uid whose path starts so
audit_of() { jq -c --argjson u "$1" --arg p "$2" 'select(.uid == $u and (.path | startswith($p)))' "$RELAY_AUDIT"; }
# nginx_of SERIAL PATH: the "in out" byte counts nginx logged for that request
nginx_of() { grep "\"GET $2 HTTP/1.1\" serial=$1 " "$ACCESS" | tail -1 | sed -n 's/.* in=\([0-9]*\) out=\([0-9]*\)$/\1 \2/p'; }
origin='{"service":"sshd","rhost":"203.0.113.7","tty":"ssh"}'
auid=$(id -u "$alice")
for K in "$K127" "$K133"; do
	v=${K##*kubectl.}
	q="/kh-whoami?kubectl=$v"
	RELAY_KUBECTL=$K relay_kc "$alice" get --raw "$q"
	line=$(audit_of "$auid" "$q")
	is "$(wc -l <<<"$line")" 1 "kubectl $v get --raw: exactly one audit line"
	is "$(jq -c '[.uid, .user, .cluster, .method, .path, .status, .watch, .upgrade, .origin]' <<<"$line")" \
		"[$auid,\"$alice\",\"test\",\"GET\",\"$q\",200,false,false,$origin]" \
		"... with uid, user, cluster, method, path, status and the login's origin"
	is "$(jq -r '"\(.bytesIn) \(.bytesOut)"' <<<"$line")" "$(nginx_of "$(relay_serial "$alice")" "$q")" \
		"... and the bytes each way nginx counted for that request"
	n0=$(audit_of "$auid" /api/v1/namespaces/default/pods | wc -l)
	RELAY_KUBECTL=$K relay_kc "$alice" get pods -o name
	is "$rc:$out" "0:pod/kh-test-pod" "kubectl $v get pods"
	line=$(audit_of "$auid" /api/v1/namespaces/default/pods | tail -n +$((n0 + 1)))
	is "$(jq -c '[.method, .status, (.path | test("limit=500"))]' <<<"$line")" '["GET",200,true]' \
		"... exactly one audit line for the list request"
	RELAY_KUBECTL=$K relay_kc "$alice" get namespaces -w -o name --request-timeout=3s
	line=$(audit_of "$auid" "/api/v1/namespaces?" | jq -c 'select(.watch)' | tail -1)
	is "$(jq -c '[.method, .status, .watch, (.bytesOut > 0)]' <<<"$line")" '["GET",200,true,true]' \
		"kubectl $v watch: an audit line marked as a watch, with the bytes it carried"
done
run relay_as "$alice" env KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true timeout 60 "$K133" \
	--kubeconfig "$RELAY_KUBECONFIG" exec -i kh-test-pod -- cat <<<"audit round trip"
is "$rc:$out" "0:audit round trip" "kubectl 1.33 exec -i (WebSocket Upgrade)" || diag "$err"
line=$(audit_of "$auid" /api/v1/namespaces/default/pods/kh-test-pod/exec | tail -1)
is "$(jq -c '[.method, .status, .upgrade, (.bytesIn > 100), (.bytesOut > 100)]' <<<"$line")" \
	'["GET",101,true,true,true]' "... one audit line: an Upgrade, 101, bytes both ways"
cat >"$KH_TMP/py.py" <<EOF
from kubernetes import client, config
from kubernetes.stream import stream
config.load_kube_config(config_file="$RELAY_KUBECONFIG")
api = client.CoreV1Api()
print(",".join(p.metadata.name for p in api.list_namespaced_pod("default", _request_timeout=30).items))
r = stream(api.connect_get_namespaced_pod_exec, "kh-test-pod", "default", command=["cat"],
           stdin=True, stdout=True, stderr=True, tty=False, _preload_content=False)
r.write_stdin("py\n")
out = ""
while "\n" not in out and r.is_open():
    r.update(timeout=10)
    out += r.read_stdout()
r.close()
print(out.strip())
EOF
buid=$(id -u "$bob")
n0=$(jq -c --argjson u "$buid" 'select(.uid == $u)' "$RELAY_AUDIT" | wc -l)
run relay_as "$bob" timeout 60 $PY "$KH_TMP/py.py"
is "$rc:$out" "0:kh-test-pod
py" "the Python client: list pods, exec round trip" || diag "$err"
lines=$(jq -c --argjson u "$buid" 'select(.uid == $u)' "$RELAY_AUDIT" | tail -n +$((n0 + 1)))
is "$(jq -r '"\(.method) \(.status) \(.path | sub("\\?.*"; "")) \(.upgrade) \(.origin.rhost)"' <<<"$lines")" \
	"GET 200 /api/v1/namespaces/default/pods false 203.0.113.7
GET 101 /api/v1/namespaces/default/pods/kh-test-pod/exec true 203.0.113.7" \
	"... two requests, two audit lines, with $bob's login origin"
relay_kc "$alice" get --raw /kh-whoami
n=$(wc -l <"$RELAY_AUDIT")
relay_as "$(id -un nobody)" curl -s -o /dev/null "http://127.0.0.1:$RELAY_PORT/version"
line=$(tail -1 "$RELAY_AUDIT")
is "$(jq -c '[.uid, .user, .status, .relay]' <<<"$line")" "[$(id -u nobody),null,401,\"no session\"]" \
	"a request the relay refuses is audited too (no user, 401, why)"

# --- the audit file: root's, not forgeable, rotated on SIGHUP ------------------
is "$(stat -c '%a %U' "$RELAY_AUDIT") $(stat -c '%a %U:%G' "$(dirname "$RELAY_AUDIT")")" \
	"600 $RELAY_USER 750 root:$(id -gn "$RELAY_USER")" \
	"the audit log: mode 600 (the relay writes it), in a directory only root and the relay enter, only root writes"
run relay_as "$alice" sh -c "echo '{\"uid\":0}' >>'$RELAY_AUDIT'"
isnt "$rc" 0 "a user cannot write it"
run relay_as "$alice" cat "$RELAY_AUDIT"
isnt "$rc" 0 "... nor read it"
cat >"$KH_TMP/forge.py" <<EOF
import socket
s = socket.create_connection(("127.0.0.1", $RELAY_PORT), timeout=30)
s.sendall(b'GET /kh-whoami?x="}{"uid":0,"user":"root"} HTTP/1.1\r\nHost: x\r\nUser-Agent: "}\r\n\r\n')
print(s.recv(100).split(b"\r\n")[0].decode())
EOF
n=$(wc -l <"$RELAY_AUDIT")
run relay_as "$alice" $PY "$KH_TMP/forge.py"
like "$rc:$out" "^0:HTTP/1.1 (200|400) " "a request whose path tries to end the line and start another" ||
	diag "$err"
tail -n +$((n + 1)) "$RELAY_AUDIT" | jq -e --argjson u "$auid" 'select(.uid != $u)' >/dev/null
is "$?" 4 "... leaves only lines of the user's own uid, each one JSON object"
is "$(wc -l <"$RELAY_AUDIT")" $((n + 1)) "... exactly one line"
mv "$RELAY_AUDIT" "$RELAY_AUDIT.1"
install -m 0600 -o "$RELAY_USER" -g "$(id -gn "$RELAY_USER")" /dev/null "$RELAY_AUDIT"   # logrotate's create
kill -HUP "$RELAY_PID"
sleep 0.3
relay_kc "$alice" get --raw "/kh-whoami?rotated=1"
is "$(jq -r .path "$RELAY_AUDIT" 2>/dev/null | tail -1)" "/kh-whoami?rotated=1" \
	"after a logrotate-style rename, create and SIGHUP, new lines go to the new file"
is "$(stat -c '%a %U' "$RELAY_AUDIT")" "600 $RELAY_USER" "... root-only like the first"
grep -q rotated "$RELAY_AUDIT.1"
is "$?" 1 "... and none to the old one"
relay_alive() { kill -0 "$RELAY_PID" 2>/dev/null; }
relay_alive
ok $? "the relay runs on after SIGHUP"

# --- kubehsm admin audit --------------------------------------------------------
cat "$RELAY_AUDIT.1" >>"$RELAY_AUDIT.all"
cat "$RELAY_AUDIT" >>"$RELAY_AUDIT.all"
run "$KUBEHSM" admin audit --file "$RELAY_AUDIT.all" --user "$bob" --json
is "$rc:$(jq -r .user <<<"$out" | sort -u)" "0:$bob" "kubehsm admin audit --user: only that user's lines (jq-friendly)"
run "$KUBEHSM" admin audit --file "$RELAY_AUDIT.all" --user "$bob"
like "$(head -2 <<<"$out")" "^TIME +UID +USER +CLUSTER +METHOD .*
.* $buid +$bob +test +GET +200 .* sshd@203\\.0\\.113\\.7 +/kh-whoami" \
	"... or as a table" || diag "$out"
like "$out" "^TIME +UID +USER +CLUSTER +METHOD +CODE +IN +OUT +MS +ORIGIN +PROGRAM +PATH\$" \
	"... whose heading has a PROGRAM column" || diag "$out"
like "$out" " $buid +$bob +test +GET +200 .* sshd@203\\.0\\.113\\.7 +[0-9]+ [^ ]+ +/kh-whoami\$" \
	"... which shows the client's pid and executable" || diag "$out"
# --pid and --program: the program of one of bob's lines.
run "$KUBEHSM" admin audit --file "$RELAY_AUDIT.all" --user "$bob" --json
ppid=$(jq -r 'select(.pid != null) | .pid' <<<"$out" | tail -1)
pexe=$(jq -r --argjson p "${ppid:-0}" 'select(.pid == $p) | .exe' <<<"$out" | tail -1)
run "$KUBEHSM" admin audit --file "$RELAY_AUDIT.all" --pid "${ppid:-0}" --json
like "$rc:$(jq -r .pid <<<"$out" | sort -u | tr '\n' ' ')" "^0:$ppid \$" "... --pid filters by the client's pid" ||
	diag "pid '$ppid' $out"
run "$KUBEHSM" admin audit --file "$RELAY_AUDIT.all" --program "${pexe##*/}" --json
like "$rc:$(jq -r '.exe' <<<"$out" | sort -u | tr '\n' ' ')" "^0:$pexe \$" \
	"... --program by the executable's base name" || diag "exe '$pexe' $out"
run "$KUBEHSM" admin audit --file "$RELAY_AUDIT.all" --program "/nonexistent/*" --json
is "$rc:$out" "0:" "... (a glob nothing matches: no line)"
run "$KUBEHSM" admin audit --file "$RELAY_AUDIT.all" --pid 0
like "$rc:$err" "^2:kubehsm: admin audit: --pid '0' is not a process id" "... --pid must be a pid"
run "$KUBEHSM" admin audit --file "$RELAY_AUDIT.all" --since 1h --cluster nope --json
is "$rc:$out" "0:" "... --cluster filters (none in cluster nope)"
run "$KUBEHSM" admin audit --file "$RELAY_AUDIT.all" --since "$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)"
is "$rc:$(wc -l <<<"$out")" "0:1" "... --since filters (nothing from the future; only the heading)"
run relay_as "$alice" "$KUBEHSM" admin audit --file "$RELAY_AUDIT.all"
like "$rc:$err" "^1:kubehsm: admin views need root" "... and is root's"

# --- expiry closes connections within 100 ms ------------------------------------
exp=$(($(date +%s) + 3))
relay_mint "$bob" && relay_deliver "$bob" "$exp"
cat >"$KH_TMP/exp.py" <<EOF
import socket, time
s = socket.create_connection(("127.0.0.1", $RELAY_PORT), timeout=30)
s.sendall(b"GET /api/v1/namespaces?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n")
while True:
    b = s.recv(65536)
    if not b:
        break
print("%.3f" % (time.time() - $exp))
EOF
run relay_as "$bob" $PY "$KH_TMP/exp.py"
late=$out
awk -v l="$late" 'BEGIN { exit !(l >= 0 && l < 0.1) }'
ok $? "at the session's expiry the relay closes its watch within 100 ms (${late}s after)" || diag "$err"

relay_stop
is "$RELAY_STATUS" 0 "the relay stops cleanly"
done_testing
