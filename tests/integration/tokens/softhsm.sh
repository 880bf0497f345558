#!/bin/bash
# tests/integration/tokens/softhsm.sh — lib/kh_pkcs11 and lib/kh_x509 against real
# SoftHSM2 tokens, driven through tests/probes/token_probe.  Runs unprivileged;
# as root it also checks that a token handed to a plain user works for them.
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"

PROBE=$KH_BUILDDIR/tests/probes/token_probe
need_cmd openssl softhsm2-util pkcs11-tool valgrind
[ -x "$PROBE" ] || skip_all "tests/probes/token_probe is not built"
[ -r /usr/lib/softhsm/libsofthsm2.so ] || skip_all "needs SoftHSM2 (apt-get install softhsm2)"

plan_auto

# ---- build the PKI and the tokens ----
pki_init
setup_ok=0
{
	pki_ca users "Users CA" &&
	pki_ca issuerca "Kube Issuer CA" &&
	pki_ca rogue "Users CA" &&             # same name, other key: untrusted
	pki_user_cert alice users --cn alice --o dev --o ops --ou platform --uid asmith \
		--email alice@example.org --upn alice@corp.example &&
	pki_user_cert bob users --cn bob --type rsa &&
	pki_user_cert old users --cn old --not-before 20200101000000Z --not-after 20210101000000Z &&
	pki_user_cert gone users --cn gone &&
	pki_revoke users gone &&
	pki_user_cert eve rogue --cn eve &&
	pki_token_init alice 1234 && pki_token_import alice 1234 alice kube 01 &&
	pki_token_init bob 5678 && pki_token_import bob 5678 bob kube 02 &&
	pki_token_init carol 2468 && pki_token_keygen carol 2468 kube 03 &&
	pki_user_cert carol users --cn carol --pubkey "$PKI_DIR/carol-kube.pub.pem" &&
	pki_token_import_cert carol 2468 "$PKI_DIR/carol.pem" kube 03 &&
	pki_token_init old 1111 && pki_token_import old 1111 old kube 01 &&
	pki_token_init gone 1111 && pki_token_import gone 1111 gone kube 01 &&
	pki_token_init eve 1111 && pki_token_import eve 1111 eve kube 01 &&
	# alice's certificate over bob's key: the proof of possession must fail
	pki_token_init mixed 1111 &&
	pki_token_import mixed 1111 bob kube 01 &&
	pki_p11tool --token-label mixed --login --pin 1111 --delete-object --type cert --id 01 >/dev/null 2>&1 &&
	pki_token_import_cert mixed 1111 "$PKI_DIR/alice.pem" kube 01 &&
	pki_issuer_token kubehsm-host 9999 issuerca issuer &&
	setup_ok=1
} >"$KH_TMP/setup.log" 2>&1
ok $((1 - setup_ok)) "CAs, certificates and SoftHSM tokens created" ||
	{ diag "$(cat "$KH_TMP/setup.log")"; done_testing; exit 1; }

# ---- finding tokens ----
run "$PROBE" find alice
is "$rc" 0 "find: token found by label"
like "$out" "serial=$(pki_token_serial alice)\$" "find: serial is the token's"
like "$out" "flags=\$" "find: no PIN flags on a fresh token"

run "$PROBE" find nosuch
is "$rc" 1 "find: missing token fails"
like "$err" "not-found: no token labelled 'nosuch'" "find: missing token is not-found"

run "$PROBE" find alic
like "$err" "not-found" "find: a label prefix does not match"

run "$PROBE" -m /nonexistent/libpkcs11.so find alice
like "$err" "cannot load PKCS#11 module /nonexistent/libpkcs11.so: .*No such file" \
	"bad module path: clear error naming the path"
is "$(grep -c . <<<"$err")" 1 "bad module path: exactly one line of output (libp11 kept quiet)"
run "$PROBE" -m /etc/passwd find alice
like "$err" "cannot load PKCS#11 module /etc/passwd" "a non-library module path is refused"

