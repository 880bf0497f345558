#!/bin/bash
# relay_revoke_hostile: the target of a revocation fights it, and loses.
#
# session.deliver = "relay" behind a real sshd login (keyboard-interactive,
# the token PIN once) and a real kubehsm-relayd.  While root ends the
# user's session, the user runs a loop that sends every process of theirs
# SIGKILL or SIGSTOP (kill(-1, ...)): a step of the revocation that ran as
# the user, or waited on a process of theirs, would die or hang, and the
# relay would go on serving them.  Each time, 3 s after root began (the
# stated bound), with the loop still running:
#   - `kubehsm admin revoke` against a SIGKILL loop and a SIGSTOP loop: the
#     relay has forgotten the user's session, root's command succeeded;
#   - the last logout against a SIGKILL loop (which is what ends the login:
#     sshd's monitor then runs close_session): the relay has forgotten it;
# and after the loop, the user's next request through the relay is refused
# with a 401 that says why, and the user's record is gone from the keyring.
. "$KH_SRCDIR/tests/integration/logins/logins_common.sh"
. "$KH_SRCDIR/tests/harness/relay.sh"
relay_preamble

plan_auto
token_user alice
relay_backend_start || _logins_bail "kubeback.py"
kubeapi_start "$PKI_DIR/issuerca.pem" relay || _logins_bail "nginx (relay) did not start"
relay_setup "$CONF"
# revoke_policy true|false: deliver = "relay", session.revoke_on_logout.
revoke_policy() {
	relay_policy deliver=relay || _logins_bail "relay policy"
	sed -i "s/revoke_on_logout = true;/revoke_on_logout = $1;/" "$CONF"
	grep -q "revoke_on_logout = $1;" "$CONF" || _logins_bail "revoke_on_logout = $1"
}
revoke_policy false
relay_start || _logins_bail "kubehsm-relayd did not start"
logins_pam "$SSHD_SERVICE" < <(logins_kubehsm_stack "$CONF" keyinit)
sshd_start
export KUBEHSM_CONFIG=$CONF
AUID=$(id -u "$alice")
ssh_argv "$alice" kbd

# The user's loop: kill(-1, SIG) as fast as it goes — every process of the
# uid but itself.  One loop: two would end each other.
HOSTILE=$KH_TMP/hostile.py
cat >"$HOSTILE" <<'EOF'
import os, signal, sys
sig = getattr(signal, sys.argv[1])
while True:
    try:
        os.kill(-1, sig)
    except OSError:
        pass
EOF
chmod 0644 "$HOSTILE"
HPID=
hostile_start() {
	# setpriv execs python: $! is the loop itself.
	setpriv --reuid="$AUID" --regid="$(id -g "$alice")" --init-groups --reset-env \
		/usr/bin/python3 "$HOSTILE" "$1" </dev/null >/dev/null 2>&1 &
	HPID=$!
	on_exit "kill -KILL $HPID 2>/dev/null"
	sleep 0.3
}
# hostile_stop: the loop ends, and whatever it stopped goes on.
hostile_stop() {
	kill -KILL "$HPID" 2>/dev/null
	wait "$HPID" 2>/dev/null
	[ -z "$(ps -o pid= -p "$HPID")" ] || _logins_bail "the loop ($HPID) outlived SIGKILL"
	local p
	for p in $(pgrep -u "$AUID"); do kill -CONT "$p" 2>/dev/null; done
	return 0
}
served() { relay_ctl list | awk -v u="$AUID" '$1 == u' | grep -c . ; }

# login_served NAME WHAT: NAME logs in, the relay serves alice.
login_served() {
	LOGIN_PIN=$PIN login_open "$1" "${SSH_ARGV[@]}"
	ok $? "$2: $alice logs in over sshd" || diag "$(login_transcript "$1")"
	relay_kc "$alice" get --raw /kh-whoami
	like "$rc:$out" "^0:.*CN=$alice" "$2: the relay serves $alice" || diag "$err"
}

# refused WHY WHAT: alice's next request gets the relay's 401 for WHY, and
# her record is gone from her keyring.
refused() {
	relay_kc "$alice" get --raw /kh-whoami
	like "$rc:$err" "^1:.*ended at .* \\($1\\)" "$2: $alice's next request gets a 401: $1" ||
		diag "out=$out"
	is "$(record_id "$alice")" "" "$2: $alice's record is gone from her keyring"
}

# admin_revoke_against SIG: root revokes while alice's loop sends SIG.
admin_revoke_against() {
	local what="admin revoke against kill(-1, $1)" t0 left
	login_served "r$1" "$what"
	hostile_start "$1"
	t0=$(date +%s%N)
	( "$KUBEHSM" admin revoke "$alice" >"$KH_TMP/revoke.out" 2>"$KH_TMP/revoke.err"
	  echo $? >"$KH_TMP/revoke.rc" ) &
	local rpid=$!
	left=$(( 3000 - ($(date +%s%N) - t0) / 1000000 ))
	[ "$left" -le 0 ] || sleep "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))"
	is "$(served)" 0 "$what: 3 s on, the loop still running, the relay has forgotten $alice's session"
	is "$(cat "$KH_TMP/revoke.rc" 2>/dev/null)" 0 "$what: ... and root's command has succeeded" ||
		diag "$(cat "$KH_TMP/revoke.out" "$KH_TMP/revoke.err" 2>/dev/null)"
	hostile_stop
	wait "$rpid"
	refused revoked "$what"
	login_kill "r$1"
}

# --- kubehsm admin revoke ----------------------------------------------------
# revoke_on_logout = false: the SIGKILL loop ends alice's login too, and
# that must not be what ends her session here.
admin_revoke_against SIGKILL
admin_revoke_against SIGSTOP

# --- the last logout -----------------------------------------------------------
# The SIGKILL loop ends the login itself: sshd's monitor (root) closes the
# PAM session, and the uid's session ends with it.
revoke_policy true
login_served l1 "logout against kill(-1, SIGKILL)"
hostile_start SIGKILL
t0=$(date +%s%N)
left=$(( 3000 - ($(date +%s%N) - t0) / 1000000 ))
sleep "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))"
is "$(served)" 0 "logout against kill(-1, SIGKILL): 3 s on, the relay has forgotten $alice's session"
hostile_stop
refused logout "logout against kill(-1, SIGKILL)"
login_kill l1

logins_sanitizer_reports
done_testing
