#!/bin/bash
# kubehsm sign (external-signer.authentication.k8s.io/v1alpha1): a Go
# crypto.Signer that execs `kubehsm sign` completes real TLS 1.2 and 1.3
# client-authenticated handshakes with nginx using RSA (PSS) and ECDSA
# session keys; signatures are checked independently with OpenSSL.
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/kubeapi.sh"
need_root
need_cmd keyctl setpriv useradd openssl nginx go base64 softhsm2-util strace

PROBE="$KH_BUILDDIR/tests/probes/cache_probe"
[ -x "$PROBE" ] || skip_all "tests/probes/cache_probe not built"
[ -x "$KUBEHSM" ] || skip_all "helper/kubehsm not built"
chmod 0755 "$KH_BUILDDIR" "$KH_BUILDDIR/helper" "$KH_BUILDDIR/tests" 2>/dev/null || true
# No policy file: signer.key defaults to "session".  as_user resets the
# environment, so runu names the policy path in every call (a call may name
# another with an inner env); without it, kubehsm sign would read the
# installed default policy and the test would depend on what is installed.
NOCONF=$KH_TMP/no-such-kubehsm.conf

runu() {
	local user=$1; shift
	run as_user "$user" env KUBEHSM_CONFIG="$NOCONF" "$@"
	err=$(grep -v '^Joined session keyring: ' <<<"$err")
}

# --- the Go client, standard library only, built offline -------------------
SIGNER=$KH_TMP/signer
if ! out=$(cd "$KH_SRCDIR/tests/probes/signer" && GOCACHE=$KH_TMP/gocache GOPATH=$KH_TMP/gopath \
	GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GO111MODULE=on \
	go build -o "$SIGNER" main.go 2>&1); then
	echo "Bail out! go build tests/probes/signer failed: $out"; exit 1
fi
chmod 0755 "$SIGNER"

make_user carol
C=$(uid_of "$carol")

pki_init
pki_ca issuer "kubehsm test issuer"
pki_user_cert rsa issuer --cn "$carol" --o dev --type rsa
pki_user_cert ec issuer --cn "$carol" --o dev --type ec
pki_user_cert tok issuer --cn "$carol"
for n in rsa ec; do
	cat "$PKI_DIR/$n.pem" "$PKI_DIR/issuer.pem" >"$PKI_DIR/$n.chain"
	openssl pkey -in "$PKI_DIR/$n.key" -pubout -out "$PKI_DIR/$n.pub" 2>/dev/null
done
store() {   # store rsa|ec
	"$PROBE" store "$C" "$carol" user 600 --chain "$PKI_DIR/$1.chain" --key "$PKI_DIR/$1.key" \
		--token-cert "$PKI_DIR/tok.pem" --groups dev >/dev/null
}
kubeapi_start "$PKI_DIR/issuer.pem" || { echo "Bail out! nginx did not start"; exit 1; }
API='external-signer.authentication.k8s.io/v1alpha1'

# --- real TLS handshakes --------------------------------------------------
for kt in rsa ec; do
	store "$kt"
	want_opts='\*rsa\.PSSOptions'; [ "$kt" = ec ] && want_opts='crypto\.Hash'
	for v in 1.2 1.3; do
		runu "$carol" "$SIGNER" -kubehsm "$KUBEHSM" -ca "$KUBEAPI_CA" -tls "$v" \
			-url "$KUBEAPI_URL/kh-whoami" </dev/null
		like "$out" "^tls=$v status=200 signs=1 opts=$want_opts body=[0-9A-F]+ O=dev,CN=$carol\$" \
			"Go crypto/tls client, $kt session key via kubehsm sign: TLS $v client auth accepted by nginx" ||
			diag "$err"
	done
done
grep -q "serial=$(openssl x509 -in "$PKI_DIR/ec.pem" -noout -serial | cut -d= -f2)" "$KUBEAPI_DIR/logs/access.log"
ok $? "nginx verified the session certificate the signer presented"

# --- CertificateRequest ---------------------------------------------------
store rsa
runu "$carol" "$KUBEHSM" sign "{\"apiVersion\":\"$API\",\"kind\":\"CertificateRequest\",\"configuration\":{}}"
got=$(printf '%s' "$out" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["kind"], d["certificate"])')
want="CertificateResponse $(openssl x509 -in "$PKI_DIR/rsa.pem" -outform DER | base64 -w0)"
is "$got" "$want" "CertificateRequest: base64 DER of the session certificate"

