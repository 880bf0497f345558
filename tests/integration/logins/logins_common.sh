# tests/integration/logins/logins_common.sh — shared set-up of the login-program
# tests (logins_sshd.sh, logins_local.sh, logins_sudo.sh): source it first.
#
# It enters the private mount namespace (tests/harness/logins.sh), then makes a
# users CA, a host issuer token, SoftHSM tokens for the users it is asked
# for, a root-owned policy $CONF whose PKCS#11 module is tests/probes/p11shim (it
# forwards to SoftHSM and counts C_Login calls in $SHIM_LOGINS, also in
# sshd's auth child, whose environment is empty), the nginx mTLS stand-in
# trusting the issuer CA, and a kubeconfig per user ($KH_TMP/kubeconfig-USER)
# whose exec command is the build tree's kubehsm.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/kubeapi.sh"
. "$KH_SRCDIR/tests/harness/logins.sh"

need_root
need_cmd softhsm2-util pkcs11-tool openssl keyctl jq setpriv chpasswd nginx \
	/usr/sbin/sshd ssh ssh-keygen su sudo visudo login mountpoint
/usr/bin/python3 -c 'import pexpect' 2>/dev/null || skip_all "needs python3-pexpect"
[ -f "$PAM_KUBEHSM" ] || skip_all "pam/.libs/pam_kubehsm.so not built"
[ -x "$KUBEHSM" ] || skip_all "helper/kubehsm not built"
SHIM=$KH_BUILDDIR/tests/probes/p11shim/.libs/libkhp11shim.so
[ -f "$SHIM" ] || skip_all "tests/probes/p11shim not built (make check builds it)"
kh_trusted SHIM "$SHIM"   # the policy names it: a copy it trusts, whatever the tree's modes
K127=/usr/lib/google-cloud-sdk/bin/kubectl.1.27
K133=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
[ -x "$K127" ] && [ -x "$K133" ] || skip_all "needs kubectl 1.27 and 1.33 in /usr/lib/google-cloud-sdk/bin"
# The users run the build tree's kubehsm.
chmod 0755 "$KH_BUILDDIR" "$KH_BUILDDIR/helper" 2>/dev/null || true

PIN=4711
ISSUER_PIN=987654
HOST=khlhost$$
RECORD=kubehsm:session:v1
V1='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}'

pki_init && pki_ca users "kh test users CA" && pki_ca issuerca "kh issuer CA" &&
	pki_issuer_token "$HOST" "$ISSUER_PIN" issuerca || _logins_bail "pki"
chmod 0600 "$PKI_DIR/issuer.pin"
logins_softhsm

# p11shim's control directory: "logins" gets one line per C_Login.
SHIMCTL=$KH_TMP/shimctl
mkdir -m 0755 "$SHIMCTL"
SHIM_LOGINS=$SHIMCTL/logins
: >"$SHIM_LOGINS"
logins_shim_ctl "$SHIMCTL"
shim_logins() { grep -c '^C_Login$' "$SHIM_LOGINS"; }
_handoff0=

CONF=$KH_TMP/etc/kubehsm.conf
pki_policy "$CONF" "$HOST" module="$SHIM" || _logins_bail "policy"

kubeapi_start "$PKI_DIR/issuerca.pem" || _logins_bail "nginx did not start"
logins_asan

