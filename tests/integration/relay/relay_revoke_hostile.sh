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
#   - 60 admin revokes in a row against each loop, 3 sshd logouts, and 30
#     close_sessions (tests/probes/pam_driver, the same stack) against each
#     loop: a step the user could signal is over fast, and may slip past
#     by luck once;
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

# logins_gone: every sshd login of alice has ended, its PAM session closed
# by the monitor (the next login is then her only one).
logins_gone() {
	local i
	for i in $(seq 1 200); do
		ps -eo args= | grep -Eq "^[^ ]*sshd[^ ]*: $alice( |@|\$)" || return 0
		sleep 0.05
	done
	_logins_bail "a login of $alice did not end"
}

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
	login_close "r$1"
	logins_gone
}

# --- kubehsm admin revoke ----------------------------------------------------
# The target prepares: keys of their own in their user keyring (most of the
# 200 the quota allows) make any step that looks through it as them — and
# so can be signalled by them — last longer.
relay_as "$alice" sh -c 'for i in $(seq 1 150); do keyctl add user "kh-pad-$i" x @u; done' \
	>/dev/null 2>&1
is "$(as_user "$alice" keyctl rlist @u 2>/dev/null | wc -w)" 150 \
	"$alice holds 150 keys of her own in her user keyring"
# revoke_on_logout = false: the SIGKILL loop ends alice's login too, and
# that must not be what ends her session here.
admin_revoke_against SIGKILL
admin_revoke_against SIGSTOP

# A step run as the user is over in well under a millisecond, so one
# revocation may slip past the loop by luck: many in a row, each of a
# session root hands the relay afresh, must all end it within 3 s.
ATTEMPTS=60
relay_mint "$alice" || _logins_bail "relay_mint"
# attempts SIG: ATTEMPTS admin revokes while the loop sends SIG; how many
# left the relay serving alice 3 s on (stops at the first).
attempts() {
	local i t0 rpid bad=0
	hostile_start "$1"
	for i in $(seq 1 "$ATTEMPTS"); do
		relay_deliver "$alice" >/dev/null 2>&1 && [ "$(served)" = 1 ] ||
			{ diag "attempt $i: the relay did not take the session"; bad=-1; break; }
		t0=$(date +%s%N)
		"$KUBEHSM" admin revoke "$alice" >/dev/null 2>&1 &
		rpid=$!
		while kill -0 "$rpid" 2>/dev/null && [ $((($(date +%s%N) - t0) / 1000000)) -lt 3000 ]; do
			sleep 0.02
		done
		[ "$(served)" = 0 ] || { diag "attempt $i: still served 3 s on"; bad=$i; }
		kill -KILL "$rpid" 2>/dev/null
		wait "$rpid" 2>/dev/null
		[ "$bad" = 0 ] || break
	done
	hostile_stop
	is "$bad" 0 "$ATTEMPTS admin revokes against kill(-1, $1), each of a fresh session: every one ended it in the relay within 3 s"
}
attempts SIGKILL
attempts SIGSTOP

# --- the last logout -----------------------------------------------------------
# The SIGKILL loop ends the login itself: sshd's monitor (root) closes the
# PAM session, and the uid's session ends with it.  A few times over, for
# the same reason as above.
revoke_policy true
for i in 1 2 3; do
	what="logout against kill(-1, SIGKILL), login $i"
	login_served "l$i" "$what"
	hostile_start SIGKILL
	sleep 3
	is "$(served)" 0 "$what: 3 s on, the relay has forgotten $alice's session"
	hostile_stop
	refused logout "$what"
	login_kill "l$i"
	logins_gone
done

# --- close_session, many times ----------------------------------------------
# The same PAM stack driven by root's tests/probes/pam_driver: authenticate
# and open_session (the uid's only login; its session goes to the relay),
# then close_session with the loop running: a step of it the user could
# signal would keep the relay serving them.
DRIVER=$KH_BUILDDIR/tests/probes/pam_driver
[ -x "$DRIVER" ] || _logins_bail "tests/probes/pam_driver not built"
DRV_ENV=()
if nm -D "$PAM_KUBEHSM" 2>/dev/null | grep -q __asan_init &&
	! nm -D "$DRIVER" 2>/dev/null | grep -q __asan_init; then
	DRV_ENV=(LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0)
fi
CLOSES=30
# closes SIG: CLOSES logins, each closed while the loop sends SIG.
closes() {
	local i line t0 drv_pid bad=0
	for i in $(seq 1 "$CLOSES"); do
		coproc DRV { env "${DRV_ENV[@]}" KH_PIN="$PIN" KH_GATE=close_session "$DRIVER" \
			"$SSHD_SERVICE" "$alice" 1 authenticate open_session close_session 2>&1; }
		drv_pid=$DRV_PID
		line=""
		read -r -t 60 line <&"${DRV[0]}"
		if [ "$line" != "gate close_session" ] || [ "$(served)" != 1 ]; then
			diag "close $i: the login did not open and deliver ($line)"
			bad=-1
		else
			hostile_start "$1"
			echo >&"${DRV[1]}"
			t0=$(date +%s%N)
			while [ "$(served)" != 0 ] &&
				[ $((($(date +%s%N) - t0) / 1000000)) -lt 3000 ]; do
				sleep 0.02
			done
			[ "$(served)" = 0 ] || { diag "close $i: still served 3 s on"; bad=$i; }
			hostile_stop
		fi
		cat <&"${DRV[0]}" >/dev/null 2>&1
		wait "$drv_pid" 2>/dev/null
		[ "$bad" = 0 ] || break
	done
	is "$bad" 0 "$CLOSES close_sessions against kill(-1, $1), each of the uid's only login: every one ended the relay's session within 3 s"
}
closes SIGKILL
closes SIGSTOP

logins_sanitizer_reports
done_testing
