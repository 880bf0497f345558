#!/bin/bash
# polkit: kh_polkit_check against a real polkitd on a private system bus,
# with the shipped action file and rules files, then with polkitd stopped,
# frozen and gone with its bus, in each polkit.mode.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/polkit.sh"

polkit_need
need_cmd useradd userdel setpriv timeout valgrind
PROBE=$KH_BUILDDIR/tests/probes/polkit_probe
[ -x "$PROBE" ] || skip_all "tests/probes/polkit_probe not built (make check builds it)"

CACHE=org.kubehsm.cache-credentials
ADMIN=org.kubehsm.admin-sessions

# probe ARGS...: run the probe bounded, set $out/$err/$rc and $ms (elapsed).
probe() {
	local t0 t1
	t0=$(date +%s%N)
	run timeout 20 "$PROBE" "$@"
	t1=$(date +%s%N)
	ALL_ERR+=$err
	ms=$(((t1 - t0) / 1000000))
}

ALL_ERR=

# A non-root user and a process of theirs: the subject of most checks.
USER_NAME=khpk$$
useradd -M -N -s /usr/sbin/nologin "$USER_NAME" || skip_all "useradd failed"
on_exit "userdel -f '$USER_NAME'"
USER_UID=$(id -u "$USER_NAME")
setpriv --reuid="$USER_UID" --regid="$(id -g "$USER_NAME")" --init-groups \
	sleep 300 </dev/null >/dev/null 2>&1 &
SUBJ=$!
on_exit "kill $SUBJ"
subject_is_user() { [ "$(stat -c %u "/proc/$SUBJ" 2>/dev/null)" = "$USER_UID" ]; }
_pk_wait_for 5 subject_is_user ||
	skip_all "cannot run a process as $USER_NAME"

DETAILS=(service sshd user "$USER_NAME" token_serial 0001 kube_user "$USER_NAME")

plan 31

polkit_start || { fail "polkitd on a private system bus is ready"; exit 1; }
pass "polkitd on a private system bus is ready ($POLKIT_BUS_ADDRESS)"

# --- defaults from conf/org.kubehsm.policy, no rules -------------------------
probe required $CACHE "$SUBJ" "$USER_UID" "${DETAILS[@]}" kube_groups dev,ops
is "$rc:$out" "0:authorized" "cache-credentials: default yes for a non-root login"

probe required $ADMIN "$SUBJ" "$USER_UID"
is "$rc" 1 "admin-sessions: auth_admin is a no without interaction"
like "$out" "denied: .*$ADMIN.*authentication" "the denial names the action and why"

# polkitd authorizes uid 0 unconditionally; rules below cannot change that.
probe required $ADMIN $$ 0
is "$rc:$out" "0:authorized" "a root subject is always authorized"

# --- rules ------------------------------------------------------------------
polkit_add_rule 50-kubehsm-blocked "
polkit.addRule(function(action, subject) {
	if (action.id == '$CACHE' && subject.user == '$USER_NAME' &&
	    (action.lookup('kube_groups') || '').split(',').indexOf('blocked') >= 0)
		return polkit.Result.NO;
});
// Every detail of kh_polkit_check_login, under its documented name.
polkit.addRule(function(action, subject) {
	if (action.id == '$CACHE' && subject.user == '$USER_NAME' &&
	    action.lookup('service') == 'khsvc' && action.lookup('user') == '$USER_NAME' &&
	    action.lookup('token_serial') == 'SER-1' && action.lookup('kube_user') == 'kube-$USER_NAME' &&
	    action.lookup('kube_groups') == 'a,b')
		return polkit.Result.NO;
});"
ok $? "rules on kube_groups and on all login details loaded"

probe required $CACHE "$SUBJ" "$USER_UID" "${DETAILS[@]}" kube_groups dev,blocked
is "$rc" 1 "rule on the kube_groups detail: denied"
like "$out" "^denied: .*not authorized for $CACHE" "denial says which action"

probe required $CACHE "$SUBJ" "$USER_UID" "${DETAILS[@]}" kube_groups dev,unblocked
is "$rc:$out" "0:authorized" "same rule, other groups: authorized"

probe required $CACHE $$ 0 "${DETAILS[@]}" kube_groups blocked
is "$rc:$out" "0:authorized" "same rule, root subject: still authorized"

probe -l required "$SUBJ" "$USER_UID" khsvc "$USER_NAME" SER-1 "kube-$USER_NAME" a b
is "$rc" 1 "kh_polkit_check_login: service, user, token_serial, kube_user, kube_groups reach the rule"
probe -l required "$SUBJ" "$USER_UID" khsvc "$USER_NAME" SER-2 "kube-$USER_NAME" a b
is "$rc:$out" "0:authorized" "kh_polkit_check_login: another token serial is authorized"
probe -l required "$SUBJ" "$USER_UID" sshd "$USER_NAME" SER-1 "kube-$USER_NAME" dev blocked
is "$rc" 1 "kh_polkit_check_login: group list joined with ','"
probe -l required "$SUBJ" "$USER_UID" sshd "$USER_NAME" SER-1 "kube-$USER_NAME" "dev,blocked"
like "$rc:$out" "^2:error: \[input\].*contains ','" "a group name with ',' is refused, not smuggled"