# ---- PINs ----
run "$PROBE" login alice 0000
like "$err" "auth: wrong PIN for token 'alice'" "wrong PIN: auth error"
run "$PROBE" find alice
like "$out" "flags=count_low," "wrong PIN: token now reports PIN count low"
like "$(pki_p11tool --list-token-slots 2>/dev/null | grep -A3 'token label *: alice$')" \
	"user PIN count low" "wrong PIN: pkcs11-tool sees the count-low flag too"
run "$PROBE" login alice 1234
is "$out" "login ok" "right PIN: login"
run "$PROBE" find alice
like "$out" "flags=\$" "right PIN: count-low cleared by the good login"

# ---- proof of possession ----
run "$PROBE" pop alice 1234 kube
like "$out" "pop ok" "proof of possession: EC key (imported)"
like "$out" "key=ec" "proof of possession: it was the EC key"
run "$PROBE" pop alice 1234 "" 01
like "$out" "pop ok" "proof of possession: key found by id alone"
run "$PROBE" pop bob 5678 kube 02
like "$out" "pop ok" "proof of possession: RSA-2048 key"
like "$out" "key=rsa" "proof of possession: it was the RSA key"
run "$PROBE" pop carol 2468 kube
like "$out" "pop ok" "proof of possession: key generated on the token"
# The token key's signatures (lib/kh_p11_raw_key: CKM_ECDSA; CKM_RSA_PKCS,
# and CKM_RSA_X_509 under OpenSSL's PSS padding) in every scheme kubehsm
# sign offers, each verified by OpenSSL with the certificate.
run "$PROBE" schemes alice 1234 kube
like "$out" "schemes ec 3 of 3 verified" "token EC key: ECDSA with SHA-256/384/512, each verified by OpenSSL"
run "$PROBE" schemes bob 5678 kube
like "$out" "schemes rsa 12 of 12 verified" \
	"token RSA key: PKCS#1 v1.5 and PSS (3 salt rules) with SHA-256/384/512, each verified by OpenSSL"
run "$PROBE" pop mixed 1111 kube
like "$err" "auth: proof of possession failed" "proof of possession: certificate over another key fails"
run "$PROBE" pop alice 1234 nokey
like "$err" "not-found: token 'alice' holds no certificate for key nokey" "missing key label: not-found"
run "$PROBE" pop alice 1234 kube 02
like "$err" "not-found" "label and id must both match"

# ---- the whole user path: validate, map, login, proof ----
run "$PROBE" user alice 1234 kube 01 "$PKI_DIR/users.pem" "$PKI_DIR/users.crl" cn
is "$rc" 0 "user path: alice validates against the users CA (with CRL)"
like "$out" "user=alice" "user path: mapped by CN"
like "$out" "uri=pkcs11:token=alice;object=kube;id=%01;serial=$(pki_token_serial alice)\$" \
	"user path: token URI for the record"
run "$PROBE" user alice 1234 kube 01 "$PKI_DIR/users.pem" "" uid
like "$out" "user=asmith" "user path: mapped by UID"
run env KH_PROBE_DOMAINS=example.org "$PROBE" user alice 1234 kube 01 "$PKI_DIR/users.pem" "" email
like "$out" "user=alice" "user path: mapped by email local part (domain in trust.domains)"
run "$PROBE" map "$PKI_DIR/alice.pem" upn CORP.Example
is "$out" "alice" "mapping: UPN local part, domain matched without regard to case"
# The local part alone names a local user only within trust.domains: with a
# CA that certifies several domains, alice@corp.example is not local alice
# for a host of example.org (#13).
run "$PROBE" map "$PKI_DIR/alice.pem" upn example.org
like "$rc:$err" "^[1-9].*domain 'corp.example' is not one of trust.domains" \
	"mapping: a UPN of another domain is refused"
run "$PROBE" map "$PKI_DIR/alice.pem" upn example.corp.example
like "$err" "is not one of trust.domains" "mapping: the whole domain must match, not a suffix"
run "$PROBE" map "$PKI_DIR/alice.pem" email
like "$err" "is not one of trust.domains" "mapping: no trust.domains, no email mapping"
run "$PROBE" map "$PKI_DIR/bob.pem" email
like "$err" "refused: certificate subject has no emailAddress" "mapping: no email, clear refusal"

