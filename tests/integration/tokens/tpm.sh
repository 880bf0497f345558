#!/bin/bash
# tpm: a TPM 2.0 (swtpm + tpm2-abrmd + tpm2-pkcs11, tests/harness/tpm.sh)
# holding both the host issuer key — generated inside the TPM, the home it
# has on a bastion without an HSM — and a user's key.  pamtester runs with
# an EMPTY environment: tpm2-pkcs11's store, TCTI and bus address, and
# TSS2_LOG, come from pkcs11.env (the issuer, on the same module, takes
# them too).  Then kubectl 1.27 and 1.33, as the user, reach an mTLS
# endpoint that trusts the issuer CA with the session the TPM issuer
# minted.  A wrong PIN costs exactly one dictionary-attack count; in DA
# lockout a login is refused (tpm2-pkcs11 reports no PIN flags: the lockout
# shows only as CKR_PIN_LOCKED from C_Login).  What a library prints when
# the TPM is unreachable is recorded for the documentation.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/pamsvc.sh"
. "$KH_SRCDIR/tests/harness/kubeapi.sh"
. "$KH_SRCDIR/tests/harness/tpm.sh"
. "$KH_SRCDIR/tests/integration/tokens/tokens_common.sh"

need_root
need_cmd pamtester swtpm tpm2-abrmd tpm2_ptool tpm2_getcap tpm2_dictionarylockout dbus-daemon \
	pkcs11-tool openssl keyctl jq setpriv nginx
K127=/usr/lib/google-cloud-sdk/bin/kubectl.1.27
K133=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
[ -x "$K127" ] && [ -x "$K133" ] || skip_all "needs kubectl 1.27 and 1.33 in /usr/lib/google-cloud-sdk/bin"
[ -f "$PAM_KUBEHSM" ] && [ -x "$KUBEHSM" ] || skip_all "the module and kubehsm are not built"
chmod 0755 "$KH_BUILDDIR" "$KH_BUILDDIR/helper" 2>/dev/null || true
tokens_pamtester

PIN=2468-tpm
ISSUER_PIN=1357-issuer
ETC=$KH_TMP/etc
make_user alice
make_user bob

t0=$SECONDS
tpm_start "$KH_TMP/tpm" --max-tries 3 --recovery-time 600 || { echo "Bail out! no software TPM"; exit 1; }
on_exit tpm_stop
diag "swtpm, its bus and tpm2-abrmd up in $((SECONDS - t0)) s"
{
	pki_init && pki_ca users "kh TPM users CA" && pki_ca issuerca "kh issuer CA" &&
	# The issuer key is generated in the TPM; its certificate, CA:TRUE,
	# certifies the public key read from the token.
	tpm_issuer_token kubehsm-host "$ISSUER_PIN" "$PKI_DIR/issuerca.pem" "$PKI_DIR/issuerca.key" &&
	tpm_user_token alice-tpm "$PIN" "$PKI_DIR/users.pem" "$PKI_DIR/users.key" \
		"/UID=$alice/CN=Alice Smith" ecc256 &&
	tpm_user_token bob-tpm "$PIN" "$PKI_DIR/users.pem" "$PKI_DIR/users.key" \
		"/UID=$bob/CN=Bob Jones" rsa2048
} >"$KH_TMP/setup.log" 2>&1 || { cat "$KH_TMP/setup.log"; echo "Bail out! TPM tokens"; exit 1; }
diag "TPM ready with three tokens after $((SECONDS - t0)) s"
kubeapi_start "$PKI_DIR/issuerca.pem" || { echo "Bail out! nginx did not start"; exit 1; }

# pkcs11.env: what tpm2-pkcs11, tpm2-tss and the tabrmd TCTI read.
TPMENV=$(tpm_env --libconfig | sed -e 's/^env = {//' -e 's/ };$//')
TPM_ISSUER="key = \"pkcs11:token=kubehsm-host;object=issuer\"; module = \"$TPM_MODULE\";
  cert_file = \"$TPM_DIR/certs/kubehsm-host.pem\"; pin_file = \"$TPM_DIR/tokens/kubehsm-host.pin\";"
tokens_policy "$ETC/tpm.conf" module="$TPM_MODULE" env="$TPMENV" issuer="$TPM_ISSUER"
SVC=kh-tpm-$$
tokens_service "$SVC" "$ETC/tpm.conf"
# The store's path: with no TPM2_PKCS11_STORE, tpm2-pkcs11 would make one in
# the working directory of the login (sshd's: /).
cd "$KH_TMP" || exit 1
mkdir -m 0755 "$KH_TMP/cwd" && cd "$KH_TMP/cwd" || exit 1

write_kubeconfig() {
	cat >"$KH_TMP/kubeconfig-$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: $KUBEAPI_URL, certificate-authority: $KUBEAPI_CA}
users:
- name: kubehsm
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: $KUBEHSM, args: [exec], interactiveMode: Never}
contexts:
- name: test
  context: {cluster: test, user: kubehsm}
current-context: test
EOF
	chown "$1" "$KH_TMP/kubeconfig-$1"
}

