#!/bin/bash
# pam_wrapper: pam_kubehsm.so driven by tests/probes/pam_driver under pam_wrapper
# (service files in a private directory), including the polkit step
# against a real polkitd on a private system bus.  Runs the sanitizer build
# too (libasan preloaded first).
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/polkit.sh"
. "$KH_SRCDIR/tests/integration/pam/pam_common.sh"

need_root
need_cmd softhsm2-util pkcs11-tool openssl keyctl jq setpriv timeout
DRIVER=$KH_BUILDDIR/tests/probes/pam_driver
[ -x "$DRIVER" ] && [ -f "$PAM_KUBEHSM" ] || skip_all "module or tests/probes/pam_driver not built"
WRAPPER=$(ldconfig -p | awk '/libpam_wrapper.so / { print $NF; exit }')
[ -n "$WRAPPER" ] || skip_all "needs libpam_wrapper.so (libpam-wrapper)"
PRELOAD=$WRAPPER
if nm -D "$PAM_KUBEHSM" 2>/dev/null | grep -q __asan_init; then
	PRELOAD="$(gcc -print-file-name=libasan.so) $WRAPPER"
	export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
fi

PAM_POLKIT_MODE=required
pam_common_setup || { echo "Bail out! set-up"; exit 1; }
SVCDIR=$KH_TMP/pam.d
mkdir "$SVCDIR"
pam_service "$SVCDIR/kubehsm"
echo "auth required pam_deny.so" >"$SVCDIR/other"
# strict: open_session returns exactly what the module returned (PAM_IGNORE
# included, which a plain "required" line would swallow).
strict_service() {   # strict_service FILE CONF
	{
		echo "auth     required $PAM_KUBEHSM config=$2"
		echo "account  required pam_permit.so"
		echo "session  [success=ok default=bad] $PAM_KUBEHSM config=$2"
	} >"$1"
}
strict_service "$SVCDIR/strict" "$CONF"
# ignored: succeeds only if the module's open_session returned PAM_IGNORE
# (that jumps over pam_deny; any other code is "bad").  A module code of
# PAM_IGNORE cannot be passed through as the stack's result: libpam turns
# an ignored-then-failed stack into PAM_PERM_DENIED.
{
	echo "auth     required $PAM_KUBEHSM config=$CONF"
	echo "account  required pam_permit.so"
	echo "session  [ignore=1 default=bad] $PAM_KUBEHSM config=$CONF"
	echo "session  requisite pam_deny.so"
	echo "session  required pam_permit.so"
} >"$SVCDIR/ignored"
# The same policy with polkit.mode = if-available.
CONF_IA=$ETC/kubehsm-if-available.conf
sed 's/^polkit = .*/polkit = { mode = "if-available"; };/' "$CONF" >"$CONF_IA"
chmod 0644 "$CONF_IA"
grep -q '"if-available"' "$CONF_IA" || { echo "Bail out! if-available policy"; exit 1; }
strict_service "$SVCDIR/strict-ia" "$CONF_IA"
# And with polkit.mode = off: the plugin is never loaded.
CONF_OFF=$ETC/kubehsm-polkit-off.conf
sed 's/^polkit = .*/polkit = { mode = "off"; };/' "$CONF" >"$CONF_OFF"
chmod 0644 "$CONF_OFF"
grep -q '"off"' "$CONF_OFF" || { echo "Bail out! polkit-off policy"; exit 1; }
strict_service "$SVCDIR/strict-off" "$CONF_OFF"

# drive [-s SERVICE] PIN OPS...: the driver (as root, like a login program)
# under pam_wrapper, with tests/probes/logcap (KH_PAM_PRELOAD, pamsvc.sh);
# sets $out $err $rc.
drive() {
	local svc=kubehsm
	[ "$1" = -s ] && { svc=$2; shift 2; }
	local pin=$1; shift
	run env LD_PRELOAD="${KH_PAM_PRELOAD:+$KH_PAM_PRELOAD }$WRAPPER" KH_LOGCAP_FILE="$KH_MODLOG" \
		PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$SVCDIR" \
		KH_PIN="$pin" timeout 60 "$DRIVER" "$svc" "$ALICE" 1 "$@"
}
drop_record() {
	as_user "$ALICE" sh -c 'keyctl unlink $(keyctl search @u user kubehsm:session:v1) @u' \
		>/dev/null 2>&1
}
# What the user sees through the CLI (must agree with the keyring).
cli_status() { as_user "$ALICE" "$KUBEHSM" status 2>&1; echo "exit $?"; }

plan 26

polkit_start || { fail "polkitd on a private system bus"; exit 1; }
pass "polkitd on a private system bus is ready"

drive 0000 authenticate
is "$rc:$out" "7:authenticate: 7 Authentication failure" "wrong PIN: PAM_AUTH_ERR (7)"

# --- no rule: polkit allows, a record is stored ------------------------------
drive -s strict "$PIN" authenticate setcred open_session
is "$rc" 0 "no rule, mode required: authenticate, setcred, open_session succeed"
REC=$(pam_record "$ALICE")
is "$(jq -r '.kube_user + " " + (.groups | join(","))' <<<"$REC" 2>/dev/null)" \
	"$ALICE dev,ops" "polkit allows: the record names the user and groups"