run "$PROBE" user old 1111 kube 01 "$PKI_DIR/users.pem" "" cn
like "$err" "expired: certificate 'CN=old' expired on Jan  1 00:00:00 2021 GMT" "expired certificate refused"
run "$PROBE" user eve 1111 kube 01 "$PKI_DIR/users.pem" "" cn
like "$err" "refused: certificate 'CN=eve' has an untrusted issuer" "certificate from an untrusted CA refused"
run "$PROBE" user gone 1111 kube 01 "$PKI_DIR/users.pem" "$PKI_DIR/users.crl" cn
like "$err" "revoked: certificate 'CN=gone' has been revoked" "revoked certificate refused with the CRL"
run "$PROBE" user gone 1111 kube 01 "$PKI_DIR/users.pem" "" cn
is "$rc" 0 "revoked certificate passes when no CRL is configured"
run "$PROBE" validate "$PKI_DIR/alice.pem" "$PKI_DIR/users.pem" "$PKI_DIR/issuerca.crl"
like "$err" "holds no CRL from the issuer" "a CRL from the wrong CA fails closed"
run "$PROBE" validate "$PKI_DIR/alice.pem" "$PKI_DIR/issuerca.pem"
like "$err" "untrusted issuer" "certificate checked against the wrong CA file"

# ---- issuer key from a URI, minting ----
URI="pkcs11:token=kubehsm-host;object=issuer"
run "$PROBE" mint "$URI" "$PKI_DIR/issuer.pin" "$PKI_DIR/issuer.pem" alice dev,ops 28800 ec-p256 \
	"$KH_TMP/session.pem" "$KH_TMP/session.key"
is "$out" "minted" "mint: session certificate issued with the issuer key on the token"
run openssl verify -CAfile "$PKI_DIR/issuerca.pem" -untrusted "$PKI_DIR/issuer.pem" \
	-purpose sslclient "$KH_TMP/session.pem"
like "$out" ": OK\$" "mint: openssl verify -purpose sslclient accepts it"
text=$(openssl x509 -in "$KH_TMP/session.pem" -noout -text)
# RFC 2253 (most specific first, no spaces): the CLI's default layout of a
# name changed in OpenSSL 3.5.
is "$(openssl x509 -in "$KH_TMP/session.pem" -noout -subject -nameopt RFC2253)" "subject=O=ops,O=dev,CN=alice" \
	"mint: subject CN=alice with one O per group"
like "$text" "X509v3 Extended Key Usage: *\$" "mint: has EKU"
like "$(grep -A1 'Extended Key Usage' <<<"$text")" "TLS Web Client Authentication\$" "mint: EKU clientAuth only"
like "$(grep -A1 'Key Usage: critical' <<<"$text" | head -2)" "Digital Signature\$" "mint: KU critical digitalSignature"
like "$(grep -A1 'Basic Constraints' <<<"$text")" "critical" "mint: basicConstraints critical"
like "$(grep -A1 'Basic Constraints' <<<"$text")" "CA:FALSE" "mint: CA:FALSE"
like "$text" "Signature Algorithm: ecdsa-with-SHA256" "mint: signed with SHA-256"
run openssl pkey -in "$KH_TMP/session.key" -noout -check
is "$rc" 0 "mint: the session key PEM is a valid private key"
is "$(openssl x509 -in "$KH_TMP/session.pem" -noout -pubkey | openssl sha256)" \
   "$(openssl pkey -in "$KH_TMP/session.key" -pubout | openssl sha256)" "mint: certificate is for the session key"
# window: notBefore 5 minutes back, notAfter 8 hours on
nb=$(date -d "$(openssl x509 -in "$KH_TMP/session.pem" -noout -startdate | cut -d= -f2)" +%s)
na=$(date -d "$(openssl x509 -in "$KH_TMP/session.pem" -noout -enddate | cut -d= -f2)" +%s)
now=$(date +%s)
ok $(( (now - nb) >= 290 && (now - nb) <= 320 ? 0 : 1 )) "mint: notBefore is now - 5 minutes ($((now - nb)) s)"
ok $(( (na - now) >= 28780 && (na - now) <= 28800 ? 0 : 1 )) "mint: notAfter is now + ttl ($((na - now)) s)"
is "$(grep -c 'BEGIN CERTIFICATE' "$KH_TMP/session.pem")" 2 "mint: chain = session cert + issuer cert"

