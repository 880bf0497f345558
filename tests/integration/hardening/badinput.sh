#!/bin/bash
# badinput: a table of hostile inputs against the real binaries, on every
# input surface — KUBERNETES_EXEC_INFO (kubehsm exec), the signer request
# argument (kubehsm sign), the policy file (kubehsm config check) and keyring
# records with valid JSON but forged fields (read through kubehsm exec).
#
# Every case must end in one clear error: a non-zero exit below 128 (no
# crash; under the sanitizer build ASan/UBSan/LSan findings fail the case
# through their multi-line report), nothing on stdout, exactly one stderr
# line beginning "kubehsm: ", within a timeout (no hang), and the user's
# cache unchanged (the key list, each key's description and a hash of each
# payload, read as the user, before == after).  A user with a valid session
# is set up first, and positive controls prove the same invocations serve it.
#
# Size limits: Linux refuses any single argv or environment string longer
# than MAX_ARG_STRLEN (128 KiB) at execve, so no caller can hand kubehsm a
# multi-MB KUBERNETES_EXEC_INFO or request; the largest values that can
# reach it (just under 128 KiB) are used here, and the multi-MB parser caps
# are exercised by the fuzzers and unit tests.  A raw NUL byte cannot be
# inside an environment or argv string either; "\u0000" escapes are used
# there, raw NULs in the policy file.
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
need_root
need_cmd keyctl setpriv useradd openssl python3 timeout sha256sum base64

PROBE="$KH_BUILDDIR/tests/probes/cache_probe"
[ -x "$PROBE" ] || skip_all "tests/probes/cache_probe not built"
[ -x "$KUBEHSM" ] || skip_all "helper/kubehsm not built"
chmod 0755 "$KH_BUILDDIR" "$KH_BUILDDIR/helper" "$KH_BUILDDIR/tests" 2>/dev/null || true
# No policy file: kubehsm sign's signer.key defaults to "session".
NOCONF=$KH_TMP/no-such-kubehsm.conf

make_user alice
make_user bob
A=$(uid_of "$alice"); B=$(uid_of "$bob")

pki_init
pki_ca issuer "kubehsm test issuer" || { echo "Bail out! pki"; exit 1; }
pki_user_cert rsa issuer --cn "$alice" --o dev --type rsa
pki_user_cert ec issuer --cn "$alice" --o dev --type ec
pki_user_cert tok issuer --cn "$alice"
pki_user_cert bobsess issuer --cn "$bob" --o dev --type ec
for n in rsa ec bobsess; do cat "$PKI_DIR/$n.pem" "$PKI_DIR/issuer.pem" >"$PKI_DIR/$n.chain"; done
mat() { echo --chain "$PKI_DIR/$1.chain" --key "$PKI_DIR/$1.key" --token-cert "$PKI_DIR/tok.pem" --groups dev; }
# alice: an RSA session (default issuer) and an EC one (issuer "ec").
"$PROBE" store "$A" "$alice" user 3600 $(mat rsa) >/dev/null &&
	"$PROBE" store "$A" "$alice" user 3600 --issuer ec $(mat ec) >/dev/null ||
	{ echo "Bail out! cannot store alice's sessions"; exit 1; }

# snap USER: what the user's keyring holds, as the user sees it.
snap() {
	as_user "$1" sh -c 'for k in $(keyctl rlist @u); do
		printf "%s %s %s\n" "$k" "$(keyctl rdescribe "$k")" "$(keyctl pipe "$k" | sha256sum)"
	done' 2>/dev/null
}

