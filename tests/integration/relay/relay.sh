#!/bin/bash
# relay: kubehsm-relayd serves real users on one privileged loopback port.
#
# A real daemon (the build tree's) starts as root, binds 127.0.0.1 and
# [::1] on a free port below 1024 and drops to its own system user; the
# tests hand it minted sessions through control.sock (tests/probes/relay_client,
# the library the login uses).  Then, with one credential-less kubeconfig:
# two users on the same port are each served as themselves (the mTLS
# endpoint echoes the certificate it saw) by kubectl every version, curl
# and the Python client, over IPv4 and IPv6; a user without a session and
# root get a 401 whose message kubectl prints; forgetting a session gives
# the next request a 401 that says it ended; the daemon holds no
# capability, nor the session keyring of the shell that started it; it
# refuses a port an unprivileged user could bind; and while it is down no
# user can bind its port.
set -u
. "$KH_SRCDIR/tests/harness/relay.sh"
relay_preamble unshare
relay_need_py kubernetes

plan_auto
relay_init
make_user alice
make_user bob
make_user carol
URL=http://127.0.0.1:$RELAY_PORT

# --- start-up checks -----------------------------------------------------
run "$RELAYD" --config "$RELAY_CONF" --check
like "$rc:$out" "^0:.*relay configuration OK" "--check accepts the policy" || diag "$err"
# A network namespace of its own may let users bind any port: refused there.
run unshare -n sh -c "sysctl -qw net.ipv4.ip_unprivileged_port_start=0 &&
	'$RELAYD' --config '$RELAY_CONF' --check"
like "$rc:$err" "^1:.*port $RELAY_PORT is not privileged here: net.ipv4.ip_unprivileged_port_start = 0" \
	"it refuses to serve where an unprivileged user could bind its port" || diag "$out"
run setpriv --reuid="$(id -u "$alice")" --regid="$(id -g "$alice")" --clear-groups \
	"$RELAYD" --config "$RELAY_CONF"
like "$rc:$err" "^1:.*must start as root" "a non-root start is refused with a reason"

relay_start
ok $? "the daemon starts (control.sock answers)" || exit 1
st=/proc/$RELAY_PID/status
is "$(awk '/^Uid:/{print $2,$3,$4,$5} /^Gid:/{print $2,$3,$4,$5}' "$st" | tr '\n' ' ')" \
	"$RELAY_UID $RELAY_UID $RELAY_UID $RELAY_UID $(id -g "$RELAY_USER") $(id -g "$RELAY_USER") $(id -g "$RELAY_USER") $(id -g "$RELAY_USER") " \
	"it runs as relay.run_as: every uid and gid"
is "$(awk '/^Groups:/{print NF-1}' "$st")" 0 "... with no supplementary group"
is "$(awk '/^Cap(Inh|Prm|Eff|Bnd|Amb):/{print $2}' "$st" | sort -u)" 0000000000000000 \
	"... no capability in any set (effective, permitted, inheritable, bounding, ambient)"
is "$(awk '/^NoNewPrivs:/{print $2}' "$st")" 1 "... no_new_privs"
is "$(stat -c %u "/proc/$RELAY_PID/mem")" 0 "... and not dumpable (its /proc files stay root's)"
listen=$(ss -Hltn "sport = :$RELAY_PORT" | awk '{print $4}' | sort | tr '\n' ' ')
is "$listen" "127.0.0.1:$RELAY_PORT [::1]:$RELAY_PORT " "it listens on 127.0.0.1 and [::1] only"
is "$(stat -c '%a %U' "$RELAY_RUNDIR/control.sock") $(stat -c '%a %U' "$RELAY_RUNDIR/user.sock")" \
	"600 root 666 root" "control.sock is root's only, user.sock anyone's"

# --- one kubeconfig for everybody, without credentials ----------------------
is "$(stat -c %a "$RELAY_KUBECONFIG")" 644 "kubehsm kubeconfig --relay --write: a file every user can read"
is "$(grep -E '^ *(server|current-context):' "$RELAY_KUBECONFIG" | tr -s ' ' | tr '\n' ' ')" \
	" server: http://127.0.0.1:$RELAY_PORT current-context: test " "... pointing at the relay's port"
grep -Eqi 'user|token|cert|key|exec' <(grep -v '^#' "$RELAY_KUBECONFIG")
is "$?" 1 "... with no user entry and no credential of any kind"
run "$KUBEHSM" kubeconfig --relay --config "$RELAY_CONF" --cluster nope
like "$rc:$err" "^1:kubehsm: kubeconfig: no relay cluster named 'nope'" "an unknown --cluster is an error"

# --- two users, one port, each as themselves -----------------------------
for u in "$alice" "$bob"; do
	relay_mint "$u" || { echo "Bail out! mint $u"; exit 1; }
	run relay_deliver "$u"
	is "$rc" 0 "a session for $u is delivered" || diag "$err"
