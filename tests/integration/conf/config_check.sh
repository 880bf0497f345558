#!/bin/bash
# `kubehsm config check` against real files: the shipped sample with its
# paths pointed at a private directory, then the mistakes an admin makes —
# a misspelled key, a PIN file readable by others, a group-writable config,
# a missing file — each rejected with one line naming the line or file.
# `kubehsm config ca-bundle`: the client CA bundle for the API server, for
# issuers with and without an intermediate, and its errors.
set -u
. "${KH_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}/tests/harness/tap.sh"

need_root
need_cmd openssl sed
MODULE=/usr/lib/softhsm/libsofthsm2.so
[ -e "$MODULE" ] || skip_all "needs $MODULE (apt-get install softhsm2)"
[ -x "$KUBEHSM" ] || skip_all "kubehsm not built at $KUBEHSM"

plan_auto

ETC="$KH_TMP/etc/kubehsm"
mkdir -p "$ETC"
chmod 0755 "$KH_TMP/etc" "$ETC"
PIN=771234-secret-pin

# A throw-away user CA and issuer certificate: real PEM, nothing trusts them.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-keyout "$KH_TMP/ca.key" -out "$ETC/users-ca.pem" -days 1 \
	-subj "/CN=kubehsm test users CA" >/dev/null 2>&1
ok $? "created a test CA with openssl"
cp "$ETC/users-ca.pem" "$ETC/issuer.pem"
printf '%s\n' "$PIN" >"$ETC/issuer.pin"
chmod 0644 "$ETC/users-ca.pem" "$ETC/issuer.pem"
chmod 0600 "$ETC/issuer.pin"

# The shipped sample, unchanged except for where its files live.
CONF="$ETC/kubehsm.conf"
sed -e "s|/etc/kubehsm/|$ETC/|g" "$KH_SRCDIR/conf/kubehsm.conf" >"$CONF"
chmod 0644 "$CONF"
grep -q "$ETC/issuer.pin" "$CONF"
ok $? "sample rewritten to the test directory"

run "$KUBEHSM" config check "$CONF"
is "$rc" 0 "the sample policy checks"
[ "$rc" -eq 0 ] || diag "$err"
like "$out" 'ttl = "8h";  # 28800 seconds' "effective ttl printed"
like "$out" "pin_file = \"$ETC/issuer.pin\";" "PIN file path printed"
like "$out" 'module = "/usr/lib/softhsm/libsofthsm2.so";' "issuer module defaulted from pkcs11.module"
like "$out" 'mode = "if-available";' "polkit mode printed"
like "$out" 'allow_groups = \[ "\*" \];' "the kube groups allowed are printed"
like "$out" 'deny_groups = \[ "system:\*" \];' "and the ones refused (system: by default)"
unlike "$out$err" "$PIN" "the PIN itself is never printed"
is "$err" "" "nothing on stderr on success"

# The output is a policy in its own right.
printf '%s\n' "$out" >"$ETC/effective.conf"
chmod 0644 "$ETC/effective.conf"
run "$KUBEHSM" config check "$ETC/effective.conf"
is "$rc" 0 "the printed effective policy checks too"

run "$KUBEHSM" config check --quiet "$CONF"
is "$rc/$out" "0/" "--quiet: exit 0, no output"

run env KUBEHSM_CONFIG="$CONF" "$KUBEHSM" config check
is "$rc" 0 "FILE defaults to \$KUBEHSM_CONFIG"