# Dumping is off before the session key is read (strace; LeakSanitizer
# cannot run under it).
install -d -o "$carol" -m 0700 "$KH_TMP/carol-trace"
runu "$carol" env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -e trace=prctl,prlimit64,setrlimit,keyctl -o "$KH_TMP/carol-trace/sign" \
	"$KUBEHSM" sign "{\"apiVersion\":\"$API\",\"kind\":\"CertificateRequest\",\"configuration\":{}}"
is "$rc" 0 "sign under strace answers" || diag "$err"
is "$(awk '/PR_SET_DUMPABLE, (0|SUID_DUMP_DISABLE)/ && !d { d = NR }
	   /RLIMIT_CORE, ([{]rlim_cur=0, rlim_max=0[}]|0x[0-9a-f]+)/ && !c { c = NR }
	   /KEYCTL_READ/ && !r { r = NR }
	   END { print (d && c && r && d < r && c < r) ? "off" : "d=" d " c=" c " r=" r }' \
	"$KH_TMP/carol-trace/sign")" off \
	"sign: PR_SET_DUMPABLE 0 and RLIMIT_CORE 0 before the session key is read"

# --- signatures checked by OpenSSL ----------------------------------------
printf 'kubehsm signer test data' >"$KH_TMP/data"
sign_verify() {   # sign_verify KEY HASH(5|6|7) TYPE OPTS VERIFY-OPTS... ; desc from args
	local kt=$1 h=$2 type=$3 opts=$4; shift 4
	local md=sha256; [ "$h" = 6 ] && md=sha384; [ "$h" = 7 ] && md=sha512
	openssl dgst -"$md" -binary "$KH_TMP/data" >"$KH_TMP/digest"
	local req
	req=$(printf '{"apiVersion":"%s","kind":"SignRequest","configuration":{},"digest":"%s","signerOptsType":"%s","signerOpts":%s}' \
		"$API" "$(base64 -w0 "$KH_TMP/digest")" "$type" "$opts")
	runu "$carol" "$KUBEHSM" sign "$req"
	[ "$rc" -eq 0 ] || { fail "sign $kt $type $opts"; diag "$err"; return; }
	printf '%s' "$out" | /usr/bin/python3 -c 'import json,sys,base64; sys.stdout.buffer.write(base64.b64decode(json.load(sys.stdin)["signature"]))' >"$KH_TMP/sig"
	if openssl pkeyutl -verify -pubin -inkey "$PKI_DIR/$kt.pub" -in "$KH_TMP/digest" \
		-sigfile "$KH_TMP/sig" -pkeyopt "digest:$md" "$@" >/dev/null 2>&1; then
		pass "openssl verifies $kt $type $opts ($md${*:+, $*})"
	else fail "openssl verifies $kt $type $opts ($md ${*})"; fi
}
for h in 5 6 7; do
	sign_verify rsa "$h" crypto.Hash "\"$h\"" -pkeyopt rsa_padding_mode:pkcs1
done
sign_verify rsa 5 '*rsa.PSSOptions' '"{\"SaltLength\":-1,\"Hash\":5}"' \
	-pkeyopt rsa_padding_mode:pss -pkeyopt rsa_pss_saltlen:digest
sign_verify rsa 6 '*rsa.PSSOptions' '"{\"SaltLength\":0,\"Hash\":6}"' \
	-pkeyopt rsa_padding_mode:pss -pkeyopt rsa_pss_saltlen:max
sign_verify rsa 7 '*rsa.PSSOptions' '{"SaltLength":20,"Hash":7}' \
	-pkeyopt rsa_padding_mode:pss -pkeyopt rsa_pss_saltlen:20
store ec
for h in 5 6 7; do
	sign_verify ec "$h" crypto.Hash "$h"
done
# ECDSA signatures are DER (ECDSA-Sig-Value), as Go's crypto.Signer returns.
openssl asn1parse -inform DER -in "$KH_TMP/sig" >/dev/null 2>&1
ok $? "the ECDSA signature is a DER ECDSA-Sig-Value"

# --- bad input ------------------------------------------------------------
D32=$(head -c 32 /dev/zero | base64 -w0)
D20=$(head -c 20 /dev/zero | base64 -w0)
bad() {   # bad JSON DESC REGEX
	runu "$carol" "$KUBEHSM" sign "$1"
	if [ "$rc" -ne 0 ] && [ -z "$out" ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] &&
	   grep -Eq -- "$3" <<<"$err"; then pass "$2: one clear line ($err)"
	else fail "$2"; diag "rc=$rc out='$out' err='$err'"; fi
}
bad '{"apiVersion":' "malformed JSON" 'JSON'
bad "{\"apiVersion\":\"$API\",\"kind\":\"SignRequest\",\"configuration\":{},\"digest\":\"$D20\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":\"5\"}" \
	"a 20-byte digest for SHA-256" 'digest is 20 bytes'