# bad NAME USER CMD...: CMD (run as USER through as_user) must fail cleanly,
# leaving $SNAPUSER's (default USER's) cache as it was.
TMO=${KH_BADINPUT_TIMEOUT:-30}
ncases=0
bad() {
	local name=$1 user=$2 before after why="" cacheuser=${SNAPUSER:-$2}; shift 2
	ncases=$((ncases + 1))
	before=$(snap "$cacheuser")
	run as_user "$user" timeout "$TMO" "$@"
	err=$(grep -v '^Joined session keyring: ' <<<"$err")
	after=$(snap "$cacheuser")
	[ "$rc" -ne 0 ] || why="$why exit 0;"
	[ "$rc" -lt 124 ] || why="$why exit $rc (timeout or crash);"
	[ -z "$out" ] || why="$why stdout not empty;"
	[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [ -n "$err" ] || why="$why stderr is not one line;"
	[[ "$err" == "kubehsm: "* ]] || why="$why stderr does not begin 'kubehsm: ';"
	[ "$before" = "$after" ] && [ -n "$before" ] || why="$why cache changed (or empty);"
	if [ -z "$why" ]; then
		pass "$name -> exit $rc: ${err:0:110}"
	else
		fail "$name:$why"
		diag "rc=$rc"; diag "stdout: ${out:0:300}"; diag "stderr: ${err:0:600}"
	fi
}

# --- positive controls: the same invocations serve a valid session ----------
V1='"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"'
GOOD="{$V1,\"spec\":{\"interactive\":false}}"
run as_user "$alice" env KUBERNETES_EXEC_INFO="$GOOD" "$KUBEHSM" exec
like "$out" '"kind":"ExecCredential".*BEGIN PRIVATE KEY' "control: kubehsm exec serves alice's session" || diag "$err"
SA='"apiVersion":"external-signer.authentication.k8s.io/v1alpha1"'
D32=$(head -c 32 /dev/urandom | base64 -w0)
D48=$(head -c 48 /dev/urandom | base64 -w0)
sreq() { printf '{%s,"kind":"SignRequest","digest":"%s","signerOptsType":"%s","signerOpts":%s}' "$SA" "$1" "$2" "$3"; }
pss() { sreq "$1" '*rsa.PSSOptions' "\"{\\\"SaltLength\\\":$2,\\\"Hash\\\":$3}\""; }
run as_user "$alice" env KUBEHSM_CONFIG="$NOCONF" "$KUBEHSM" sign "$(pss "$D32" -1 5)"
like "$out" '"kind":"SignResponse".*"signature":"[A-Za-z0-9+/]{300,}' "control: kubehsm sign answers a PSS SignRequest" || diag "$err"
run as_user "$alice" env KUBEHSM_CONFIG="$NOCONF" "$KUBEHSM" sign --issuer ec "$(sreq "$D32" crypto.Hash 5)"
like "$out" '"kind":"SignResponse"' "control: kubehsm sign --issuer ec answers an ECDSA SignRequest" || diag "$err"

# --- KUBERNETES_EXEC_INFO ------------------------------------------------------
ex() { bad "exec: $1" "$alice" env KUBERNETES_EXEC_INFO="$2" "$KUBEHSM" exec; }
bad "exec: KUBERNETES_EXEC_INFO unset" "$alice" "$KUBEHSM" exec
ex "empty value" ""
ex "null" "null"
ex "array" "[]"
ex "a string" '"ExecCredential"'
ex "a number" "42"
ex "empty object" "{}"
ex "not JSON" "hello"
ex "truncated" '{"apiVersion":'
ex "trailing garbage" "$GOOD x"
ex "two documents" "$GOOD$GOOD"
ex "duplicate apiVersion" "{$V1,\"apiVersion\":\"client.authentication.k8s.io/v1\",\"spec\":{}}"
ex "duplicate spec" "{$V1,\"spec\":{},\"spec\":{}}"
ex "duplicate spec.interactive" "{$V1,\"spec\":{\"interactive\":false,\"interactive\":true}}"
ex "apiVersion v1alpha1" '{"apiVersion":"client.authentication.k8s.io/v1alpha1","kind":"ExecCredential","spec":{}}'
ex "apiVersion of another group" '{"apiVersion":"external-signer.authentication.k8s.io/v1alpha1","kind":"ExecCredential","spec":{}}'
ex "apiVersion a number" '{"apiVersion":1,"kind":"ExecCredential","spec":{}}'
ex "apiVersion null" '{"apiVersion":null,"kind":"ExecCredential","spec":{}}'
ex "kind Config" '{"apiVersion":"client.authentication.k8s.io/v1","kind":"Config","spec":{}}'
ex "kind missing" '{"apiVersion":"client.authentication.k8s.io/v1","spec":{}}'
ex "kind with a newline and an ANSI escape" '{"apiVersion":"client.authentication.k8s.io/v1","kind":"Exec\nCred\u001b[31m","spec":{}}'
ex "spec missing" "{$V1}"
ex "spec an array" "{$V1,\"spec\":[]}"
ex "spec.interactive a string" "{$V1,\"spec\":{\"interactive\":\"false\"}}"
ex "spec.interactive a number" "{$V1,\"spec\":{\"interactive\":0}}"
ex "spec.interactive 1e400 (overflow)" "{$V1,\"spec\":{\"interactive\":1e400}}"
ex "spec.cluster a string" "{$V1,\"spec\":{\"cluster\":\"https://x\"}}"
ex "spec.cluster.server a number" "{$V1,\"spec\":{\"cluster\":{\"server\":443}}}"
ex "certificate-authority-data an object" "{$V1,\"spec\":{\"cluster\":{\"certificate-authority-data\":{}}}}"
ex "\\u0000 in kind" '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential\u0000","spec":{}}'
ex "\\u0000 in spec.cluster.server" "{$V1,\"spec\":{\"cluster\":{\"server\":\"https://a\\u0000b\"}}}"
ex "invalid UTF-8 bytes (ff fe) in kind" $'{"apiVersion":"client.authentication.k8s.io/v1","kind":"Exec\xff\xfe","spec":{}}'
ex "overlong UTF-8 (c0 af) in server" "{$V1,\"spec\":{\"cluster\":{\"server\":\"$(printf '\xc0\xaf')\"}}}"
ex "lone surrogate \\ud800" "{$V1,\"spec\":{\"cluster\":{\"server\":\"\\ud800\"}}}"
ex "UTF-8 BOM before the document" $'\xef\xbb\xbf'"$GOOD"
ex "config.issuer path traversal" "{$V1,\"spec\":{\"cluster\":{\"config\":{\"issuer\":\"../../etc\"}}}}"
ex "config.issuer 33 characters" "{$V1,\"spec\":{\"cluster\":{\"config\":{\"issuer\":\"$(printf 'a%.0s' {1..33})\"}}}}"
ex "config.issuer a number" "{$V1,\"spec\":{\"cluster\":{\"config\":{\"issuer\":7}}}}"
ex "config.issuer naming no session" "{$V1,\"spec\":{\"cluster\":{\"config\":{\"issuer\":\"nosuch\"}}}}"
deep=$(python3 -c 'print("["*10000 + "]"*10000)')
ex "10000-deep array nesting in spec" "{$V1,\"spec\":{\"x\":$deep}}"
deep=$(python3 -c 'print("{\"a\":"*10000 + "1" + "}"*10000)')
ex "10000-deep object nesting in spec.cluster" "{$V1,\"spec\":{\"cluster\":$deep}}"
big=$(head -c 130000 /dev/zero | tr '\0' A)
ex "130000 bytes of garbage (near the largest env string Linux passes)" "$big"
ex "130000-byte unterminated string" "{$V1,\"spec\":{\"cluster\":{\"certificate-authority-data\":\"$big"
many=$(python3 -c 'print(",".join("\"k%d\":1" % i for i in range(9000)))')
ex "spec.cluster.config with 9000 members and a bad issuer" "{$V1,\"spec\":{\"cluster\":{\"config\":{$many,\"issuer\":\"bad/\"}}}}"

# --- the signer's request argument -----------------------------------------
sg() { bad "sign: $1" "$alice" env KUBEHSM_CONFIG="$NOCONF" "$KUBEHSM" sign "${@:2}"; }
sg "empty argument" ""
sg "not JSON" "sign this"
sg "JSON array" "[1,2]"
sg "digest not base64" "$(pss '!!!!' -1 5)"
sg "digest with a newline" "$(pss "${D32:0:20}\\n${D32:20}" -1 5)"
sg "digest unpadded base64" "$(pss "${D32%=}" -1 5)"
sg "digest non-canonical base64 (trailing bits)" "$(pss "${D32%?=}B=" -1 5)"
sg "digest empty" "$(pss '' -1 5)"
sg "digest 31 bytes for SHA-256" "$(pss "$(head -c 31 /dev/urandom | base64 -w0)" -1 5)"
sg "digest 48 bytes for SHA-256" "$(pss "$D48" -1 5)"
sg "digest 2000 bytes" "$(pss "$(head -c 2000 /dev/urandom | base64 -w0)" -1 5)"
sg "digest a number" "$(sreq 12345 crypto.Hash 5 | sed 's/"digest":"12345"/"digest":12345/')"
sg "hash 0" "$(pss "$D32" -1 0)"
sg "hash 3 (SHA-1)" "$(sreq "$D32" crypto.Hash 3)"
sg "hash 99" "$(sreq "$D32" crypto.Hash 99)"
sg "hash -5" "$(pss "$D32" -1 -5)"
sg "hash 5.5" "$(pss "$D32" -1 5.5)"
sg "hash 2^64" "$(pss "$D32" -1 18446744073709551616)"
sg "salt -2" "$(pss "$D32" -2 5)"
sg "salt 100000 (larger than the key)" "$(pss "$D32" 100000 5)"
sg "salt 2147483648 (int overflow)" "$(pss "$D32" 2147483648 5)"
sg "salt 1e10" "$(pss "$D32" 1e10 5)"
sg "salt a string" "$(sreq "$D32" '*rsa.PSSOptions' '{"SaltLength":"32","Hash":5}')"
sg "signerOpts unknown field" "$(sreq "$D32" '*rsa.PSSOptions' '{"SaltLength":-1,"Hash":5,"Evil":1}')"
sg "signerOpts duplicate Hash" "$(sreq "$D32" '*rsa.PSSOptions' '{"SaltLength":-1,"Hash":5,"Hash":6}')"
sg "signerOpts invalid JSON string" "$(sreq "$D32" '*rsa.PSSOptions' '"{\"SaltLength\":"')"
sg "signerOpts missing" "$(printf '{%s,"kind":"SignRequest","digest":"%s","signerOptsType":"crypto.Hash"}' "$SA" "$D32")"
sg "signerOptsType unknown" "$(sreq "$D32" '*ecdsa.Options' 5)"
sg "kind Foo" "$(printf '{%s,"kind":"Foo"}' "$SA")"
sg "apiVersion v1" '{"apiVersion":"external-signer.authentication.k8s.io/v1","kind":"SignRequest"}'
sg "duplicate digest" "$(sreq "$D32" crypto.Hash 5 | sed "s|\"digest\"|\"digest\":\"$D32\",\"digest\"|")"
sg "\\u0000 in kind" "$(printf '{%s,"kind":"SignRequest\\u0000"}' "$SA")"
sg "invalid UTF-8 in configuration.slotId" "$(printf '{%s,"kind":"CertificateRequest","configuration":{"slotId":"\xff"}}' "$SA")"
sg "configuration a string" "$(printf '{%s,"kind":"CertificateRequest","configuration":"pathLib=/x"}' "$SA")"
sg "configuration.pathLib a number" "$(printf '{%s,"kind":"CertificateRequest","configuration":{"pathLib":5}}' "$SA")"
sg "10000-deep nesting in configuration" "$(printf '{%s,"kind":"CertificateRequest","configuration":{"x":%s}}' "$SA" "$(python3 -c 'print("["*10000 + "]"*10000)')")"
sg "130000-byte request (over the 64 KiB cap)" "$(printf '{%s,"kind":"CertificateRequest","configuration":{"x":"%s"}}' "$SA" "$(head -c 130000 /dev/zero | tr '\0' x)")"
bad "sign: PSS options with an EC session key" "$alice" env KUBEHSM_CONFIG="$NOCONF" "$KUBEHSM" sign --issuer ec "$(pss "$D32" -1 5)"
sg "crypto.Hash SHA-384 with a 32-byte digest" "$(sreq "$D32" crypto.Hash 6)"
sg "two arguments" "$(pss "$D32" -1 5)" "$(pss "$D32" -1 5)"

# --- the policy file (kubehsm config check, as root) -----------------------
ETC=$KH_TMP/etc
mkdir -m 0755 "$ETC"
pki_ca users "users CA"
(umask 077; echo 1234 >"$ETC/issuer.pin")
cp "$PKI_DIR/issuer.pem" "$ETC/issuer.pem"; chmod 0644 "$ETC/issuer.pem"
base_conf() {
	cat <<CONF
version = 1;
pkcs11 = { module = "/usr/lib/softhsm/libsofthsm2.so"; };
token = { label = "%u"; key_label = "kube"; };
trust = { ca_file = "$PKI_DIR/users.pem"; map = "cn"; };
identity = { username = "%u"; groups = [ "cert:O" ]; };
issuer = { key = "pkcs11:token=host;object=issuer"; cert_file = "$ETC/issuer.pem";
           pin_file = "$ETC/issuer.pin"; key_type = "ec-p256"; };
session = { ttl = "8h"; scope = "user"; revoke_on_logout = true; };
polkit = { mode = "if-available"; };
CONF
}
base_conf >"$ETC/good.conf"; chmod 0644 "$ETC/good.conf"
# libconfig 1.5 leaks its scanner buffer when a parse fails right after a
# string literal (tests/fuzz/lsan.supp); a sanitizer build's LeakSanitizer
# would report that third-party leak, so it (only it) is suppressed here.
SUPP=(LSAN_OPTIONS="suppressions=$KH_SRCDIR/tests/fuzz/lsan.supp:print_suppressions=0")
run "$KUBEHSM" config check --quiet "$ETC/good.conf"
is "$rc" 0 "control: the base policy is valid" || diag "$err"
n=0
# cf NAME SED-EXPR | cf NAME - (content on stdin)
cf() {
	local name=$1 f=$ETC/bad$((n += 1)).conf
	if [ "$2" = - ]; then cat >"$f"; else base_conf | sed -e "$2" >"$f"; fi
	chmod 0644 "$f"
	cmp -s "$f" "$ETC/good.conf" && { fail "config: $name: the edit changed nothing"; return; }
	SNAPUSER=$alice bad "config: $name" root env "${SUPP[@]}" "$KUBEHSM" config check "$f"
}
cf 'ttl "99999999999999999999h" (overflow)' 's/ttl = "8h"/ttl = "99999999999999999999h"/'
cf 'ttl "9223372036854775807s" (overflow past the max)' 's/ttl = "8h"/ttl = "9223372036854775807s"/'
cf 'ttl "-5m"' 's/ttl = "8h"/ttl = "-5m"/'
cf 'ttl "0s" (below the minimum)' 's/ttl = "8h"/ttl = "0s"/'
cf 'ttl "8d" (above 7 days)' 's/ttl = "8h"/ttl = "8d"/'
cf 'ttl "3600" (no unit)' 's/ttl = "8h"/ttl = "3600"/'
cf 'ttl "1x" (unknown unit)' 's/ttl = "8h"/ttl = "1x"/'
cf 'ttl ""' 's/ttl = "8h"/ttl = ""/'
cf 'ttl an integer' 's/ttl = "8h"/ttl = 3600/'
cf 'scope "galaxy"' 's/scope = "user"/scope = "galaxy"/'
cf 'polkit.mode "maybe"' 's/"if-available"/"maybe"/'
cf 'trust.map "dn"' 's/map = "cn"/map = "dn"/'
cf 'issuer.key_type "dsa-1024"' 's/"ec-p256"/"dsa-1024"/'
cf 'version 2' 's/^version = 1;/version = 2;/'
cf 'unknown key' 's/^polkit = {/polkit = { colour = "blue";/'
cf 'duplicate setting' 's/^polkit = .*/&\npolkit = { mode = "off"; };/'
cf 'token.label template %x' 's/label = "%u"/label = "%x"/'
cf 'a group of unknown source' 's/"cert:O"/"ldap:cn"/'
cf 'invalid UTF-8 in key_label' "s/\"kube\"/\"k$(printf '\xff\xfe')\"/"
cf 'NUL bytes in the file' "s/^version = 1;/version = 1;$(printf '\\x00')garbage/"
cf 'syntax error after a string (libconfig scanner)' 's/^token = {/token "x" {/'
cf 'empty file' - </dev/null
# (through files, not pipes: cf must run in this shell to count its TAP line)
{ base_conf; python3 -c 'import sys; sys.stdout.write("# " + "x" * 300000 + "\n")'; } >"$KH_TMP/big.conf"
cf 'a 300 KB file, valid up to its comment (over the 256 KiB cap)' - <"$KH_TMP/big.conf"
python3 -c 'print("version = 1;\nx = " + "{ y = " * 5000 + "1;" + " };" * 5000)' >"$KH_TMP/deep.conf"
cf '5000-deep nested groups' - <"$KH_TMP/deep.conf"
cf 'ca_file missing' "s|$PKI_DIR/users.pem|$PKI_DIR/no-such-ca.pem|"
# Issue #13's rules.
cf 'ttl "25h" without allow_long_ttl' 's/ttl = "8h"/ttl = "25h"/'
cf 'map "email" without trust.domains' 's/map = "cn"/map = "email"/'
cf 'map "upn" with a domain that is an address' 's/map = "cn";/map = "upn"; domains = [ "@example.com" ];/'
cf 'trust.domains with map "cn"' 's/map = "cn";/map = "cn"; domains = [ "example.com" ];/'
cf 'identity.deny_groups a string' 's/groups = \[ "cert:O" \];/groups = [ "cert:O" ]; deny_groups = "system:*";/'
cf 'identity.allow_groups with a number' 's/groups = \[ "cert:O" \];/groups = [ "cert:O" ]; allow_groups = [ 1 ];/'
mkdir -m 0777 "$KH_TMP/open-dir"; chmod 0777 "$KH_TMP/open-dir"
cp "$PKI_DIR/users.pem" "$KH_TMP/open-dir/users.pem"
cf 'ca_file in a directory anyone may write' "s|$PKI_DIR/users.pem|$KH_TMP/open-dir/users.pem|"
chmod 0640 "$ETC/issuer.pin"
cf 'issuer PIN file readable by its group' 's/"8h"/"9h"/'
chmod 0600 "$ETC/issuer.pin"
base_conf >"$ETC/ww.conf"; chmod 0666 "$ETC/ww.conf"
SNAPUSER=$alice bad "config: policy file writable by others" root env "${SUPP[@]}" "$KUBEHSM" config check "$ETC/ww.conf"

# --- keyring records with valid JSON but forged fields ---------------------
# bob's real record is the template; each forgery replaces it in bob's user
# keyring (as cache_probe forge hands it over: owned by bob, read-only).
"$PROBE" store "$B" "$bob" user 3600 --chain "$PKI_DIR/bobsess.chain" --key "$PKI_DIR/bobsess.key" \
	--token-cert "$PKI_DIR/tok.pem" --groups dev >/dev/null || { echo "Bail out! bob's record"; exit 1; }
as_user "$bob" sh -c 'keyctl pipe $(keyctl search @u user kubehsm:session:v1)' >"$KH_TMP/bob.json" 2>/dev/null
run as_user "$bob" env KUBERNETES_EXEC_INFO="$GOOD" "$KUBEHSM" exec
like "$out" '"kind":"ExecCredential"' "control: bob's unforged record is served" || diag "$err"
forge_payload() {   # forge_payload NAME PERM PYTHON-EXPR-ON-r [OWNER]
	local name=$1 perm=$2 expr=$3 owner=${4:-$B}
	python3 - "$KH_TMP/bob.json" "$KH_TMP/forged.json" "$expr" "$KH_SRCDIR/tests/harness" <<'PY' || { fail "record: $name: python"; return 1; }
import json, sys, time
sys.path.insert(0, sys.argv[4])
import record
r = record.load(open(sys.argv[1]).read())
now = int(time.time())
exec(sys.argv[3])
open(sys.argv[2], "w").write(r if isinstance(r, str) else record.dump(r))
PY
	as_user "$bob" keyctl clear @u >/dev/null 2>&1
	"$PROBE" forge "$owner" "$B" kubehsm:session:v1 "$perm" 600 "$KH_TMP/forged.json" >/dev/null ||
		{ fail "record: $name: forge failed"; return 1; }
}
forge_case() {
	forge_payload "$@" || return
	bad "record: $1" "$bob" env KUBERNETES_EXEC_INFO="$GOOD" "$KUBEHSM" exec
}
RO=000b0000   # user view/read/search, as the writer hands it over
forge_payload "control forge" $RO 'pass'
run as_user "$bob" env KUBERNETES_EXEC_INFO="$GOOD" "$KUBEHSM" exec
like "$out" '"kind":"ExecCredential"' "control: a forged key with bob's own valid payload is served (the forge path works)" || diag "$err"
forge_case "uid of another user" $RO "r['uid'] = $A"
forge_case "uid 0" $RO "r['uid'] = 0"
forge_case "uid negative" $RO "r['uid'] = -1"
forge_case "uid 2^32" $RO "r['uid'] = 2**32 + $B"
forge_case "expired (expires in the past)" $RO "r['created'] = now - 7200; r['expires'] = now - 60"
forge_case "expires before created" $RO "r['expires'] = r['created'] - 1"
forge_case "expires 2^63 (overflow)" $RO "r['expires'] = 2**63"
forge_case "version 3" $RO "r['v'] = 3"
forge_case "version 1 (before the pre-rendered answer)" $RO "r['v'] = 1"
forge_case "kind of another record" $RO "r['kind'] = 'other'"
forge_case "scope unknown" $RO "r['scope'] = 'galaxy'"
forge_case "65 groups (over the cap)" $RO "r['groups'] = ['g%d' % i for i in range(65)]"
forge_case "group with a NUL" $RO "r['groups'] = ['dev\\u0000admin']"
forge_case "key not PEM" $RO "r['key'] = 'not a key'"
forge_case "key a number" $RO "r['key'] = 1"
forge_case "chain empty" $RO "r['chain'] = ''"
forge_case "issuer id with a slash" $RO "r['issuer'] = '../x'"
forge_case "logins negative" $RO "r['logins'] = -1"
forge_case "user with a newline" $RO "r['user'] = 'bob\\nroot'"
forge_case "duplicate uid (raw JSON)" $RO "h, b = record.dump(r).split('\n', 1); r = h[:-1] + ',\"uid\":$B}\n' + b"
forge_case "trailing data after the header" $RO "h, b = record.dump(r).split('\n', 1); r = h + ' {}\n' + b"
forge_case "trailing data after the parts" $RO "r = record.dump(r) + ' {}'"
forge_case "no header line (all JSON)" $RO "r = json.dumps(r)"
forge_case "exec part longer than said" $RO "h, b = record.dump(r).split('\n', 1); r = h.replace('\"exec\":', '\"exec\":1', 1) + '\n' + b"
forge_case "exec part and chain both present" $RO "h, b = record.dump(r).split('\n', 1); r = h.replace('\"chain\":0', '\"chain\":1', 1) + '\n' + b"
forge_case "exec part for another expiry" $RO "r2 = dict(r); r2['expires'] += 60; e = record.dump(r2).split('\n', 1)[1]; h = record.dump(r).split('\n', 1)[0]; r = h + '\n' + e"
forge_case "exec part with a quote in the key" $RO "h, b = record.dump(r).split('\n', 1); i = b.index('PRIVATE KEY-----') + 20; r = h + '\n' + b[:i] + '\"' + b[i + 1:]"
forge_case "exec part with an apiVersion of its own" $RO "h, b = record.dump(r).split('\n', 1); n = json.loads(h)['parts']['exec']; ins = '\"apiVersion\":\"x\",'; h = h.replace('\"exec\":%d' % n, '\"exec\":%d' % (n + len(ins)), 1); r = h + '\n' + b[:1] + ins + b[1:]"
forge_case "token certificate cut short" $RO "h, b = record.dump(r).split('\n', 1); r = h + '\n' + b[:-1]"
forge_case "part length negative" $RO "h, b = record.dump(r).split('\n', 1); r = h.replace('\"exec\":', '\"exec\":-', 1) + '\n' + b"
forge_case "record over 6 KiB" $RO "r['token_uri'] = 'pkcs11:' + 'x' * 7000"
forge_case "valid record writable by bob" 3f3f0000 'pass'
forge_case "valid record owned by root, readable through perms" 3f3f3f3f 'pass' 0

diag "$ncases hostile inputs"
ok $(( ncases >= 60 ? 0 : 1 )) "at least 60 hostile inputs ($ncases)"
done_testing
