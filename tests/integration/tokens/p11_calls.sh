#!/bin/bash
# p11_calls: a login's PKCS#11 calls do not grow with what else the token
# holds (issue #30).  A real login (pamtester authenticate open_session
# close_session, as root) with the PKCS#11 calls counted by
# tests/probes/p11shim (KH_SHIM_CALLS: one line per call), once as the
# issuer's module and once as the user's; then 400 more EC key pairs go on
# the issuer token and on the user's token (tests/probes/p11_fill), and the
# same logins must cost the same number of calls (within 2).  The key is
# found by one C_FindObjects for exactly the object the URI, or the
# certificate's CKA_ID, names; a lookup that lists the token's keys again
# costs several calls per key, and fails here.  Then: the issuer key's
# public half comes from issuer.cert_file, and a certificate of another
# key still stops the login.
#
# The token store is on tmpfs (/dev/shm): SoftHSM2 writes each object
# synchronously, 0.2 s a key pair on this machine's disk.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/pamsvc.sh"

need_root
need_cmd pamtester softhsm2-util pkcs11-tool openssl keyctl timeout
[ -f "$PAM_KUBEHSM" ] || skip_all "pam/.libs/pam_kubehsm.so not built"
SHIM=$KH_BUILDDIR/tests/probes/p11shim/.libs/libkhp11shim.so
FILL=$KH_BUILDDIR/tests/probes/p11_fill
[ -f "$SHIM" ] && [ -x "$FILL" ] || skip_all "tests/probes/p11shim and p11_fill not built"
[ -d /dev/shm ] && [ -w /dev/shm ] || skip_all "needs a writable /dev/shm (tmpfs)"
kh_trusted SHIM "$SHIM"

PIN=4711
ISSUER_PIN=987654
HOST=khcalls$$
OTHERS=400
STORE=$(mktemp -d /dev/shm/kh-p11calls.XXXXXX) || { echo "Bail out! mktemp"; exit 1; }
on_exit "rm -rf '$STORE'"
chmod 0755 "$STORE"

{
	pki_init "$STORE" && pki_ca users "kh calls users CA" && pki_ca issuerca "kh calls issuer CA" &&
		pki_issuer_token "$HOST" "$ISSUER_PIN" issuerca && chmod 0600 "$PKI_DIR/issuer.pin"
} || { echo "Bail out! CAs and the issuer token"; exit 1; }
make_user alice
{
	pki_user_cert "$alice" users --cn "$alice" --o dev &&
		pki_token_init "$alice" "$PIN" && pki_token_import "$alice" "$PIN" "$alice" kube 01
} || { echo "Bail out! alice's token"; exit 1; }

ETC=$KH_TMP/etc
# Counted: the issuer's module (the user's is SoftHSM itself) ...
pki_policy "$ETC/issuer.conf" "$HOST" "issuer_module=$SHIM" &&
	# ... and the user's module (the issuer's is SoftHSM itself).
	pki_policy "$ETC/user.conf" "$HOST" "module=$SHIM" ||
	{ echo "Bail out! policies"; exit 1; }
SVC_I=kh-calls-i$$
SVC_U=kh-calls-u$$
pam_service_file "/etc/pam.d/$SVC_I" "config=$ETC/issuer.conf"
pam_service_file "/etc/pam.d/$SVC_U" "config=$ETC/user.conf"
on_exit "rm -f '/etc/pam.d/$SVC_I' '/etc/pam.d/$SVC_U'"

CALLS=$KH_TMP/calls
# calls SERVICE WHAT: one login through SERVICE; $n is the number of PKCS#11
# calls the shim saw, $by the calls by name.
calls() {
	: >"$CALLS"
	run env "${PT_ENV[@]}" KH_SHIM_CALLS="$CALLS" timeout 60 \
		pamtester "$1" "$alice" authenticate open_session close_session <<<"$PIN"
	is "$rc" 0 "$2: the login succeeds"
	[ "$rc" = 0 ] || diag "$err"
	n=$(grep -c . "$CALLS")
	by=$(sort "$CALLS" | uniq -c | sort -rn | awk '{ printf "%s %s, ", $2, $1 }')
}

calls "$SVC_I" "issuer, the token holding the issuer key alone"
ISSUER_FEW=$n ISSUER_FEW_BY=$by
calls "$SVC_U" "user, the token holding the user's key and certificate alone"
USER_FEW=$n USER_FEW_BY=$by

run "$FILL" "$PKI_MODULE" "$HOST" "$ISSUER_PIN" "$OTHERS"
is "$rc" 0 "$OTHERS other EC key pairs on the issuer token"
run "$FILL" "$PKI_MODULE" "$alice" "$PIN" "$OTHERS"
is "$rc" 0 "$OTHERS other EC key pairs on the user's token"

calls "$SVC_I" "issuer, with $OTHERS other key pairs beside the issuer key"
ISSUER_MANY=$n ISSUER_MANY_BY=$by
calls "$SVC_U" "user, with $OTHERS other key pairs beside the user's key"
USER_MANY=$n USER_MANY_BY=$by

diag "issuer's module, calls per login: $ISSUER_FEW alone ($ISSUER_FEW_BY)"
diag "  with $OTHERS other key pairs: $ISSUER_MANY ($ISSUER_MANY_BY)"
diag "user's module, calls per login: $USER_FEW alone ($USER_FEW_BY)"
diag "  with $OTHERS other key pairs: $USER_MANY ($USER_MANY_BY)"
d=$((ISSUER_MANY - ISSUER_FEW))
ok $((d < -2 || d > 2)) "the issuer's PKCS#11 calls per login do not grow with the token ($ISSUER_FEW -> $ISSUER_MANY)"
d=$((USER_MANY - USER_FEW))
ok $((d < -2 || d > 2)) "the user's PKCS#11 calls per login do not grow with the token ($USER_FEW -> $USER_MANY)"

# The issuer key's public half is taken from issuer.cert_file, not read
# from the token: a certificate of another key must still stop the login's
# session step, loudly — another key type before signing, another key of
# the same type when the session certificate fails to verify.
wrong_cert() {   # TYPE EXPECTED-LOG
	local conf=$ETC/wrong-$1.conf svc=kh-calls-w$1$$
	pki_user_cert "other$1" issuerca --cn "kh calls other issuer $1" --ca-cert --type "$1" ||
		{ echo "Bail out! the other $1 issuer certificate"; exit 1; }
	sed "s|\"$PKI_DIR/issuer.pem\"|\"$PKI_DIR/other$1.pem\"|" "$ETC/issuer.conf" >"$conf" &&
		chmod 0644 "$conf" || { echo "Bail out! $conf"; exit 1; }
	pam_service_file "/etc/pam.d/$svc" "config=$conf"
	on_exit "rm -f '/etc/pam.d/$svc'"
	: >"$KH_MODLOG"
	run env "${PT_ENV[@]}" timeout 60 pamtester "$svc" "$alice" authenticate open_session \
		close_session <<<"$PIN"
	isnt "$rc" 0 "issuer.cert_file of another $1 key: the login's session step fails"
	like "$(cat "$KH_MODLOG")" "$2" "  and the log says why"
}
wrong_cert ec "issuer cert_file and key do not match"
wrong_cert rsa "private key issuer is not of the certificate's key type"
done_testing