# --- kubehsm token: the TPM's tokens, found by certificate ----------------------
run env -i PATH=/usr/bin:/bin "$KUBEHSM" token --config "$ETC/tpm.conf" --user "$alice"
is "$rc" 0 "kubehsm token (empty environment): a TPM token for $alice" || diag "$err"
like "$out" "token +'alice-tpm'  IBM / SW   TPM  serial 0000000000000000" \
	"tpm2-pkcs11: every token's serial is 0000000000000000; the certificate tells them apart"
like "$out" "^$alice: token 'alice-tpm' \(serial 0000000000000000, slot [0-9]+\), certificate CKA_ID 01\$" \
	"the verdict: alice-tpm, the key of CKA_ID 01"
like "$out" "token +'kubehsm-host'" "the issuer's token is listed too (same store) ..."
like "$(grep -E -A10 "token +'kubehsm-host'" <<<"$out")" "not valid: .*untrusted issuer" \
	"... and is nobody's: its certificate does not chain to the users CA"
is "$(tpm_da_counter)" 0 "kubehsm token tried no PIN (DA counter 0)"

# --- a login: the user's key and the issuer key in the TPM ----------------------
pt "$SVC" "$alice" "$PIN" authenticate open_session
is "$rc" 0 "$alice logs in with her TPM key; the TPM issuer key mints the session" ||
	diag "$(oneline "$out$err")"
unlike "$out$err" "WARNING|ERROR|esys|tcti|CRITICAL" "no tpm2-tss or tpm2-pkcs11 line in the login's output"
is "$(tpm_da_counter)" 0 "a good login: DA counter 0"
is "$(ls "$KH_TMP/cwd")" "" "no store made in the login's working directory"
write_kubeconfig "$alice"
for k in "$K127" "$K133"; do
	run as_user "$alice" "$k" --kubeconfig "$KH_TMP/kubeconfig-$alice" get --raw /kh-whoami </dev/null
	like "$rc:$out" "^0:[0-9A-F]+ O=dev,CN=$alice\$" \
		"kubectl ${k##*kubectl.} as $alice: the server saw the session the TPM issuer certified" ||
		diag "$err"
done
id=$(as_user "$alice" keyctl search @u user kubehsm:session:v1 2>/dev/null)
as_user "$alice" keyctl pipe "$id" 2>/dev/null |
	/usr/bin/python3 "$KH_SRCDIR/tests/harness/record.py" json | jq -r .chain >"$KH_TMP/chain.pem"
openssl x509 -in "$KH_TMP/chain.pem" -out "$KH_TMP/session.pem" 2>/dev/null
run openssl verify -CAfile "$PKI_DIR/issuerca.pem" -untrusted "$TPM_DIR/certs/kubehsm-host.pem" \
	"$KH_TMP/session.pem"
like "$out" ": OK\$" "the session certificate chains to the issuer CA through the TPM issuer"
pt "$SVC" "$bob" "$PIN" authenticate
is "$rc" 0 "$bob logs in with his TPM key (RSA-2048)" || diag "$(oneline "$out$err")"

# --- wrong PIN and DA lockout --------------------------------------------------
pt "$SVC" "$alice" 0000-wrong authenticate
like "$rc:$(oneline "$err")" "^1:.*Authentication failure" "a wrong PIN: PAM_AUTH_ERR"
is "$(tpm_da_counter)" 1 "a wrong PIN: exactly one dictionary-attack count"
pt "$SVC" "$alice" 0000-wrong authenticate
pt "$SVC" "$bob" 0000-wrong authenticate
is "$(tpm_da_counter)" 3 "three wrong PINs (any token): the whole TPM is in lockout"
pt "$SVC" "$alice" "$PIN" authenticate
like "$rc:$(oneline "$out$err")" "^1:.*PIN locked.*maximum number of retries" \
	"in DA lockout the right PIN is refused (PAM_MAXTRIES), the user told"
is "$(tpm_da_counter)" 3 "the refused login did not extend the lockout"
tpm_da_reset >/dev/null 2>&1
pt "$SVC" "$alice" "$PIN" authenticate
is "$rc" 0 "after the lockout is cleared the right PIN works again" || diag "$(oneline "$out$err")"

# --- what still reaches stderr when the TPM is gone -----------------------------
tpm_abrmd_stop
pt "$SVC" "$alice" "$PIN" authenticate
like "$rc:$(oneline "$err")" "^1:.*cannot retrieve authentication info" \
	"the resource manager gone: PAM_AUTHINFO_UNAVAIL, no PIN asked"
unlike "$out$err" "PIN for token" "... and no prompt"
unlike "$out$err" "WARNING:esys|ERROR:tcti" "TSS2_LOG = all+NONE keeps tpm2-tss quiet even then"
diag "what the module's libraries print on stderr then (the PAM host's stderr, never the prompt):" \
	"$(grep -v '^pamtester:' <<<"$err" | head -n 8)"
tpm_abrmd_start || echo "Bail out! tpm2-abrmd did not come back"

done_testing
