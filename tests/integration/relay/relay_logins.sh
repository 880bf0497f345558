#!/bin/bash
# relay_logins: session.deliver = "relay" behind a real sshd login.
#
# Real users log in over a real OpenSSH sshd (keyboard-interactive, the
# token PIN once) through the build tree's pam_kubehsm with the shipped
# stack; the login hands the session key to a real kubehsm-relayd over its
# control socket and stores the user's record without it.  Then: kubectl
# 1.27 and 1.33 inside the login reach the API server through the relay's
# credential-less kubeconfig as the user, with the login's session
# certificate; kubehsm exec says to use the relay; no process of the user
# holds any form of the key (PEM, DER scalar, OpenSSL's in-memory form:
# every process of the uid scanned, with the relay itself as the positive
# control) and no key the user can read holds it; two users are served as
# themselves side by side; the relay's audit log names the sshd login (PAM
# service, remote host) each request came from.  The last logout makes the relay forget the
# session and close the user's open watch; `kubehsm logout` and
# `kubehsm admin revoke` do the same through user.sock and control.sock.
. "$KH_SRCDIR/tests/integration/logins/logins_common.sh"
. "$KH_SRCDIR/tests/harness/relay.sh"
relay_preamble ps

plan_auto
token_user alice
token_user bob
# The relay's endpoint has the streaming backend (a watch to revoke).
relay_backend_start || _logins_bail "kubeback.py"
kubeapi_start "$PKI_DIR/issuerca.pem" relay || _logins_bail "nginx (relay) did not start"
relay_setup "$CONF"
# identity.uid: the session certificates name the bastion login (#32).
uid_policy() {
	sed -i 's|identity = { username = "%u";|identity = { username = "%u"; uid = "%h:%u:%s";|' \
		"$RELAY_CONF" && grep -q 'uid = "%h:%u:%s"' "$RELAY_CONF"
}
relay_policy deliver=relay && uid_policy || _logins_bail "relay policy"
run "$KUBEHSM" config check "$CONF"
like "$out" 'deliver = "relay";' "config check shows session.deliver = \"relay\"" || diag "$err"
relay_start || _logins_bail "kubehsm-relayd did not start"
logins_pam "$SSHD_SERVICE" < <(logins_kubehsm_stack "$CONF" keyinit)
sshd_start
KC=$RELAY_KUBECONFIG
# The users' commands find the policy (kubehsm logout asks it for the relay).
export KUBEHSM_CONFIG=$CONF

# uid_of_dn DN: the UID attribute as nginx prints an unknown OID in
# $ssl_client_s_dn (RFC 2253: "#" and the DER, here a UTF8String, tag 0C).
uid_of_dn() {
	local hex
	hex=$(sed -n 's/.*1\.3\.6\.1\.4\.1\.57683\.2=#0C\([0-9A-Fa-f]*\).*/\1/p' <<<"$1")
	# The first byte is the length (short form: the value is under 128
	# bytes); python3 rather than xxd, which Debian 13 no longer ships
	# with the base system.
	[ -n "$hex" ] && python3 -c 'import sys; sys.stdout.write(bytes.fromhex(sys.argv[1]).decode())' "${hex:2}"
}

# relay_session LOGIN USER WHAT: inside LOGIN, kubectl 1.27 and 1.33 reach the
# API server through the relay as USER with the login's session certificate,
# whose UID attribute (identity.uid "%h:%u:%s") the API server reads.
relay_session() {
	local serial k
	serial=$(session_serial "$2")
	for k in "$K127" "$K133"; do
		login_run "$1" "$k --kubeconfig $KC get --raw /kh-whoami"
		like "$rc:$out" "^0:$serial 1\\.3\\.6\\.1\\.4\\.1\\.57683\\.2=#0C[0-9A-F]+,O=dev,CN=$2\$" \
			"$3: kubectl ${k##*kubectl.} through the relay, as $2 with the login's certificate" ||
			diag "record serial '$serial' err=$err"
		is "$(uid_of_dn "$out")" "$(hostname):$2:${serial,,}" \
			"$3: the API server reads the UID host:account:serial from it" ||
			diag "the API server saw: $out"
	done
}

# --- a login delivers to the relay; the user keeps no key ---------------------
ssh_argv "$alice" kbd
LOGIN_PIN=$PIN login_open a1 "${SSH_ARGV[@]}"
ok $? "$alice logs in over sshd (keyboard-interactive, the token PIN once)" ||
	diag "$(login_transcript a1)"
