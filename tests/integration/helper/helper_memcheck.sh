#!/bin/bash
# helper_memcheck: kubehsm exec and kubehsm sign under memcheck (valgrind in
# a normal build, ASan + UBSan + LeakSanitizer natively in a sanitizer
# build; tests/harness/tap.sh memcheck()), on their success paths and a few
# error paths: no memory error, no definite leak.  Then 1000 native
# `kubehsm exec` runs from one cached session: all succeed, all identical.
#
# memcheck runs tests/probes/kubehsm-dyn, the front end linked dynamically
# (valgrind cannot follow malloc in a static glibc program: it reports
# glibc's own start-up and sees no leak), and follows it into kubehsm-tool
# (--trace-children).  The 1000 native runs use the front end as built.
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
need_root
need_cmd keyctl setpriv useradd openssl base64 timeout sha256sum gcc
[ "${KH_SANITIZERS:-0}" = 1 ] || need_cmd valgrind
PROBE="$KH_BUILDDIR/tests/probes/cache_probe"
[ -x "$PROBE" ] || skip_all "tests/probes/cache_probe not built"
[ -x "$KUBEHSM" ] || skip_all "helper/kubehsm not built"
KHDYN="$KH_BUILDDIR/tests/probes/kubehsm-dyn"
[ -x "$KHDYN" ] || skip_all "tests/probes/kubehsm-dyn not built"
chmod 0755 "$KH_BUILDDIR" "$KH_BUILDDIR/helper" "$KH_BUILDDIR/tests" 2>/dev/null || true
NOCONF=$KH_TMP/no-such-kubehsm.conf

make_user carol
make_user dave
C=$(uid_of "$carol")
pki_init
pki_ca issuer "kubehsm test issuer" || { echo "Bail out! pki"; exit 1; }
pki_user_cert rsa issuer --cn "$carol" --o dev --type rsa
pki_user_cert ec issuer --cn "$carol" --o dev --type ec
pki_user_cert tok issuer --cn "$carol"
for n in rsa ec; do
	cat "$PKI_DIR/$n.pem" "$PKI_DIR/issuer.pem" >"$PKI_DIR/$n.chain"
	openssl pkey -in "$PKI_DIR/$n.key" -pubout -out "$PKI_DIR/$n.pub" 2>/dev/null
done
"$PROBE" store "$C" "$carol" user 3600 --chain "$PKI_DIR/rsa.chain" --key "$PKI_DIR/rsa.key" \
	--token-cert "$PKI_DIR/tok.pem" --groups dev >/dev/null &&
"$PROBE" store "$C" "$carol" user 3600 --issuer ec --chain "$PKI_DIR/ec.chain" --key "$PKI_DIR/ec.key" \
	--token-cert "$PKI_DIR/tok.pem" --groups dev >/dev/null || { echo "Bail out! store"; exit 1; }

# mc USER CMD...: memcheck's checks, run as USER (as_user cannot call a
# shell function, so the same command line is built here).
MC=(timeout "${KH_MEMCHECK_TIMEOUT:-300}" valgrind -q --leak-check=full --trace-children=yes
	--errors-for-leak-kinds=definite --error-exitcode=99)
if [ "${KH_SANITIZERS:-0}" = 1 ]; then
	MC=(env ASAN_OPTIONS=detect_leaks=1:exitcode=99 UBSAN_OPTIONS=halt_on_error=1:exitcode=99
		timeout "${KH_MEMCHECK_TIMEOUT:-300}")
fi
mc() { local u=$1; shift; run as_user "$u" "${MC[@]}" "$@"; err=$(grep -v '^Joined session keyring: ' <<<"$err"); }
# clean WANT-RC NAME: the last mc run exited WANT-RC with no finding.
clean() {
	is "$rc" "$1" "$2: exit $1, no memory error, no definite leak" || diag "${err:0:3000}"
}

# Control: the same checks catch a definite leak in a two-line program.
printf '#include <stdlib.h>\nint main(void) { char *volatile p = malloc(10); p = 0; return p != 0; }\n' >"$KH_TMP/leak.c"
SANFLAGS=(); [ "${KH_SANITIZERS:-0}" = 1 ] && SANFLAGS=(-fsanitize=address,undefined)
gcc -O0 -g "${SANFLAGS[@]}" "$KH_TMP/leak.c" -o "$KH_TMP/leak" && chmod 0755 "$KH_TMP/leak" ||
	{ echo "Bail out! cannot build the leak control"; exit 1; }
mc "$carol" "$KH_TMP/leak"
is "$rc" 99 "control: memcheck as the user reports a definite leak (exit 99)" || diag "$err"

V1='"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"'
INFO="{$V1,\"spec\":{\"interactive\":false}}"
INFO_B="{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false,\"cluster\":{\"server\":\"https://127.0.0.1:6443\",\"certificate-authority-data\":\"$(base64 -w0 "$PKI_DIR/issuer.pem")\",\"config\":{\"issuer\":\"ec\"}}}}"