bad "{\"apiVersion\":\"$API\",\"kind\":\"SignRequest\",\"configuration\":{},\"digest\":\"$D32\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":\"4\"}" \
	"an unknown hash (Go crypto.Hash 4)" 'hash|SHA|unsupported'
bad "{\"apiVersion\":\"$API\",\"kind\":\"SignRequest\",\"configuration\":{},\"digest\":\"$D32\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":\"{\\\"SaltLength\\\":-1,\\\"Hash\\\":5}\"}" \
	"PSS with an EC session key" 'PSS|RSA|EC'
bad "{\"apiVersion\":\"v9\",\"kind\":\"SignRequest\"}" "wrong apiVersion" 'apiVersion'

runu "$carol" "$KUBEHSM" sign "{\"apiVersion\":\"$API\",\"kind\":\"SignRequest\",\"configuration\":{\"pin\":\"123456\"},\"digest\":\"$D32\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":\"5\"}"
if [ "$rc" -eq 0 ] && grep -q '"kind":"SignResponse"' <<<"$out" && grep -qi 'warning.*pin' <<<"$err" &&
   ! grep -q 123456 <<<"$err"; then pass "a pin in the configuration: warning on stderr (PIN not echoed), signing succeeds"
else fail "pin in configuration"; diag "rc=$rc out='$out' err='$err'"; fi

# --- signer.key from a root-owned policy; signer.key = "token" ------------
# A policy whose issuer PIN file sits in a root-only directory: an
# unprivileged caller must still be able to read signer.key.
POL=$KH_TMP/policy; mkdir -p "$POL/secret"; chmod 0755 "$POL"; chmod 0700 "$POL/secret"
echo 0000 >"$POL/secret/issuer.pin"; chmod 0600 "$POL/secret/issuer.pin"
write_policy() {   # write_policy session|token
	sed -e "s|/etc/kubehsm/users-ca.pem|$PKI_DIR/issuer.pem|; s|/etc/kubehsm/issuer.pem|$PKI_DIR/issuer.pem|" \
	    -e "s|/etc/kubehsm/issuer.pin|$POL/secret/issuer.pin|" \
	    -e "s|^\( *key = \)\"session\";|\1\"$1\";|" -e "s|cache_pin = false|cache_pin = true|" \
	    "$KH_SRCDIR/conf/kubehsm.conf" >"$POL/kubehsm.conf"
	chmod 0644 "$POL/kubehsm.conf"
}
write_policy session
runu "$carol" env KUBEHSM_CONFIG="$POL/kubehsm.conf" "$KUBEHSM" sign "{\"apiVersion\":\"$API\",\"kind\":\"CertificateRequest\",\"configuration\":{}}"
is "$rc" 0 "an unprivileged caller reads signer.key from the root-owned policy (PIN file out of reach)" || diag "$err"

# The user's token (SoftHSM) holds the token key; the PIN is cached at login.
pki_token_init test 4321 && pki_token_import test 4321 tok kube 01 && pki_token_give test "$carol"
openssl pkey -in "$PKI_DIR/tok.key" -pubout -out "$PKI_DIR/tok.pub" 2>/dev/null
"$PROBE" store "$C" "$carol" user 600 --chain "$PKI_DIR/ec.chain" --key "$PKI_DIR/ec.key" \
	--token-cert "$PKI_DIR/tok.pem" --pin 4321 >/dev/null
write_policy token
openssl dgst -sha256 -binary "$KH_TMP/data" >"$KH_TMP/digest"
req=$(printf '{"apiVersion":"%s","kind":"SignRequest","configuration":{},"digest":"%s","signerOptsType":"crypto.Hash","signerOpts":"5"}' \
	"$API" "$(base64 -w0 "$KH_TMP/digest")")
runu "$carol" env KUBEHSM_CONFIG="$POL/kubehsm.conf" SOFTHSM2_CONF="$SOFTHSM2_CONF" "$KUBEHSM" sign "$req"
printf '%s' "$out" | /usr/bin/python3 -c 'import json,sys,base64; sys.stdout.buffer.write(base64.b64decode(json.load(sys.stdin)["signature"]))' >"$KH_TMP/sig" 2>/dev/null
openssl pkeyutl -verify -pubin -inkey "$PKI_DIR/tok.pub" -in "$KH_TMP/digest" -sigfile "$KH_TMP/sig" \
	-pkeyopt digest:sha256 >/dev/null 2>&1