# --- config ca-bundle: what the API server's --client-ca-file must hold ----
B="$KH_TMP/bundle"
mkdir -m 0755 "$B"
# mkca NAME CN [SIGNER]: an EC CA certificate NAME.pem, self-signed without
# SIGNER.  mkleaf NAME CN SIGNER: a client certificate.
mkcert() {
	local name=$1 cn=$2 signer=${3:-} ext
	ext=$(printf 'basicConstraints=critical,%s\nkeyUsage=critical,%s\nsubjectKeyIdentifier=hash\n' "$4" "$5")
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$B/$name.key" \
		-subj "/CN=$cn" -out "$B/$name.csr" 2>/dev/null || return 1
	if [ -z "$signer" ]; then
		openssl x509 -req -in "$B/$name.csr" -key "$B/$name.key" -days 2 \
			-extfile <(printf '%s\n' "$ext") -out "$B/$name.pem" 2>/dev/null
	else
		openssl x509 -req -in "$B/$name.csr" -CA "$B/$signer.pem" -CAkey "$B/$signer.key" -days 2 \
			-set_serial "0x$(openssl rand -hex 12)" \
			-extfile <(printf '%s\nauthorityKeyIdentifier=keyid\n' "$ext") -out "$B/$name.pem" 2>/dev/null
	fi && chmod 0644 "$B/$name.pem"
}
mkca() { mkcert "$1" "$2" "${3:-}" CA:TRUE keyCertSign,cRLSign; }
mkleaf() { mkcert "$1" "$2" "$3" CA:FALSE digitalSignature; }
mkca root "kh test root" && mkca mid "kh test intermediate" root &&
	mkca issuer1 "kh issuer under the root" root && mkca issuer2 "kh issuer under the intermediate" mid &&
	mkca other "kh unrelated root" && mkleaf sess1 alice issuer1 && mkleaf sess2 alice issuer2
ok $? "created roots, an intermediate, two issuers and session certificates with openssl"
cat "$B/issuer2.pem" "$B/mid.pem" >"$B/issuer2+mid.pem"
cat "$B/issuer2.pem" "$B/mid.pem" "$B/root.pem" >"$B/issuer2+mid+root.pem"
chmod 0644 "$B"/*.pem
# bundle_conf CERT_FILE: the sample policy with issuer.cert_file = CERT_FILE.
bundle_conf() {
	local f=$ETC/bundle-${1##*/}.conf
	sed -e "s|cert_file = \"$ETC/issuer.pem\"|cert_file = \"$1\"|" "$CONF" >"$f"
	chmod 0644 "$f"
	echo "$f"
}

run "$KUBEHSM" config ca-bundle "$CONF"
is "$rc:$err:$out" "0::$(cat "$ETC/issuer.pem")" \
	"ca-bundle: a self-signed issuer certificate is its own root: the bundle is that certificate"

C1=$(bundle_conf "$B/issuer1.pem")
run "$KUBEHSM" config ca-bundle "$C1"
is "$rc:$out" "1:" "ca-bundle: cert_file without its root and no --root: exit 1, nothing on stdout"
is "$err" "kubehsm: $B/issuer1.pem ends with 'CN=kh issuer under the root', not with its root CA: pass --root with the certificate of 'CN=kh test root'" \
	"... one line naming the root to pass"
run "$KUBEHSM" config ca-bundle --root "$B/root.pem" "$C1"
is "$rc:$err:$out" "0::$(cat "$B/issuer1.pem" "$B/root.pem")" \
	"ca-bundle --root: the issuer certificate, then its root"
printf '%s\n' "$out" >"$B/bundle1.pem"
# The reason for the bundle, in OpenSSL's terms: a session certificate
# presented alone (ruby-kubeclient) verifies against the bundle, not against
# the root alone; with its chain (kubectl) it verifies against the root too.
openssl verify -CAfile "$B/bundle1.pem" "$B/sess1.pem" >/dev/null 2>&1
ok $? "a session certificate alone verifies against the bundle"
openssl verify -CAfile "$B/root.pem" "$B/sess1.pem" >/dev/null 2>&1
isnt $? 0 "... but not against the issuer's root alone"
openssl verify -CAfile "$B/root.pem" -untrusted "$B/issuer1.pem" "$B/sess1.pem" >/dev/null 2>&1
ok $? "... which suffices only when the client sends the issuer chain"

C2=$(bundle_conf "$B/issuer2+mid.pem")
run "$KUBEHSM" config ca-bundle --root "$B/root.pem" "$C2"
is "$rc:$err:$out" "0::$(cat "$B/issuer2.pem" "$B/mid.pem" "$B/root.pem")" \
	"ca-bundle with an intermediate: issuer, intermediate, root"