# --- kubehsm exec -----------------------------------------------------------------
mc "$carol" env KUBERNETES_EXEC_INFO="$INFO" "$KHDYN" exec
clean 0 "exec v1, cached RSA session"
like "$out" '"kind":"ExecCredential".*"clientKeyData":"-----BEGIN PRIVATE KEY' "exec v1 printed the credential"
mc "$carol" env KUBERNETES_EXEC_INFO="$INFO_B" "$KHDYN" exec
clean 0 "exec v1beta1 with cluster info naming issuer ec"
like "$out" 'client.authentication.k8s.io/v1beta1' "exec v1beta1 answered in v1beta1"
mc "$carol" env -u LOGNAME KUBERNETES_EXEC_INFO="$INFO" "$KHDYN" exec
clean 0 "exec v1 without LOGNAME (answered by kubehsm-tool, which asks the account database)"
like "$out" '"kind":"ExecCredential".*"clientKeyData":"-----BEGIN PRIVATE KEY' "... and printed the credential"
mc "$dave" env KUBERNETES_EXEC_INFO="$INFO" "$KHDYN" exec
clean 1 "exec error path: no session"
mc "$carol" env KUBERNETES_EXEC_INFO="{$V1,\"spec\":{\"interactive\":false,\"interactive\":true}}" "$KHDYN" exec
clean 1 "exec error path: duplicate key"
mc "$carol" "$KHDYN" exec
clean 1 "exec error path: KUBERNETES_EXEC_INFO unset"

# --- kubehsm sign ---------------------------------------------------------------------
SA='"apiVersion":"external-signer.authentication.k8s.io/v1alpha1"'
printf 'to be signed' >"$KH_TMP/msg"
D=$(openssl dgst -sha256 -binary "$KH_TMP/msg" | base64 -w0)
sig_ok() {   # sig_ok PUB ARGS...: the SignResponse's signature verifies
	sed -n 's/.*"signature":"\([^"]*\)".*/\1/p' <<<"$out" | base64 -d >"$KH_TMP/sig" 2>/dev/null &&
		openssl pkeyutl -verify -pubin -inkey "$PKI_DIR/$1.pub" -in <(openssl dgst -sha256 -binary "$KH_TMP/msg") \
			-sigfile "$KH_TMP/sig" "${@:2}" >/dev/null 2>&1
}
mc "$carol" env KUBEHSM_CONFIG="$NOCONF" "$KHDYN" sign \
	"{$SA,\"kind\":\"SignRequest\",\"digest\":\"$D\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":\"{\\\"SaltLength\\\":-1,\\\"Hash\\\":5}\"}"
clean 0 "sign RSA-PSS (SHA-256, salt = hash)"
sig_ok rsa -pkeyopt rsa_padding_mode:pss -pkeyopt rsa_pss_saltlen:32 -pkeyopt digest:sha256
ok $? "the PSS signature verifies"
mc "$carol" env KUBEHSM_CONFIG="$NOCONF" "$KHDYN" sign --issuer ec \
	"{$SA,\"kind\":\"SignRequest\",\"digest\":\"$D\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":\"5\"}"
clean 0 "sign ECDSA P-256 (SHA-256)"
sig_ok ec -pkeyopt digest:sha256
ok $? "the ECDSA signature verifies"
mc "$carol" env KUBEHSM_CONFIG="$NOCONF" "$KHDYN" sign "{$SA,\"kind\":\"CertificateRequest\"}"
clean 0 "sign CertificateRequest"
sed -n 's/.*"certificate":"\([^"]*\)".*/\1/p' <<<"$out" | base64 -d 2>/dev/null |
	openssl x509 -inform DER -noout -subject 2>/dev/null | grep -q "CN *= *$carol"
ok $? "the CertificateResponse holds the session certificate"
mc "$carol" env KUBEHSM_CONFIG="$NOCONF" "$KHDYN" sign \
	"{$SA,\"kind\":\"SignRequest\",\"digest\":\"AAAA\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":\"5\"}"
clean 1 "sign error path: digest of the wrong length"
mc "$carol" env KUBEHSM_CONFIG="$NOCONF" "$KHDYN" sign --issuer ec \
	"{$SA,\"kind\":\"SignRequest\",\"digest\":\"$D\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":\"{\\\"SaltLength\\\":-1,\\\"Hash\\\":5}\"}"
clean 1 "sign error path: PSS options with an EC key"

# --- 1000 native exec runs ------------------------------------------------------------
# One reference answer, then 1000 runs: every one must exit 0 and hash the same.
run as_user "$carol" env KUBERNETES_EXEC_INFO="$INFO" "$KUBEHSM" exec
like "$out" '"kind":"ExecCredential"' "reference exec answer" || diag "$err"
want=$(printf '%s\n' "$out" | sha256sum | cut -d' ' -f1)
run as_user "$carol" env KUBERNETES_EXEC_INFO="$INFO" sh -c '
	for i in $(seq 1000); do
		if o=$("$0" exec); then printf "%s\n" "$o" | sha256sum | cut -d" " -f1; else echo "exit $?"; fi
	done | sort | uniq -c' "$KUBEHSM"
is "$(awk '{print $1, $2}' <<<"$out")" "1000 $want" "1000 native kubehsm exec runs: all exit 0 with the reference answer" ||
	diag "$out $err"
done_testing