run relay_ctl list
like "$out" "^$(id -u "$alice") $alice - " "the login handed $alice's session to the relay"
relay_session a1 "$alice" "$alice's login"
line=$(jq -c --argjson u "$(id -u "$alice")" 'select(.uid == $u)' "$RELAY_AUDIT" | tail -1)
like "$(jq -r '"\(.user) \(.method) \(.path) \(.status) \(.origin.service) \(.origin.rhost)"' <<<"$line")" \
	"^$alice GET /kh-whoami 200 $SSHD_SERVICE (127\\.0\\.0\\.1|localhost)\$" \
	"the relay's audit line names $alice's sshd login: the PAM service and the remote host" ||
	diag "$line"
is "$(jq -r .kubeUid <<<"$line")" "$(hostname):$alice:$(session_serial "$alice" | tr A-F a-f)" \
	"... and the UID the API server saw" || diag "$line"
like "$(jq -r '"\(.pid) \(.exe) \(.cmdline)"' <<<"$line")" \
	"^[0-9]+ [^ ]*/kubectl\\.1\\.33 [^ ]*kubectl\\.1\\.33 --kubeconfig $KC get --raw /kh-whoami\$" \
	"... and the program: pid, executable and command line of $alice's kubectl" || diag "$line"
diag "the relay's audit line: $line"
login_run a1 "$K133 --kubeconfig $KC get --raw /kh-whoami"
diag "the API server (nginx) saw: $out; its UID attribute: $(uid_of_dn "$out")"
login_run a1 "$KUBEHSM status"
like "$out" "UID: +$(hostname):$alice:" "kubehsm status shows the session's UID" || diag "$out"
rec=$(record "$alice")
is "$(jq -r '.key' <<<"$rec")" "" "$alice's record carries no key"
isnt "$(jq -r '.chain' <<<"$rec")" "" "... only the session certificate chain"
login_run a1 "$KUBEHSM status"
like "$out" "Key: +held by kubehsm-relayd only" "kubehsm status says the relay holds the key"
login_run a1 "KUBERNETES_EXEC_INFO='$V1' $KUBEHSM exec"
like "$rc:${out:-<none>}:$err" "^1:<none>:kubehsm: your kube session's key is held by kubehsm-relayd.*KUBECONFIG=" \
	"kubehsm exec hands out nothing and says to use the relay"

# The key as the relay keeps it, in each form a process could hold it.
keyline=$(relay_keys | awk -v u="$(id -u "$alice")" '$1 == u {print $2}')
isnt "$keyline" "" "control: the relay's keyring store holds $alice's key"
printf -- '-----BEGIN PRIVATE KEY-----\n%s\n-----END PRIVATE KEY-----\n' \
	"$(fold -w 64 <<<"$keyline")" >"$KH_TMP/alice.key"
scalar=$(openssl pkey -in "$KH_TMP/alice.key" -noout -text 2>/dev/null |
	awk '/^priv:/{f=1; next} /^pub:/{f=0} f' | tr -d ' :\n')
scalar=$(printf '%064s' "$scalar" | tr ' ' 0 | tail -c 64)
le=$(sed 's/../& /g' <<<"$scalar" | tr ' ' '\n' | grep . | tac | tr -d '\n')
NEEDLES=("${keyline:48:40}" "hex:$scalar" "hex:$le")
is "${#scalar}" 64 "control: the P-256 scalar of the key (32 bytes)"
found=0
for n in "${NEEDLES[@]}"; do
	c=$(/usr/bin/python3 "$KH_SRCDIR/tests/harness/memscan.py" "$RELAY_PID" "$n")
	found=$((found + ${c:-0}))
done
[ "$found" -gt 0 ]
ok $? "control: the scan finds the key in the relay's own memory ($found hits)"
# A watch keeps a kubectl running (and holding its connection) while we look.
login_run a1 "$K133 --kubeconfig $KC get --raw /kh-whoami >/dev/null;
	$K133 --kubeconfig $KC get ns -w >/dev/null 2>&1 </dev/null & sleep 1"
hits="" pids=$(ps -u "$alice" -o pid= | tr -s ' \n' ' ')
for p in $pids; do
	for n in "${NEEDLES[@]}"; do
		c=$(/usr/bin/python3 "$KH_SRCDIR/tests/harness/memscan.py" "$p" "$n" 2>/dev/null)
		[ "${c:-0}" = 0 ] || hits="$hits $p($(tr '\0' ' ' </proc/$p/cmdline | cut -c1-40)):$n"
	done