# kubehsm_login_service: what kubehsm login needs of this set-up: $CONF
# gains pkcs11.forward (p11-kit's client module, $P11_CLIENT, over
# /run/user/%U/p11-kit/pkcs11) and /etc/pam.d/kubehsm is the shipped
# service pointed at the build tree's module and $CONF.
kubehsm_login_service() {
	P11_CLIENT=$(ls /usr/lib/*/pkcs11/p11-kit-client.so 2>/dev/null | head -n 1)
	[ -n "$P11_CLIENT" ] || skip_all "needs p11-kit's client module (apt-get install p11-kit-modules)"
	sed -i "s|^pkcs11 = { module = \"\([^\"]*\)\"; };|pkcs11 = { module = \"\1\"; forward = { module = \"$P11_CLIENT\"; socket = \"/run/user/%U/p11-kit/pkcs11\"; }; };|" "$CONF"
	grep -q 'forward = {' "$CONF" || _logins_bail "cannot add pkcs11.forward to $CONF"
	logins_pam kubehsm < <(sed -e "s|pam_kubehsm\.so|$PAM_KUBEHSM config=$CONF|" \
		"$KH_SRCDIR/pam/pam.d/kubehsm")
}

# The stacks' pam_faillock keeps a tally per user name.
forget_tally() { on_exit "rm -f '/var/run/faillock/$1'"; }

# token_user VAR [PASSWORD]: a user with a token (label and CN = the name).
token_user() {
	local name
	make_user "$1"
	name=${!1}
	forget_tally "$name"
	pki_user_cert "$name" users --cn "$name" --o dev &&
		pki_token_init "$name" "$PIN" &&
		pki_token_import "$name" "$PIN" "$name" kube 01 || _logins_bail "token for $name"
	[ -z "${2:-}" ] || logins_passwd "$name" "$2"
	write_kubeconfig "$name"
}

# plain_user VAR [PASSWORD]: a user without a token.
plain_user() {
	make_user "$1"
	forget_tally "${!1}"
	[ -z "${2:-}" ] || logins_passwd "${!1}" "$2"
	write_kubeconfig "${!1}"
}

write_kubeconfig() {
	local f=$KH_TMP/kubeconfig-$1
	cat >"$f" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $KUBEAPI_URL
    certificate-authority: $KUBEAPI_CA
users:
- name: kubehsm
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $KUBEHSM
      args: [exec]
      interactiveMode: Never
contexts:
- name: test
  context: {cluster: test, user: kubehsm, namespace: default}
current-context: test
EOF
	chown "$1" "$f"
	chmod 0600 "$f"
}

# record_id USER: the id of USER's record as USER finds it in their keyring.
record_id() { as_user "$1" keyctl search @u user "$RECORD" 2>/dev/null; }
# record USER: USER's record as one JSON object (tests/harness/record.py), or "".
record() {
	as_user "$1" sh -c 'id=$(keyctl search @u user "$1" 2>/dev/null) && keyctl pipe "$id"' \
		- "$RECORD" 2>/dev/null | /usr/bin/python3 "$KH_SRCDIR/tests/harness/record.py" json
}
# logins USER: the record's login count, "none" without a record.
logins() { local l; l=$(record "$1" | jq -r .logins 2>/dev/null); echo "${l:-none}"; }
# session_serial USER: serial of the session certificate in USER's record.
session_serial() {
	record "$1" | jq -r .chain | openssl x509 -noout -serial 2>/dev/null | cut -d= -f2
}

# kube_session LOGIN USER WHAT: inside the open login LOGIN of USER, a kube
# session exists (kubehsm status), kubectl 1.27 and 1.33 work with stdin from
# /dev/null and no prompt, and the server saw USER with this session's
# certificate.  Four assertions.
kube_session() {
	local lg=$1 user=$2 what=$3 kc=$KH_TMP/kubeconfig-$2 serial k
	login_run "$lg" "$KUBEHSM status"
	if [ "$rc" = 0 ] && grep -q "^Identity: *$user\$" <<<"$out"; then
		pass "$what: a kube session exists inside the login (kubehsm status)"
	else
		fail "$what: a kube session exists inside the login (kubehsm status)"
		diag "rc=$rc out=$out err=$err"
	fi
	serial=$(session_serial "$user")
	for k in "$K127" "$K133"; do
		login_run "$lg" "$k --kubeconfig $kc get --raw /kh-whoami"
		if [ "$rc" = 0 ] && [ -n "$serial" ] && [ "$out" = "$serial O=dev,CN=$user" ]; then
			pass "$what: kubectl ${k##*.1.} works (stdin /dev/null), the server saw CN=$user with this session's certificate"
		else
			fail "$what: kubectl ${k##*.1.} works (stdin /dev/null), the server saw CN=$user with this session's certificate"
			diag "rc=$rc out='$out' record serial='$serial'" "err=$err"
		fi
	done
	login_run "$lg" "env | grep -c '^PAM_KUBEHSM' || :"
	is "$out" 0 "$what: no PAM_KUBEHSM_* hand-off variable in the login's environment" ||
		{ login_run "$lg" "env | grep '^PAM_KUBEHSM'"; diag "$out"; }
}

# ended USER WHAT: USER's record is gone or revoked and kubehsm exec says so.
ended() {
	local id
	id=$(record_id "$1")
	run as_user "$1" env KUBERNETES_EXEC_INFO="$V1" "$KUBEHSM" exec </dev/null
	err=$(grep -v '^Joined session keyring: ' <<<"$err")
	if [ -z "$id" ] && [ "$rc" != 0 ] && [ -z "$out" ] && grep -Eq 'ended|revoked|no kube session' <<<"$err"; then
		pass "$2: the record is revoked; kubehsm exec fails: $err"
	else
		fail "$2: the record is revoked; kubehsm exec fails with a clear message"
		diag "record id='$id' exec rc=$rc out='${out:0:80}' err='$err' logins=$(logins "$1")"
	fi
}

# handoff_files USER: the hand-off stashes naming USER under /run/kubehsm.
handoff_files() { grep -lsE "\"user\" *: *\"$1\"" /run/kubehsm/handoff/* 2>/dev/null; }

# before_login USER: note the C_Login count ($c0) and USER's stashes before a
# login, for no_handoff and the C_Login assertions after it.
before_login() {
	c0=$(shim_logins)
	_handoff0=$(handoff_files "$1")
}

# no_handoff USER WHAT: the login opened since before_login left no hand-off
# stash for USER under /run/kubehsm (older leftovers are not its own).
no_handoff() {
	local left
	left=$(comm -13 <(sort <<<"$_handoff0") <(handoff_files "$1" | sort) | grep .)
	is "$left" "" "$2: no hand-off file for $1 remains under /run/kubehsm/handoff"
}