ok $? "signer.key = token: signed on the user's token with the cached PIN, verified by openssl" || diag "$err"
runu "$carol" env KUBEHSM_CONFIG="$POL/kubehsm.conf" "$KUBEHSM" sign "{\"apiVersion\":\"$API\",\"kind\":\"CertificateRequest\",\"configuration\":{}}"
got=$(printf '%s' "$out" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["certificate"])' 2>/dev/null)
is "$got" "$(openssl x509 -in "$PKI_DIR/tok.pem" -outform DER | base64 -w0)" \
	"signer.key = token: CertificateRequest answers the token certificate"
runu "$carol" env KUBEHSM_CONFIG="$POL/kubehsm.conf" "$KUBEHSM" sign --key session "{\"apiVersion\":\"$API\",\"kind\":\"CertificateRequest\",\"configuration\":{}}"
got=$(printf '%s' "$out" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["certificate"])' 2>/dev/null)
is "$got" "$(openssl x509 -in "$PKI_DIR/ec.pem" -outform DER | base64 -w0)" "--key session overrides the policy"

# A cached PIN the token refuses is forgotten at once: every kubectl
# request would otherwise spend one of the token's tries (#13).  The shim
# in front of SoftHSM counts C_Login.
# (Named in a policy: a copy it trusts, whatever the build tree's modes.)
kh_trusted SHIM "$KH_BUILDDIR/tests/probes/p11shim/.libs/libkhp11shim.so"
"$PROBE" store "$C" "$carol" user 600 --chain "$PKI_DIR/ec.chain" --key "$PKI_DIR/ec.key" \
	--token-cert "$PKI_DIR/tok.pem" --pin 9999 >/dev/null
sed -i "s|^\( *module = \)\"[^\"]*\";|\1\"$SHIM\";|" "$POL/kubehsm.conf"
install -o "$carol" -m 0600 /dev/null "$KH_TMP/carol-shim.log"
shim_sign() {
	runu "$carol" env KUBEHSM_CONFIG="$POL/kubehsm.conf" SOFTHSM2_CONF="$SOFTHSM2_CONF" \
		KH_SHIM_LOG="$KH_TMP/carol-shim.log" "$KUBEHSM" sign "$req"
}
shim_sign
like "$rc:$err" "^1:.*wrong PIN.*cached PIN was forgotten" \
	"signer.key = token, a stale cached PIN: refused, and the PIN is forgotten"
is "$(grep -c C_Login "$KH_TMP/carol-shim.log")" 1 "... after exactly one token try"
shim_sign
like "$rc:$err" "^1:.*no cached PIN" "the next request finds no cached PIN"
is "$(grep -c C_Login "$KH_TMP/carol-shim.log")" 1 "... and tries the token no more"

# The files the policy names are checked when signing on the token (the
# module is loaded then), and not opened for a session signature.
mkdir -p "$KH_TMP/ww"; chmod 0777 "$KH_TMP/ww"
cp "$SHIM" "$KH_TMP/ww/shim.so"; chmod 0644 "$KH_TMP/ww/shim.so"
sed -i "s|^\( *module = \)\"[^\"]*\";|\1\"$KH_TMP/ww/shim.so\";|" "$POL/kubehsm.conf"
shim_sign
like "$rc:$err" "^1:kubehsm: sign: .*ww/shim.so.*(group/others|mode)" \
	"signer.key = token with the module in a directory others may write: refused, naming it"
sed -i "s|^\( *key = \)\"token\";|\1\"session\";|" "$POL/kubehsm.conf"
runu "$carol" env KUBEHSM_CONFIG="$POL/kubehsm.conf" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -f -e trace=open,openat,stat,newfstatat,readlink -o "$KH_TMP/carol-trace/session" \
	"$KUBEHSM" sign "{\"apiVersion\":\"$API\",\"kind\":\"CertificateRequest\",\"configuration\":{}}"
is "$rc" 0 "signer.key = session, the same policy: signs" || diag "$err"
unlike "$(cat "$KH_TMP/carol-trace/session")" "ww/shim.so|issuer\.pem" \
	"... without opening or checking the files the policy names"

"$PROBE" revoke "$C" >/dev/null
runu "$carol" "$KUBEHSM" sign "{\"apiVersion\":\"$API\",\"kind\":\"CertificateRequest\",\"configuration\":{}}"
if [ "$rc" -ne 0 ] && [ -z "$out" ] && grep -q 'log in' <<<"$err"; then pass "no session: sign refuses and says to log in ($err)"
else fail "sign without a session"; diag "rc=$rc out='$out' err='$err'"; fi

done_testing