done
n_pids=$(wc -w <<<"$pids")
is "$hits" "" "no process of $alice ($n_pids scanned: sshd's session child, the shell, a kubectl watch) holds the key in any form"
is "$(ps -u "$alice" -o comm= | grep -c '^kubectl')" 1 "... a running kubectl among them"
keys=$(as_user "$alice" sh -c 'for k in $(keyctl rlist @u 2>/dev/null) $(keyctl rlist @s 2>/dev/null); do
	keyctl pipe "$k" 2>/dev/null; done' 2>/dev/null | grep -c 'PRIVATE KEY' || true)
is "$keys" 0 "no key $alice can read in her keyrings holds a private key"

# --- two users on one port, each as themselves --------------------------------
ssh_argv "$bob" kbd
LOGIN_PIN=$PIN login_open b1 "${SSH_ARGV[@]}"
ok $? "$bob logs in over sshd too" || diag "$(login_transcript b1)"
relay_session b1 "$bob" "$bob's login"
relay_session a1 "$alice" "$alice's login, with $bob's open"

# --- the last logout ends the relay's session and its watch -----------------
timeout 120 setpriv --reuid="$(id -u "$alice")" --regid="$(id -g "$alice")" --init-groups \
	--reset-env curl -sSN "http://127.0.0.1:$RELAY_PORT/api/v1/namespaces?watch=1" \
	</dev/null >"$KH_TMP/w.a" 2>"$KH_TMP/w.a.err" &
WPID=$!
for i in $(seq 1 100); do [ "$(cat "$KH_TMP/w.a" 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.1; done
login_close a1
is "$rc" 0 "$alice logs out (her only login)"
for i in $(seq 1 100); do kill -0 "$WPID" 2>/dev/null || break; sleep 0.05; done
wait "$WPID"
is "$?:$(cat "$KH_TMP/w.a.err")" "18:curl: (18) transfer closed with outstanding read data remaining" \
	"the logout closed $alice's open watch"
run relay_ctl list
is "$(awk '{print $2}' <<<"$out")" "$bob" "the relay forgot $alice's session; $bob's stays"
relay_kc "$alice" get --raw /kh-whoami
like "$rc:$err" "^1:.*ended at .* \(logout\)" "$alice's next request gets a 401: ended at logout"
relay_session b1 "$bob" "$bob, after $alice's logout"

# --- kubehsm logout (user.sock) and admin revoke (control.sock) ---------------
login_run b1 "KUBEHSM_CONFIG=$CONF $KUBEHSM logout"
is "$rc:$out" "0:Kube session ended." "kubehsm logout inside $bob's login"
run relay_ctl list
is "$out" "" "... the relay forgot $bob's session too"
login_run b1 "$K133 --kubeconfig $KC get --raw /kh-whoami"
like "$rc:$err" "^1:.*ended at .* \(logout\)" "... and his next request gets a 401"
login_close b1
LOGIN_PIN=$PIN login_open b2 "${SSH_ARGV[@]}"
ok $? "$bob logs in again" || diag "$(login_transcript b2)"
relay_session b2 "$bob" "$bob's new login"
run env KUBEHSM_CONFIG="$CONF" "$KUBEHSM" admin revoke "$bob"
like "$rc:$out" "^0:kubehsm-relayd forgot the session and closed [0-9]+ connection" \
	"kubehsm admin revoke makes the relay forget $bob's session" || diag "$err"
login_run b2 "$K133 --kubeconfig $KC get --raw /kh-whoami"
like "$rc:$err" "^1:.*ended at .* \(revoked\)" "... his next request gets a 401: revoked"
login_close b2

# --- deliver = "both": the record keeps the key, the relay serves too ---------
relay_policy deliver=both && uid_policy
LOGIN_PIN=$PIN login_open b3 "${SSH_ARGV[@]}"
ok $? "$bob logs in with session.deliver = \"both\"" || diag "$(login_transcript b3)"
relay_session b3 "$bob" "deliver both"
isnt "$(record "$bob" | jq -r '.key')" "" "... his record carries the key too"
login_run b3 "KUBERNETES_EXEC_INFO='$V1' $KUBEHSM exec | jq -r .kind"
is "$rc:$out" "0:ExecCredential" "... and kubehsm exec hands it out"
# Exec delivery: kubectl runs kubehsm exec, the API server reads the same UID.
KCX=$KH_TMP/kubeconfig-exec
{ printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: %s\n    certificate-authority: %s\n' \
	"$KUBEAPI_URL" "$KUBEAPI_CA"
  printf 'contexts:\n- name: t\n  context: {cluster: t, user: me}\ncurrent-context: t\n'
  "$KUBEHSM" kubeconfig --name me; } >"$KCX"
chmod 644 "$KCX"
login_run b3 "$K133 --kubeconfig $KCX get --raw /kh-whoami"
is "$rc:$(uid_of_dn "$out")" "0:$(hostname):$bob:$(session_serial "$bob" | tr A-F a-f)" \
	"exec delivery: the API server reads the same UID from the certificate kubehsm exec hands out" ||
	diag "$out $err"
login_close b3

logins_sanitizer_reports
done_testing