drop_record
drive -s ignored "$PIN" authenticate open_session
isnt "$rc" 0 "no rule: the PAM_IGNORE probe stack fails when the module caches (it discriminates)"
drop_record

# --- a rule denying group ops, scoped to the test user as the subject --------
# subject.user is the uid the module passes: the driver runs as root, so
# this rule only matches if the module asks about the user's uid.
polkit_add_rule deny-ops "polkit.addRule(function(action, subject) {
	if (action.id == 'org.kubehsm.cache-credentials' &&
	    subject.user == '$ALICE' &&
	    action.lookup('user') == '$ALICE' &&
	    action.lookup('kube_groups').split(',').indexOf('ops') >= 0)
		return polkit.Result.NO;
});" || { fail "rule installed"; exit 1; }
pass "a rule denying group ops to subject.user $ALICE is in force"
drive "$PIN" authenticate open_session close_session
is "$rc" 0 "polkit denies: the login itself still succeeds (session required stack)"
drive -s ignored "$PIN" authenticate open_session
is "$rc" 0 "polkit denies: the module's open_session returns PAM_IGNORE"
like "$err" "caching kube credentials is not allowed for this login" \
	"polkit denies: the user is told why"
is "$(pam_record "$ALICE")" "" "polkit denies: no record in the user's keyring"
like "$(cli_status)" "exit 1$" \
	"polkit denies: kubehsm status as the user finds no session (exit 1)"
polkit_del_rule deny-ops || { fail "rule removed"; exit 1; }

# --- polkitd running but not answering (frozen) --------------------------------
# A timeout is not absence: under if-available it must not let a login
# through that polkit's rules might deny (#13).
kill -STOP "$POLKITD_PID"
on_exit "kill -CONT $POLKITD_PID"
drive -s strict-ia "$PIN" authenticate open_session
kill -CONT "$POLKITD_PID"
is "$rc:$out" "14:open_session: 14 Cannot make/remove an entry for the specified session" \
	"polkitd frozen, mode if-available: no answer in time is refused (PAM_SESSION_ERR)"
is "$(pam_record "$ALICE")" "" "polkitd frozen, mode if-available: no record"

# --- polkitd stopped (the bus stays up) ----------------------------------------
polkit_stop_daemon || { fail "polkitd stopped"; exit 1; }
drive -s strict "$PIN" authenticate open_session
is "$rc:$out" "14:open_session: 14 Cannot make/remove an entry for the specified session" \
	"polkitd stopped, mode required: open_session returns PAM_SESSION_ERR (14)"
is "$(pam_record "$ALICE")" "" "polkitd stopped, mode required: no record"
drive -s strict-ia "$PIN" authenticate open_session
is "$rc" 0 "polkitd stopped, mode if-available: open_session succeeds"
REC=$(pam_record "$ALICE")
is "$(jq -r .kube_user <<<"$REC" 2>/dev/null)" "$ALICE" \
	"polkitd stopped, mode if-available: the record is stored"
# --- after pam_end: the module is unloaded, libp11 and libpolkit stay ---------
# (libpolkit's signal handlers on the never-unloaded GDBus connection, and
# libp11's per-load tables, must not outlive their code.)
# driver_maps WHEN [SERVICE]: the driver's own /proc/PID/maps while paused at WHEN.
driver_maps() {
	local tpid dpid
	LD_PRELOAD="$PRELOAD" PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$SVCDIR" KH_PIN="$PIN" \
		KH_PAUSE=$1 timeout 60 "$DRIVER" "${2:-strict-ia}" "$ALICE" 1 authenticate open_session \
		>"$KH_TMP/pinned.out" 2>&1 &
	tpid=$!
	for _ in $(seq 1 100); do grep -q paused "$KH_TMP/pinned.out" && break; sleep 0.1; done
	dpid=$(pgrep -P "$tpid" | head -1)
	[ -n "$dpid" ] && cat "/proc/$dpid/maps"
	kill "$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null
}
MAPS=$(driver_maps before-end)
like "$MAPS" "pam_kubehsm\.so" "control: before pam_end the driver has the module mapped"
drop_record
MAPS=$(driver_maps after-end)
like "$MAPS" "libpam\.so" "after pam_end: the driver's maps were read"
unlike "$MAPS" "pam_kubehsm\.so" "after pam_end the module itself is unloaded"
like "$MAPS" "kubehsm-polkit\.so" "the polkit plugin stays mapped (loaded NODELETE)"
like "$MAPS" "libpolkit-gobject-1\.so" "libpolkit-gobject stays mapped with it"
like "$MAPS" "libp11\.so" "libp11 stays mapped (pinned)"
drop_record
# polkit.mode = off: a whole login maps neither the plugin nor GLib.
MAPS=$(driver_maps before-end strict-off)
like "$MAPS" "pam_kubehsm\.so" "polkit off: control: the module is mapped during the login"
like "$(pam_record "$ALICE")" "\"kube_user\":\"$ALICE\"" "polkit off: the login cached a record"
unlike "$MAPS" "kubehsm-polkit|libpolkit|libglib|libgio|libgobject" \
	"polkit off: no polkit plugin, libpolkit or GLib in the login's process"
drop_record

