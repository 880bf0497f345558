#!/bin/bash
# logins_local: pam_kubehsm behind login(1) on a pty and su / su -l, run by
# root and by another, non-root user (su then has the caller's real uid and
# effective uid 0): the user gets a kube session that kubectl 1.27 and 1.33
# use, logout ends it, and su keeps working with or without a kube session —
# also a non-root su to a user with no token, through the password fallback.
# Stacks: pam/examples/login for login and su -l (pam_keyinit), the same
# without pam_keyinit for su (as Debian's su).
. "$KH_SRCDIR/tests/integration/logins/logins_common.sh"

token_user alice
plain_user carol
plain_user svc pw-svc-$$
C=$(uid_of "$carol")
logins_pam login < <(logins_kubehsm_stack "$CONF" keyinit)
logins_pam su < <(logins_kubehsm_stack "$CONF")
logins_pam su-l < <(logins_kubehsm_stack "$CONF" keyinit)

# as_carol: the command line that runs the rest as carol (non-root caller,
# her own session keyring).
as_carol=(setpriv --reuid="$C" --regid="$(id -g "$carol")" --init-groups --reset-env
	"${LOGINS_ASAN_ENVCMD[@]}" keyctl session -)

# a_login NAME WHAT ARGV...: log alice in with the PIN; check the session
# inside, her identity, logout, and that the record ended with the login.
a_login() {
	local name=$1 what=$2
	shift 2
	before_login "$alice"
	LOGIN_PIN=$PIN login_open "$name" "$@"
	if ! ok $? "$what: $alice logs in with the token PIN"; then
		diag "$(login_transcript "$name" 8)"
		return 1
	fi
	is "$(($(shim_logins) - c0))" 1 "$what: the PIN cost one token C_Login"
	login_run "$name" "id -un"
	is "$out" "$alice" "$what: the shell runs as $alice"
	kube_session "$name" "$alice" "$what"
	is "$(logins "$alice")" 1 "$what: the record counts one login"
	no_handoff "$alice" "$what"
	login_close "$name"
	is "$rc" 0 "$what: logout, exit status 0" || diag "$out$err" "$(login_transcript "$name" 5)"
	ended "$alice" "$what, logout"
}

a_login l1 "login(1)" login "$alice"
a_login sl1 "su -l by root" su -l "$alice"
a_login s1 "su by root" su "$alice"
logins_preload_begin   # su is setuid: a sanitizer build needs /etc/ld.so.preload
a_login csl1 "su -l by $carol (non-root)" "${as_carol[@]}" su -l "$alice"
a_login cs1 "su by $carol (non-root)" "${as_carol[@]}" su "$alice"

# A user without a token: kubehsm steps aside, the password logs in.
c0=$(shim_logins)
LOGIN_PASSWORD=pw-svc-$$ login_open cs2 "${as_carol[@]}" su "$svc"
ok $? "su by $carol to $svc (no token): the password fallback logs in" ||
	diag "$(login_transcript cs2 8)"
login_run cs2 "id -un"
is "$out" "$svc" "su by $carol to $svc: the shell runs as $svc"
login_run cs2 "$KUBEHSM status"
if [ "$rc" = 1 ] && grep -q '^No kube session' <<<"$out"; then
	pass "su by $carol to $svc: no kube session, status says so"
else
	fail "su by $carol to $svc: no kube session, status says so"; diag "rc=$rc $out $err"
fi
is "$(shim_logins)" "$c0" "su by $carol to $svc: no token, no C_Login"
login_close cs2
is "$rc" 0 "su by $carol to $svc: logout, exit status 0"
logins_preload_end

# root's su with Debian's pam_rootok first: no authentication at all, so no
# kube session, and su works.
logins_pam su < <(echo "auth sufficient pam_rootok.so"; logins_kubehsm_stack "$CONF")
login_open rs1 su "$alice"
ok $? "su by root with pam_rootok (no kubehsm authentication) works" || diag "$(login_transcript rs1 8)"
login_run rs1 "id -un; $KUBEHSM status"
if [ "$rc" = 1 ] && [ "$(head -n 1 <<<"$out")" = "$alice" ] && grep -q '^No kube session' <<<"$out"; then
	pass "su by root with pam_rootok: runs as $alice, no kube session minted"
else
	fail "su by root with pam_rootok: runs as $alice, no kube session minted"; diag "rc=$rc $out $err"
fi
login_close rs1
is "$rc" 0 "su by root with pam_rootok: logout, exit status 0"

logins_sanitizer_reports
done_testing