run "$PROBE" mint "$URI" "$PKI_DIR/issuer.pin" "$PKI_DIR/issuer.pem" bob "" 3600 rsa-2048 \
	"$KH_TMP/s2.pem" "$KH_TMP/s2.key"
run openssl verify -CAfile "$PKI_DIR/issuerca.pem" -untrusted "$PKI_DIR/issuer.pem" \
	-purpose sslclient "$KH_TMP/s2.pem"
like "$out" ": OK\$" "mint: RSA session key, no groups, verifies"
like "$(openssl x509 -in "$KH_TMP/s2.pem" -noout -ext keyUsage)" "Digital Signature, Key Encipherment" \
	"mint: RSA session certificate also allows keyEncipherment"

(umask 077; printf '0000\n' >"$KH_TMP/bad.pin")
run "$PROBE" mint "$URI" "$KH_TMP/bad.pin" "$PKI_DIR/issuer.pem" alice "" 3600 ec-p256 \
	"$KH_TMP/x.pem" "$KH_TMP/x.key"
like "$err" "auth: wrong PIN for token 'kubehsm-host'" "mint: wrong issuer PIN is an auth error"
run "$PROBE" mint "pkcs11:token=kubehsm-host;object=issuer;pin-value=9999" "$PKI_DIR/issuer.pin" \
	"$PKI_DIR/issuer.pem" alice "" 3600 ec-p256 "$KH_TMP/x.pem" "$KH_TMP/x.key"
like "$err" "config: PKCS#11 URI: unsupported attribute 'pin-value'" "mint: unknown URI attribute refused"
run "$PROBE" mint "pkcs11:token=kubehsm-host;object=nosuch" "$PKI_DIR/issuer.pin" \
	"$PKI_DIR/issuer.pem" alice "" 3600 ec-p256 "$KH_TMP/x.pem" "$KH_TMP/x.key"
like "$err" "not-found: token 'kubehsm-host' holds no private key nosuch" "mint: missing issuer object"
run "$PROBE" mint "pkcs11:token=kubehsm-host;object=issuer;serial=0000" "$PKI_DIR/issuer.pin" \
	"$PKI_DIR/issuer.pem" alice "" 3600 ec-p256 "$KH_TMP/x.pem" "$KH_TMP/x.key"
like "$err" "not-found: token 'kubehsm-host' has serial" "mint: serial in the URI must match"
run "$PROBE" mint "$URI" "$PKI_DIR/issuer.pin" "$PKI_DIR/alice.pem" alice "" 3600 ec-p256 \
	"$KH_TMP/x.pem" "$KH_TMP/x.key"
like "$err" "config: the first certificate in .*alice.pem is not a CA certificate" \
	"mint: issuer cert_file that is not the issuer's is refused"
ln -s "$PKI_DIR/issuer.pin" "$KH_TMP/link.pin"
run "$PROBE" pinfile "$KH_TMP/link.pin"
like "$err" "symbolic links are refused" "PIN file behind a symlink refused"
run "$PROBE" pinfile "$PKI_DIR/issuer.pin"
is "$out" "pin length 4" "PIN file: one trailing newline stripped"