printf '%s\n' "$out" >"$B/bundle2.pem"
openssl verify -CAfile "$B/bundle2.pem" "$B/sess2.pem" >/dev/null 2>&1
ok $? "... and a session certificate alone verifies against it"
C3=$(bundle_conf "$B/issuer2+mid+root.pem")
run "$KUBEHSM" config ca-bundle "$C3"
is "$rc:$err:$out" "0::$(cat "$B/issuer2.pem" "$B/mid.pem" "$B/root.pem")" \
	"ca-bundle: a cert_file that ends with its root needs no --root"
run memcheck "$KUBEHSM" config ca-bundle --root "$B/root.pem" "$C2"
is "$rc" 0 "ca-bundle under $([ "${KH_SANITIZERS:-0}" = 1 ] && echo ASan/LSan || echo valgrind): no memory error, no leak" ||
	diag "$err"

run "$KUBEHSM" config ca-bundle --root "$B/other.pem" "$C1"
like "$rc:$out:$err" "^1::kubehsm: the issuer chain of $B/issuer1.pem does not verify against $B/other.pem at 'CN=kh issuer under the root': " \
	"ca-bundle with the wrong root: refused, one line"
run "$KUBEHSM" config ca-bundle --root "$B/none.pem" "$C1"
is "$rc:$err" "1:kubehsm: --root $B/none.pem: No such file or directory" "ca-bundle with a missing --root file"
run "$KUBEHSM" config ca-bundle --root "$CONF" "$C1"
like "$rc:$err" "^1:kubehsm: --root $CONF holds no readable PEM certificate" "ca-bundle with a --root that is no certificate"
C4=$(bundle_conf "$B/sess1.pem")
run "$KUBEHSM" config ca-bundle "$C4"
like "$rc:$err" "^1:kubehsm: the first certificate in $B/sess1.pem is not a CA certificate" \
	"ca-bundle: a cert_file that is no CA is refused"
run "$KUBEHSM" config ca-bundle --issuer nope "$CONF"
is "$rc:$err" "1:kubehsm: config ca-bundle: $CONF has no issuer 'nope'" "ca-bundle --issuer with an unknown id"
if command -v runuser >/dev/null 2>&1; then
	run runuser -u nobody -- "$KUBEHSM" config ca-bundle --root "$B/root.pem" "$C1"
	is "$rc:$out" "0:$(cat "$B/issuer1.pem" "$B/root.pem")" "an unprivileged user prints the bundle of a root-owned policy"
else
	skip "runuser not available"
fi

# A misspelled key names the line.
BAD="$ETC/typo.conf"
sed -e 's|^  ttl = "8h";|  ttll = "8h";|' "$CONF" >"$BAD"
chmod 0644 "$BAD"
line=$(grep -n 'ttll' "$BAD" | cut -d: -f1)
run "$KUBEHSM" config check "$BAD"
is "$rc" 1 "misspelled key: exit 1"
like "$err" "^kubehsm: $BAD:$line: unknown key 'ttll' in section 'session' \(did you mean 'ttl'\?\)$" \
	"misspelled key: one line naming file, line and the key"
is "$out" "" "nothing on stdout on failure"
is "$(printf '%s\n' "$err" | wc -l)" 1 "exactly one error line"

# An out-of-range ttl names the line and the range.
sed -e 's|^  ttl = "8h";|  ttl = "8d";|' "$CONF" >"$BAD"
run "$KUBEHSM" config check "$BAD"
like "$rc:$err" "^1:kubehsm: $BAD:$line: session.ttl = \"8d\" is out of range \(1m to 7d\)" "ttl 8d rejected"

# identity.uid (the Kubernetes UID attribute): off in the sample; the
# sample's commented line, enabled, is printed with an example expansion;
# an escape that is not one names the line.
run "$KUBEHSM" config check "$CONF"
grep -qx '  uid = "";' <<<"$out"
ok $? "identity.uid is off by default"
grep -qx '  # no UID attribute in session certificates' <<<"$out"
ok $? "... and config check says so"
UIDC="$ETC/uid.conf"
sed -e 's|^  # uid = "%h:%u:%s";|  uid = "%h:%u:%s";|' "$CONF" >"$UIDC"
chmod 0644 "$UIDC"
run "$KUBEHSM" config check "$UIDC"
[ "$rc" = 0 ] && grep -qx '  uid = "%h:%u:%s";' <<<"$out"
ok $? "the sample's identity.uid, enabled, checks and is printed" || diag "$err"
like "$out" "  # e.g. for alice \(uid 1000\) here: \"$(hostname):alice:3f2a9c0e5b7d41e8a06c9d2f1b4e7a35\"" \
	"... with what it becomes for an example login on this host"
