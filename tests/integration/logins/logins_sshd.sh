#!/bin/bash
# logins_sshd: pam_kubehsm behind a real OpenSSH sshd on loopback, the stack
# of pam/examples/sshd, real SoftHSM tokens, kubectl 1.27 and 1.33 against
# the nginx mTLS stand-in.  Keyboard-interactive (auth runs in a forked
# child of sshd's monitor, with an empty environment), password auth (the
# PIN typed at the password prompt), publickey,keyboard-interactive; two
# concurrent logins of one user closing one by one; a tmux server outliving
# the login that started it; a wrong PIN costs one token C_Login.
. "$KH_SRCDIR/tests/integration/logins/logins_common.sh"

token_user alice
plain_user bob pw-bob-$$
ssh_user_key "$alice"
logins_pam "$SSHD_SERVICE" < <(logins_kubehsm_stack "$CONF" keyinit)
sshd_start
diag "sshd (PAM service $SSHD_SERVICE) on 127.0.0.1 ports kbd $SSHD_PORT_KBD," \
	"password $SSHD_PORT_PASSWORD, publickey+kbd $SSHD_PORT_PUBKBD"

# record_perm USER: the permission mask of USER's record (keyctl rdescribe).
record_perm() {
	local id
	id=$(record_id "$1") && as_user "$1" keyctl rdescribe "$id" 2>/dev/null | cut -d';' -f4
}

# opened LOGIN WHAT C_LOGINS-BEFORE: the checks right after a login opens.
opened() {
	is "$(($(shim_logins) - $3))" 1 "$2: the PIN cost one token C_Login (in sshd's auth child too)"
	kube_session "$1" "$alice" "$2"
	is "$(record_perm "$alice")" 001b0000 \
		"$2: the record is the user's: view/read/search/link for the user, nothing for possessor, group, other"
	no_handoff "$alice" "$2"
}

# --- keyboard-interactive, and a second concurrent login ---------------------
ssh_argv "$alice" kbd
before_login "$alice"
LOGIN_PIN=$PIN login_open a1 "${SSH_ARGV[@]}"
ok $? "sshd keyboard-interactive: $alice logs in with the token PIN" || diag "$(login_transcript a1)"
opened a1 "sshd keyboard-interactive" "$c0"
is "$(logins "$alice")" 1 "sshd keyboard-interactive: the record counts one login"
# The module's own line from sshd's auth child, through tests/probes/logcap
# preloaded into sshd: PAM ran the test's service (PAMServiceName or the
# program name, tests/harness/logins.sh), and the preload survived sshd's
# exec of its per-connection program (sshd-session from OpenSSH 9.8 on).
grep -qF "pam_kubehsm($SSHD_SERVICE:auth): user '$alice': authenticated with token" "$KH_MODLOG"
ok $? "sshd keyboard-interactive: the module logged from the auth child, under PAM service $SSHD_SERVICE"

# A tmux server started in this login outlives it.
TMUXD=$LOGINS_DIR/tmux
install -d -m 0700 -o "$alice" "$TMUXD"
login_run a1 "tmux -L kh$$ new-session -d -s kh"
is "$rc" 0 "a tmux server starts inside login 1" || diag "$err"

before_login "$alice"
LOGIN_PIN=$PIN login_open a2 "${SSH_ARGV[@]}"
ok $? "a second, concurrent ssh login of $alice" || diag "$(login_transcript a2)"
is "$(logins "$alice")" 2 "two open logins: the record counts 2"
opened a2 "concurrent login 2" "$c0"

# tmux_run CMD: run CMD in a new window of the tmux server (its processes
# carry login 1's session keyring); $out $err $rc.
tmux_run() {
	local f=$TMUXD/w$RANDOM
	printf '%s\n' "$1" >"$f.sh"
	chmod 0644 "$f.sh"
	run as_user_inherit "$alice" tmux -L "kh$$" new-window -d \
		"sh $f.sh </dev/null >$f.out 2>$f.err; echo \$? >$f.rc"
	[ "$rc" = 0 ] || { out=; err="tmux new-window: $err"; return 0; }
	for _ in $(seq 1 600); do [ -s "$f.rc" ] && break; sleep 0.1; done
	out=$(cat "$f.out" 2>/dev/null); err=$(cat "$f.err" 2>/dev/null); rc=$(cat "$f.rc" 2>/dev/null)
	rc=${rc:-timeout}
}

login_close a1
is "$rc" 0 "login 1 ends (ssh exit status 0)"
is "$(logins "$alice")" 1 "after login 1 ends the record counts 1"
login_run a2 "$KUBEHSM status"
like "$out" "^Identity: *$alice\$" "login 2 still has its kube session"
login_run a2 "$K133 --kubeconfig $KH_TMP/kubeconfig-$alice get --raw /kh-whoami"
like "$out" "^[0-9A-F]+ O=dev,CN=$alice\$" "kubectl 1.33 still works in login 2" || diag "$err"

tmux_run "keyctl rdescribe @s"
like "$rc:$err" "^[1-9][0-9]*:.*revoked" \
	"control: pam_keyinit revoked login 1's session keyring, which tmux still carries ($err)"