# ---- PIN lockout and token removal, through tests/probes/p11shim ----
SHIM=$KH_BUILDDIR/tests/probes/p11shim/.libs/libkhp11shim.so
if [ -r "$SHIM" ]; then
	export KH_P11SHIM_DIR=$KH_TMP/shim
	mkdir -p "$KH_P11SHIM_DIR"
	logins() { if [ -f "$KH_P11SHIM_DIR/logins" ]; then grep -c . "$KH_P11SHIM_DIR/logins"; else echo 0; fi; }
	run "$PROBE" -m "$SHIM" pop alice 1234 kube
	like "$out" "pop ok" "shim: forwards to SoftHSM (proof of possession through it)"
	is "$(logins)" 1 "shim: a good login is exactly one C_Login"
	: >"$KH_P11SHIM_DIR/logins"
	run "$PROBE" -m "$SHIM" login alice 0000
	like "$err" "auth: wrong PIN" "shim: wrong PIN is an auth error"
	is "$(logins)" 1 "a wrong PIN costs exactly one C_Login"
	run "$PROBE" login alice 1234   # clear SoftHSM's count-low again
	echo "final_try count_low" >"$KH_P11SHIM_DIR/flags"
	run "$PROBE" -m "$SHIM" find alice
	like "$out" "flags=count_low,final_try," "final-try and count-low are reported before login"
	echo locked >"$KH_P11SHIM_DIR/flags"
	: >"$KH_P11SHIM_DIR/logins"
	run "$PROBE" -m "$SHIM" login alice 1234
	like "$err" "locked: token 'alice' is locked" "a locked token is refused"
	is "$(logins)" 0 "a locked token is not tried: no C_Login at all"
	rm -f "$KH_P11SHIM_DIR/flags"
	touch "$KH_P11SHIM_DIR/vanish"
	# libp11 0.4.13 (Debian 13) waited for ever here, in its session pool
	# (issue #29): nothing after C_Login goes through libp11 now.  Bound:
	# 30 s; it takes milliseconds.
	t0=$(date +%s%N)
	run timeout 30 "$PROBE" -m "$SHIM" pop alice 1234 kube
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	like "$rc:$err" "^1:token_probe: not-found: token 'alice' was removed\$" \
		"a token removed after login: not-found, one clear line, within 30 s ($ms ms)"
	rm -f "$KH_P11SHIM_DIR/vanish"
	unset KH_P11SHIM_DIR
else
	skip "tests/probes/p11shim not built"
fi

# ---- leaks, costs ----
# memcheck (tests/harness/tap.sh): valgrind here, ASan/LSan in a sanitizer build.
run memcheck "$PROBE" user bob 5678 kube 02 "$PKI_DIR/users.pem" "$PKI_DIR/users.crl" cn
is "$rc" 0 "memcheck: user path (RSA) — no errors, no definite leaks"
[ "$rc" = 0 ] || diag "$err"
run memcheck "$PROBE" loop 20 alice 1234 kube
is "$rc" 0 "memcheck: 20 x load/login/sign/unload — no errors, no definite leaks"
[ "$rc" = 0 ] || diag "$err"
run memcheck "$PROBE" mint "$URI" "$PKI_DIR/issuer.pin" "$PKI_DIR/issuer.pem" alice dev 3600 ec-p256 \
	"$KH_TMP/v.pem" "$KH_TMP/v.key"
is "$rc" 0 "memcheck: mint with the token issuer key — no errors, no definite leaks"
[ "$rc" = 0 ] || diag "$err"
run "$PROBE" loop 1000 alice 1234 kube
is "$out" "loop ok 1000" "1000 x load/login/sign/unload in one process"
KH_PROBE_TIME=1 run "$PROBE" user bob 5678 kube 02 "$PKI_DIR/users.pem" "" cn
diag "RSA user path: $(grep '^time' <<<"$err" | tr '\n' ' ')"
KH_PROBE_TIME=1 run "$PROBE" user alice 1234 kube 01 "$PKI_DIR/users.pem" "" cn
diag "EC user path: $(grep '^time' <<<"$err" | tr '\n' ' ')"

# ---- a token handed to a plain user ----
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1 && id nobody >/dev/null 2>&1; then
	pki_token_init nobodytok 4321 >/dev/null 2>&1 && pki_user_cert nb users --cn nobody >/dev/null 2>&1 &&
		pki_token_import nobodytok 4321 nb kube 01 >/dev/null 2>&1 && pki_token_give nobodytok nobody
	run setpriv --reuid nobody --regid nogroup --clear-groups env SOFTHSM2_CONF="$SOFTHSM2_CONF" \
		"$PROBE" pop nobodytok 4321 kube
	like "$out" "pop ok" "a token given to a plain user works for that user"
else
	skip "not root: cannot hand a token to another user"
fi

done_testing