sed -e 's|^  # uid = "%h:%u:%s";|  uid = "%h:%u:%t";|' "$CONF" >"$BAD"
line=$(grep -n 'uid = "%h:%u:%t"' "$BAD" | cut -d: -f1)
run "$KUBEHSM" config check "$BAD"
like "$rc:$err" "^1:kubehsm: $BAD:$line: identity.uid: \"%h:%u:%t\": '%t' is not a template escape" \
	"identity.uid with an unknown escape is refused, naming the line"
sed -e "s|^  # uid = \"%h:%u:%s\";|  uid = \"$(printf 'x%.0s' $(seq 1 257))\";|" "$CONF" >"$BAD"
run "$KUBEHSM" config check "$BAD"
like "$rc:$err" "^1:kubehsm: $BAD:[0-9]+: identity.uid is longer than 256 bytes" \
	"an identity.uid over 256 bytes is refused"

# pkcs11.forward (kubehsm login): the sample's commented block, enabled with
# a module that exists; then a socket template every user would share, and
# an escape that is not one.
P11C=$(ls /usr/lib/*/pkcs11/p11-kit-client.so 2>/dev/null | head -n 1)
if [ -n "$P11C" ]; then
	FWD="$ETC/forward.conf"
	sed -e 's|^  # forward = {|  forward = {|' -e "s|^  #   module = \".*p11-kit-client.so\";|    module = \"$P11C\";|" \
		-e 's|^  #   socket = |    socket = |' -e 's|^  # };|  };|' "$CONF" >"$FWD"
	chmod 0644 "$FWD"
	run "$KUBEHSM" config check "$FWD"
	if [ "$rc" = 0 ] && grep -q '^  forward = {' <<<"$out" &&
	   grep -q 'socket = "/run/user/%U/p11-kit/pkcs11";' <<<"$out"; then
		pass "the sample's pkcs11.forward, enabled, checks and is printed"
	else
		fail "the sample's pkcs11.forward, enabled, checks and is printed"; diag "rc=$rc err=$err"
	fi
	sed -e 's|/run/user/%U/p11-kit/pkcs11|/run/p11-kit/pkcs11|' "$FWD" >"$BAD"
	run "$KUBEHSM" config check "$BAD"
	like "$rc:$err" "^1:kubehsm: $BAD:[0-9]+: pkcs11.forward.socket must name each user's own socket with %U" \
		"a forward socket without %U (one socket for every user) is refused"
	sed -e 's|/run/user/%U/p11-kit/pkcs11|/run/user/%u/p11-kit/pkcs11|' "$FWD" >"$BAD"
	run "$KUBEHSM" config check "$BAD"
	like "$rc:$err" "^1:kubehsm: $BAD:[0-9]+: pkcs11.forward.socket: .*'%u' is not a template escape" \
		"a forward socket with %u (not an escape there) is refused"
else
	fail "p11-kit's client module is installed (p11-kit-modules) for the pkcs11.forward checks"
fi

# The issuer PIN readable by others names the file.
chmod 0644 "$ETC/issuer.pin"
run "$KUBEHSM" config check "$CONF"
is "$rc" 1 "PIN file 0644: exit 1"
like "$err" "$ETC/issuer.pin: mode 0644 lets group/others read the issuer PIN; chmod 0600" \
	"PIN file 0644: names the file and its mode"
unlike "$err" "$PIN" "PIN file 0644: the PIN is not in the message"
chmod 0600 "$ETC/issuer.pin"

# A PIN file owned by someone else.
chown nobody "$ETC/issuer.pin"
run "$KUBEHSM" config check "$CONF"
like "$rc:$err" "^1:.*issuer.pin: owned by uid [0-9]+" "PIN file not owned by root: rejected"
chown root "$ETC/issuer.pin"

# A config others can write.
chmod 0664 "$CONF"
run "$KUBEHSM" config check "$CONF"
like "$rc:$err" "^1:kubehsm: $CONF: file $CONF has mode 0664: group/others could change the policy" \
	"group-writable config rejected"
chmod 0644 "$CONF"

chmod 0775 "$ETC"
run "$KUBEHSM" config check "$CONF"
like "$rc:$err" "^1:.*directory $ETC has mode 0775" "group-writable config directory rejected"
chmod 0755 "$ETC"

# A config owned by a non-root user is not trusted, even when that user checks it.
chown nobody "$CONF"
run "$KUBEHSM" config check "$CONF"
like "$rc:$err" "^1:.*owned by uid [0-9]+; it must be owned by root \(uid 0\)" "config owned by a user rejected"
if command -v runuser >/dev/null 2>&1; then
	run runuser -u nobody -- "$KUBEHSM" config check "$CONF"
	like "$rc:$err" "^1:.*must be owned by root" "... also when that user runs the check"
	chown root "$CONF"
	run runuser -u nobody -- "$KUBEHSM" config check "$CONF"
	is "$rc" 0 "an unprivileged user can check a root-owned policy (the PIN file is never opened for reading)"
	[ "$rc" -eq 0 ] || diag "unprivileged check: $err"
else
	chown root "$CONF"
	skip "runuser not available"
	skip "runuser not available"
fi

# Missing files are named with their line.
rm "$ETC/users-ca.pem"
ca_line=$(grep -n '^  ca_file' "$CONF" | cut -d: -f1)
run "$KUBEHSM" config check "$CONF"
like "$rc:$err" "^1:kubehsm: $CONF:$ca_line: trust.ca_file $ETC/users-ca.pem: No such file or directory$" \
	"missing CA file: exit 1 naming line and file"
cp "$ETC/issuer.pem" "$ETC/users-ca.pem"

run "$KUBEHSM" config check "$ETC/does-not-exist.conf"
like "$rc:$err" "^1:kubehsm: $ETC/does-not-exist.conf: cannot open: No such file or directory$" \
	"missing config file: exit 1"

# Symlinked config: refused, not followed.
ln -s "$CONF" "$ETC/link.conf"
run "$KUBEHSM" config check "$ETC/link.conf"
like "$rc:$err" "^1:.*symbolic link" "symlinked config refused"

# Command line.
run "$KUBEHSM" config check --help
like "$rc:$out" "^0:Usage: kubehsm config check" "config check --help"
run "$KUBEHSM" config --help
is "$rc" 0 "config --help"
run "$KUBEHSM" config
is "$rc" 2 "config without a subcommand: usage error"
run "$KUBEHSM" config frobnicate
is "$rc" 2 "unknown config subcommand: usage error"
run "$KUBEHSM" config check --bogus "$CONF"
like "$rc:$err" "^2:kubehsm: config check: unknown option '--bogus'" "unknown option: usage error"
run "$KUBEHSM" config check "$CONF" "$CONF"
is "$rc" 2 "two files: usage error"
run "$KUBEHSM" config ca-bundle --help
like "$rc:$out" "^0:Usage: kubehsm config check" "config ca-bundle --help"
grep -q '^       kubehsm config ca-bundle \[--issuer ID\] \[--root CA-FILE\] \[FILE\]$' <<<"$out"
ok $? "... which shows ca-bundle's options"
run "$KUBEHSM" config ca-bundle --quiet "$CONF"
like "$rc:$err" "^2:kubehsm: config ca-bundle: unknown option '--quiet'" "ca-bundle has no --quiet: usage error"
run "$KUBEHSM" config check --root "$CONF" "$CONF"
like "$rc:$err" "^2:kubehsm: config check: unknown option '--root'" "check has no --root: usage error"
run "$KUBEHSM" config ca-bundle --root
like "$rc:$err" "^2:kubehsm: config ca-bundle: unknown option '--root' or missing value" "--root without a value: usage error"

done_testing
