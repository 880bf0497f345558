#!/bin/bash
# pam_wrapper: pam_kubehsm.so driven by tests/pam_driver under pam_wrapper
# (service files in a private directory), including the polkit step
# against a real polkitd on a private system bus.  Runs the sanitizer build
# too (libasan preloaded first).
set -u
. "$KH_SRCDIR/tests/lib/tap.sh"
. "$KH_SRCDIR/tests/lib/users.sh"
. "$KH_SRCDIR/tests/lib/pki.sh"
. "$KH_SRCDIR/tests/lib/polkit.sh"
. "$KH_SRCDIR/tests/integration/pam_common.sh"

need_root
need_cmd softhsm2-util pkcs11-tool openssl keyctl jq setpriv timeout
DRIVER=$KH_BUILDDIR/tests/pam_driver
[ -x "$DRIVER" ] && [ -f "$PAM_KUBEHSM" ] || skip_all "module or tests/pam_driver not built"
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

# drive PIN OPS...: the driver under pam_wrapper; sets $out $err $rc.
drive() {
	local pin=$1; shift
	run env LD_PRELOAD="$PRELOAD" PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$SVCDIR" \
		KH_PIN="$pin" timeout 60 "$DRIVER" kubehsm "$ALICE" 1 "$@"
}

plan 7

polkit_start || { fail "polkitd on a private system bus"; exit 1; }
pass "polkitd on a private system bus is ready"

drive 0000 authenticate
is "$rc:$out" "7:authenticate: 7 Authentication failure" "wrong PIN: PAM_AUTH_ERR (7)"

drive "$PIN" authenticate setcred open_session
is "$rc" 0 "right PIN: authenticate, setcred, open_session"
REC=$(pam_record "$ALICE")
is "$(jq -r '.kube_user + " " + (.groups | join(","))' <<<"$REC" 2>/dev/null)" \
	"$ALICE dev,ops" "polkit allows: the record names the user and groups"
as_user "$ALICE" sh -c 'keyctl unlink $(keyctl search @u user kubehsm:session:v1) @u' >/dev/null 2>&1

polkit_add_rule deny-ops "polkit.addRule(function(action, subject) {
	if (action.id == 'org.kubehsm.cache-credentials' &&
	    action.lookup('user') == '$ALICE' &&
	    action.lookup('kube_groups').split(',').indexOf('ops') >= 0)
		return polkit.Result.NO;
});" || { fail "rule installed"; exit 1; }
pass "a rule denying group ops to $ALICE is in force"
drive "$PIN" authenticate open_session close_session
is "$rc" 0 "polkit denies: the login itself still succeeds"
drive "$PIN" authenticate open_session
is "$rc:$(pam_record "$ALICE")" "0:" "polkit denies: no record is cached"