polkit_del_rule 50-kubehsm-blocked
polkit_add_rule 50-kubehsm-user "
polkit.addRule(function(action, subject) {
	if (action.id == '$CACHE' && subject.user == '$USER_NAME')
		return polkit.Result.NO;
});"
ok $? "rule on subject.user loaded"

probe required $CACHE "$SUBJ" "$USER_UID" "${DETAILS[@]}" kube_groups dev
is "$rc" 1 "rule on subject.user: denied"

# The PAM module asks while the login process still runs as root, naming
# the user's uid: polkitd takes the uid a root caller gives.
probe required $CACHE $$ "$USER_UID" "${DETAILS[@]}" kube_groups dev
is "$rc" 1 "root-owned login process with the user's uid: rules see the user"

# The shipped example must at least parse and load in polkitd's JS engine.
polkit_add_rule 60-kubehsm-example "$(cat "$KH_SRCDIR/conf/50-kubehsm.rules.example")"
ok $? "conf/50-kubehsm.rules.example loads"
polkit_del_rule 60-kubehsm-example
polkit_del_rule 50-kubehsm-user

# --- bad input and polkitd errors --------------------------------------------
probe required $CACHE "$SUBJ" "$USER_UID" user $'\xff\xfe'
like "$rc:$out" "^2:error: \[input\].*UTF-8" "non-UTF-8 detail: input error, no GLib critical"
is "$err" "" "nothing on stderr"

probe required $CACHE 999999999 "$USER_UID"
like "$rc:$out" "^2:error: \[not-found\]" "vanished process: not-found"

probe required org.kubehsm.no-such-action "$SUBJ" "$USER_UID"
like "$rc:$out" "^2:error: \[config\].*not registered" "unregistered action: config error even though polkitd answered"

# --- memory: no errors, no definite leaks from our code ----------------------
# (valgrind in a normal build, ASan/LSan in a sanitizer build: tap.sh memcheck)
run memcheck "$PROBE" required $CACHE "$SUBJ" "$USER_UID" "${DETAILS[@]}" kube_groups x
is "$rc:$out" "0:authorized" "memcheck: no definite leak, no memory error"
[ "$rc" = 0 ] || diag "$err"

# --- polkitd frozen: the deadline bounds the wait ----------------------------
kill -STOP "$POLKITD_PID"
probe required $CACHE "$SUBJ" "$USER_UID" "${DETAILS[@]}" kube_groups dev
like "$rc:$out" "^2:error: \[permission\] polkit did not answer \(no answer within 5000 ms\)" \
	"polkitd frozen, mode required: refused after the deadline"
diag "frozen polkitd, required: returned after $ms ms (bound 5000 ms + 1000 ms grace)"
probe if-available $CACHE "$SUBJ" "$USER_UID" "${DETAILS[@]}" kube_groups dev
# A timeout is not absence: a user whose caching the rules deny could load
# polkitd until it times out (#13).
like "$rc:$out" "^2:error: \[permission\] polkit did not answer \(no answer within 5000 ms\).*refused" \
	"polkitd frozen, mode if-available: refused all the same (a timeout is not absence)"
diag "frozen polkitd, if-available: returned after $ms ms"
kill -CONT "$POLKITD_PID"

# --- bus up, no polkitd -------------------------------------------------------
polkit_stop_daemon
probe required $CACHE "$SUBJ" "$USER_UID"
like "$rc:$out" "^2:error: \[permission\] polkit unreachable .*polkit.mode = required" \
	"no polkitd on the bus, mode required: clear error"
probe if-available $CACHE "$SUBJ" "$USER_UID"
like "$rc:$out" "^0:authorized \(polkit unreachable" "no polkitd on the bus, mode if-available: allowed, reported"

# --- no bus at all -------------------------------------------------------------
polkit_stop
probe required $CACHE "$SUBJ" "$USER_UID"
like "$rc:$out" "^2:error: \[permission\] polkit unreachable" "no bus, mode required: clear error"
probe if-available $CACHE "$SUBJ" "$USER_UID"
like "$rc:$out" "^0:authorized \(polkit unreachable" "no bus, mode if-available: allowed, reported"
diag "no bus, if-available: $out"

# off must not even try: no bus, a bus address that cannot work, and a
# subject that does not exist would all be errors if it did.
DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/kubehsm probe off $CACHE 999999999 "$USER_UID"
is "$rc:$out" "0:authorized" "mode off: authorized without contacting anything"

is "$ALL_ERR" "" "no GLib warning or critical reached stderr in any probe"