tmux_run "$K127 --kubeconfig $KH_TMP/kubeconfig-$alice get --raw /kh-whoami"
if [ "$rc" = 0 ] && grep -Eq "^[0-9A-F]+ O=dev,CN=$alice\$" <<<"$out"; then
	pass "kubectl 1.27 inside tmux (started by the ended login 1) still works: scope user"
else
	fail "kubectl 1.27 inside tmux (started by the ended login 1) still works: scope user"
	diag "rc=$rc out='$out' err='$err'"
fi

login_close a2
is "$rc" 0 "login 2 ends (ssh exit status 0)"
ended "$alice" "the last ssh login ended"
tmux_run "env KUBERNETES_EXEC_INFO='$V1' $KUBEHSM exec"
if [ "$rc" != 0 ] && [ "$rc" != timeout ] && [ -z "$out" ] && grep -Eq '^kubehsm: .*(ended|revoked|no kube session)' <<<"$err"; then
	pass "inside tmux after the last logout kubehsm exec fails clearly: $err"
else
	fail "inside tmux after the last logout kubehsm exec fails clearly"
	diag "rc=$rc out='${out:0:80}' err='$err'"
fi
as_user "$alice" tmux -L "kh$$" kill-server >/dev/null 2>&1

# --- password authentication: the PIN at sshd's password prompt --------------
ssh_argv "$alice" password
before_login "$alice"
LOGIN_PASSWORD=$PIN login_open p1 "${SSH_ARGV[@]}"
ok $? "sshd password auth: $alice types the PIN at the password prompt" || diag "$(login_transcript p1)"
opened p1 "sshd password auth" "$c0"
login_close p1
is "$rc" 0 "sshd password auth: the login ends (exit status 0)"
ended "$alice" "sshd password auth, logout"

# --- publickey,keyboard-interactive -------------------------------------------
ssh_argv "$alice" pubkbd
nokey=("${SSH_ARGV[@]}")
for i in "${!nokey[@]}"; do [ "${nokey[$i]}" = -i ] && nokey[i+1]=/dev/null; done
c0=$(shim_logins)
LOGIN_PIN=$PIN login_once "${nokey[@]}"
if [ "$rc" = 201 ] && [ "$(shim_logins)" = "$c0" ] && ! grep -q 'PIN for token' "$LOGIN_ONCE_LOG"; then
	pass "publickey,keyboard-interactive: a client without the key never gets a PIN prompt (no C_Login)"
else
	fail "publickey,keyboard-interactive: a client without the key never gets a PIN prompt"
	diag "rc=$rc C_Login $c0 -> $(shim_logins)" "$(tr -d '\r' <"$LOGIN_ONCE_LOG" | tail -5)"
fi
before_login "$alice"
LOGIN_PIN=$PIN login_open k1 "${SSH_ARGV[@]}"
ok $? "sshd publickey,keyboard-interactive: key, then the token PIN" || diag "$(login_transcript k1)"
opened k1 "sshd publickey,keyboard-interactive" "$c0"
login_close k1
is "$rc" 0 "sshd publickey,keyboard-interactive: the login ends (exit status 0)"
ended "$alice" "sshd publickey,keyboard-interactive, logout"

# --- a user without a token: the password, over keyboard-interactive ---------
ssh_argv "$bob" kbd
c0=$(shim_logins)
LOGIN_PASSWORD=pw-bob-$$ login_open b1 "${SSH_ARGV[@]}"
ok $? "sshd keyboard-interactive: $bob (no token) logs in with his password" ||
	diag "$(login_transcript b1 8)"
login_run b1 "id -un; $KUBEHSM status"
if [ "$rc" = 1 ] && [ "$(head -n 1 <<<"$out")" = "$bob" ] && grep -q '^No kube session' <<<"$out"; then
	pass "$bob's login runs as $bob, without a kube session"
else
	fail "$bob's login runs as $bob, without a kube session"; diag "rc=$rc $out $err"
fi
is "$(shim_logins)" "$c0" "$bob has no token: no C_Login"
login_close b1
is "$rc" 0 "$bob's login ends (exit status 0)"

# --- a wrong PIN costs exactly one token attempt per authentication ----------
# The client gives up after one authentication (were the stack to ask for a
# password after the wrong PIN, it would get a wrong one).  pam_faillock
# counts both failures; its default limit (3) is not reached.
ssh_argv "$alice" kbd
c0=$(shim_logins)
LOGIN_PIN=0000 LOGIN_PASSWORD=not-the-password login_once "${SSH_ARGV[@]}"
is "$rc:$(($(shim_logins) - c0))" "201:1" \
	"wrong PIN over keyboard-interactive (NumberOfPasswordPrompts=1): refused, one C_Login" ||
	diag "$(tr -d '\r' <"$LOGIN_ONCE_LOG" | tail -5)"
ssh_argv "$alice" password
c0=$(shim_logins)
LOGIN_PASSWORD=0000 login_once "${SSH_ARGV[@]}"
is "$rc:$(($(shim_logins) - c0))" "201:1" \
	"wrong PIN over password auth (NumberOfPasswordPrompts=1): refused, one C_Login" ||
	diag "$(tr -d '\r' <"$LOGIN_ONCE_LOG" | tail -5)"
is "$(logins "$alice")" none "no record after the refused logins"

logins_sanitizer_reports
done_testing