done
run relay_ctl list
is "$(awk '{print $2}' <<<"$out" | sort | tr '\n' ' ')" "$(printf '%s\n' "$alice" "$bob" | sort | tr '\n' ' ')" \
	"the relay lists both sessions"
for K in "${KUBECTLS[@]}"; do
	v=${K##*kubectl.}
	for u in "$alice" "$bob"; do
		RELAY_KUBECTL=$K relay_kc "$u" get --raw /kh-whoami
		is "$rc:$out" "0:$(relay_serial "$u") CN=$u,O=dev" "kubectl $v as $u: served with $u's session" ||
			diag "$err"
	done
done
relay_kc "$alice" get pods -o name
is "$rc:$out" "0:pod/kh-test-pod" "kubectl get pods through the relay"
sed "s|127.0.0.1:$RELAY_PORT|[::1]:$RELAY_PORT|" "$RELAY_KUBECONFIG" >"$KH_TMP/v6.kubeconfig"
chmod 0644 "$KH_TMP/v6.kubeconfig"
run setpriv --reuid="$(id -u "$bob")" --regid="$(id -g "$bob")" --init-groups --reset-env \
	"$RELAY_KUBECTL" --kubeconfig "$KH_TMP/v6.kubeconfig" get --raw /kh-whoami
is "$rc:$out" "0:$(relay_serial "$bob") CN=$bob,O=dev" "over [::1] too" || diag "$err"
run setpriv --reuid="$(id -u "$alice")" --regid="$(id -g "$alice")" --init-groups --reset-env \
	curl -sS --max-time 30 "$URL/kh-whoami"
is "$rc:$out" "0:$(relay_serial "$alice") CN=$alice,O=dev" "curl as $alice, no credentials" || diag "$err"
cat >"$KH_TMP/py.py" <<EOF
import sys
from kubernetes import client, config
config.load_kube_config(config_file="$RELAY_KUBECONFIG")
api = client.CoreV1Api()
print(",".join(p.metadata.name for p in api.list_namespaced_pod("default").items))
out = api.api_client.call_api("/kh-whoami", "GET", response_type="str", _preload_content=False)
print(out[0].data.decode().strip())
EOF
run setpriv --reuid="$(id -u "$bob")" --regid="$(id -g "$bob")" --init-groups --reset-env \
	$PY "$KH_TMP/py.py"
is "$rc:$out" "0:kh-test-pod
$(relay_serial "$bob") CN=$bob,O=dev" "the Python client as $bob" || diag "$err"

# --- no session: a 401 that says what to do --------------------------------
relay_kc "$carol" get --raw /version
like "$rc:$err" "^1:Warning: kubehsm-relayd: uid $(id -u "$carol") has no kube session for cluster test; log in to this host.*
error: You must be logged in to the server \(kubehsm-relayd: uid $(id -u "$carol") has no kube session for cluster test; log in to this host" \
	"a user without a session gets a 401 whose message kubectl prints (as a warning too)"
for K in "${KUBECTLS[0]}" "${KUBECTLS[-1]}"; do
	RELAY_KUBECTL=$K relay_kc "$carol" get pods
	like "$rc:$err" "^1:Warning: kubehsm-relayd: uid $(id -u "$carol") has no kube session for cluster test; log in to this host" \
		"... also for kubectl ${K##*kubectl.} get pods, whose discovery drops the 401's body"
done
run setpriv --reuid="$(id -u "$carol")" --regid="$(id -g "$carol")" --init-groups --reset-env \
	curl -s --max-time 30 -o /dev/null -w '%{http_code} %{content_type}' "$URL/version"
is "$out" "401 application/json" "... a 401 with a JSON Status (curl)"
relay_kc root get --raw /version
like "$rc:$err" "^1:.*root \(uid 0\) has no kube session for cluster test" "root gets a 401 too"

# --- forget: the next request is told the session ended --------------------
run relay_ctl forget "$(id -u "$alice")" '*' logout
is "$rc:$out" "0:sessions=1 connections=0" "the relay forgets $alice's session"
relay_kc "$alice" get --raw /kh-whoami
like "$rc:$err" "^1:.*the kube session of uid $(id -u "$alice") for cluster test ended at .* \(logout\); log in to this host again" \
	"$alice's next request gets a 401 that says the session ended"
relay_kc "$bob" get --raw /kh-whoami
is "$rc:$out" "0:$(relay_serial "$bob") CN=$bob,O=dev" "$bob is still served"
run setpriv --reuid="$(id -u "$bob")" --regid="$(id -g "$bob")" --init-groups --reset-env \
	"$RELAY_CLIENT" "$RELAY_RUNDIR" forget "$(id -u "$alice")"
like "$rc:$err" "^1:.*Permission denied" "a user cannot reach control.sock"
run setpriv --reuid="$(id -u "$bob")" --regid="$(id -g "$bob")" --init-groups --reset-env \
	"$RELAY_CLIENT" "$RELAY_RUNDIR" list --user
is "$rc:$(awk '{print $1, $2}' <<<"$out")" "0:$(id -u "$bob") $bob" "user.sock lists only the caller's own session"
run setpriv --reuid="$(id -u "$bob")" --regid="$(id -g "$bob")" --init-groups --reset-env \
	"$RELAY_CLIENT" "$RELAY_RUNDIR" forget-self
is "$rc:$out" "0:sessions=1 connections=0" "through user.sock a user ends their own session"
relay_kc "$bob" get --raw /kh-whoami
like "$rc:$err" "^1:.*ended at .* \(logout\)" "... and is told so at the next request"

# --- started from a root shell, it keeps none of that shell's keys ---------
# The kernel gives no view of another process's keyrings, and a reference
# count cannot tell: files a process opened keep its old credentials (and
# with them the old keyring) alive, without any access.  So: the relay
# says which session keyring it joined, and root checks in /proc/keys that
# it is a fresh anonymous one, not the starter's.
relay_stop
sess=khrootsess$$
# keyctl session forks and waits: join, then exec, and say which keyring.
cat >"$KH_TMP/joinsess.py" <<'EOF'
import ctypes, os, sys
k = ctypes.CDLL("libkeyutils.so.1")
k.keyctl_join_session_keyring.argtypes = [ctypes.c_char_p]
serial = k.keyctl_join_session_keyring(sys.argv[1].encode())
if serial < 0:
    sys.exit("cannot join a session keyring")
print("starter's session keyring %d" % serial, file=sys.stderr, flush=True)
os.execv(sys.argv[2], sys.argv[2:])
EOF
RELAY_WRAP="/usr/bin/python3 $KH_TMP/joinsess.py $sess" relay_start
ok $? "the relay starts from a root shell with a session keyring of its own ($sess)"
starter=$(sed -n "s/^starter's session keyring //p" "$KH_TMP/relayd.log" | tail -1)
fresh=$(sed -n 's/.*: session keyring \([0-9]*\): a fresh one.*/\1/p' "$KH_TMP/relayd.log" | tail -1)
isnt "$fresh" "$starter" "... and joins another before it serves ($starter -> $fresh)"
is "$(grep "^$(printf %08x "${fresh:-0}") " /proc/keys | awk '{print $9}')" "_ses:" \
	"... a fresh anonymous session keyring"
run relay_deliver "$alice"
relay_kc "$alice" get --raw /kh-whoami
is "$rc:$out" "0:$(relay_serial "$alice") CN=$alice,O=dev" "... and serves as before" || diag "$err"

# --- an API server by name, and one whose certificate names another host -------
relay_stop
is "$RELAY_STATUS" 0 "SIGTERM stops the daemon cleanly"
P2=$(free_privileged_port)
P3=$(free_privileged_port)
while [ "$P3" = "$P2" ]; do P3=$(free_privileged_port); done
relay_policy clusters=", { name = \"byname\"; listen = $P2; server = \"https://localhost:${KUBEAPI_URL##*:}\";
	ca_file = \"$KUBEAPI_CA\"; }, { name = \"wrongname\"; listen = $P3; server = \"$KUBEAPI_URL\";
	ca_file = \"$KUBEAPI_CA\"; server_name = \"api.example.org\"; }"
relay_start
ok $? "the relay starts with three clusters"
run relay_deliver "$alice"
run setpriv --reuid="$(id -u "$alice")" --regid="$(id -g "$alice")" --init-groups --reset-env \
	curl -sS --max-time 30 "http://127.0.0.1:$P2/kh-whoami"
is "$rc:$out" "0:$(relay_serial "$alice") CN=$alice,O=dev" \
	"a cluster whose server is a host name (resolved by the relay, checked against the certificate)" ||
	diag "$err"
run setpriv --reuid="$(id -u "$alice")" --regid="$(id -g "$alice")" --init-groups --reset-env \
	curl -s --max-time 30 -w ' %{http_code}' "http://127.0.0.1:$P3/kh-whoami"
like "$rc:$(tr -d '\n' <<<"$out")" \
	'^0:.*"message":"kubehsm-relayd: cluster wrongname: TLS with [^"]*certificate verify failed \(hostname mismatch\)".* 503$' \
	"a server certificate that does not name server_name: a 503 that says so, no request sent"
relay_stop
is "$RELAY_STATUS" 0 "... and stops cleanly again"

# --- down: nobody else can take the port ---------------------------------
for addr in 127.0.0.1 ::1; do
	run setpriv --reuid="$(id -u "$carol")" --regid="$(id -g "$carol")" --init-groups --reset-env \
		$PY -c "import socket,sys; s=socket.socket(socket.AF_INET6 if ':' in '$addr' else socket.AF_INET); s.bind(('$addr', $RELAY_PORT)); s.listen(); print('bound')"
	is "$rc:$(tail -1 <<<"$err")" "1:PermissionError: [Errno 13] Permission denied" \
		"while the relay is down, a user cannot bind $addr:$RELAY_PORT"
done

done_testing
