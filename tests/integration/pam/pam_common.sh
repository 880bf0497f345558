# tests/integration/pam/pam_common.sh — shared set-up for the pam_wrapper and
# valgrind tests (source after tap.sh, users.sh, pki.sh): a host issuer
# token, a users CA, one user ($ALICE) with a token, and a root-owned policy
# $CONF (polkit mode from $PAM_POLKIT_MODE, default off); pam_driver_env for
# the tests that run tests/probes/pam_driver.
. "$KH_SRCDIR/tests/harness/pamsvc.sh"
PIN=4711
ISSUER_PIN=987654
HOST=khhost$$

pam_common_setup() {
	pki_init && pki_ca users "kh test users CA" && pki_ca issuerca "kh issuer CA" &&
		pki_issuer_token "$HOST" "$ISSUER_PIN" issuerca || return 1
	make_user alice
	ALICE=$alice
	pki_user_cert "$ALICE" users --cn "$ALICE" --o dev --o ops &&
		pki_token_init "$ALICE" "$PIN" &&
		pki_token_import "$ALICE" "$PIN" "$ALICE" kube 01 || return 1
	chmod 0600 "$PKI_DIR/issuer.pin"
	ETC=$KH_TMP/etc
	CONF=$ETC/kubehsm.conf
	pki_policy "$CONF" "$HOST" "polkit=${PAM_POLKIT_MODE:-off}"
}

# pam_service FILE: auth + session through the module with $CONF.
pam_service() {
	pam_service_file "$1" "config=$CONF"
}

# The user's cached record as the user reads it, as one JSON object (the
# header's fields and the PEM texts: tests/harness/record.py), or "".
pam_record() {
	as_user "$1" sh -c 'id=$(keyctl search @u user kubehsm:session:v1 2>/dev/null) &&
		keyctl pipe "$id"' 2>/dev/null | python3 "$KH_SRCDIR/tests/harness/record.py" json
}

# pam_driver_env: DRV_ENV, what tests/probes/pam_driver ($DRIVER) needs in
# front of it for this build's module: with a sanitizer-built module and
# an uninstrumented driver, the ASan runtime first.
pam_driver_env() {
	DRV_ENV=()
	if nm -D "$PAM_KUBEHSM" 2>/dev/null | grep -q __asan_init &&
		! nm -D "$DRIVER" 2>/dev/null | grep -q __asan_init; then
		DRV_ENV=(LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0)
	fi
}
