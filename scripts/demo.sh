#!/bin/bash
# kubehsm's main job, shown end to end on this machine (run as root).
#
# Installs the Debian packages it needs, builds kubehsm, and then works in a
# throw-away directory that it removes on exit.  Each step says what it does,
# what happened and how long it took.  The flow: CAs, SoftHSM2 tokens (two
# users, the host issuer), real users, a PAM service with pam_keyinit and
# pam_kubehsm, an nginx mTLS Kubernetes API stand-in, kubeconfigs using
# `kubehsm exec`; a PAM login (pamtester, PIN once), kubectl as the user with
# no terminal and no PIN, kubehsm status, the other user getting nothing,
# logout and kubectl failing with a clear message.  Reuses tests/harness (pki.sh,
# users.sh, kubeapi.sh) with its own on_exit instead of tap.sh's TAP output.
#
# Logout: pamtester cannot keep one PAM handle across separate commands, so
# the login's close_session is never run; the user ends the session with
# `kubehsm logout`, which revokes the record as the last close_session would.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build="$top/build-demo"
work=$(mktemp -d /tmp/kubehsm-demo.XXXXXX)
chmod 0755 "$work"

# The test harness's libraries (tests/harness) expect two things from
# tests/harness/tap.sh: $KH_TMP and on_exit.  The demo provides its own, so it
# prints no TAP: cleanups run in reverse order at exit, even on failure.
KH_TMP=$work
KH_SRCDIR=$top
KH_BUILDDIR=$top/build-demo
export KH_SRCDIR KH_BUILDDIR
cleanups=()
on_exit() { cleanups+=("$1"); }
demo_cleanup() {
	local rc=$? i
	for ((i = ${#cleanups[@]} - 1; i >= 0; i--)); do
		eval "${cleanups[$i]}" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
	if [ $rc -ne 0 ] && [ ${#summary[@]} -gt 0 ]; then
		printf '\ndemo: FAILED (status %d); steps run:\n' $rc
		printf '%s\n' "${summary[@]}"
	fi
	exit $rc
}
trap demo_cleanup EXIT
trap 'exit 130' INT TERM HUP

n=0
summary=()
ms() { date +%s%3N; }
step() {   # step "what" command...: run, report outcome and time
	local what=$1 t0 t1 rc=0; shift
	n=$((n + 1))
	printf '\n[%d] %s\n' "$n" "$what"
	t0=$(ms)
	"$@" || rc=$?
	t1=$(ms)
	summary+=("$(printf '%3d  %6d ms  %s' "$n" $((t1 - t0)) "$what")")
	if [ $rc -eq 0 ]; then printf '    -> ok (%d ms)\n' $((t1 - t0))
	else printf '    -> FAILED with status %d (%d ms)\n' $rc $((t1 - t0)); exit $rc; fi
}
expect_fail() {   # the command must fail; show its one-line error
	local out rc=0
	out=$("$@" 2>&1) || rc=$?
	printf '    %s\n' "$out"
	[ $rc -ne 0 ]
}

T0=$(date +%s%3N)
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (it creates users, tokens and a PAM service)" >&2; exit 1; }

step "install the Debian packages kubehsm needs" bash scripts/install-deps.sh
step "bootstrap the build system (autoreconf)" autoreconf -fi
build_kubehsm() {
	mkdir -p "$build" && cd "$build" &&
	"$top/configure" -q --prefix=/usr --sysconfdir=/etc --enable-werror >/dev/null &&
	make -s -j"$(nproc)" >/dev/null && cd "$top"
}
step "build kubehsm (configure && make)" build_kubehsm
KUBEHSM="$build/helper/kubehsm"

chmod 0755 "$build" "$build/helper" "$build/pam" "$build/pam/.libs"   # users run kubehsm from here
KUBEHSM="$build/helper/kubehsm"
PAM_KUBEHSM="$build/pam/.libs/pam_kubehsm.so"
K133=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
K127=/usr/lib/google-cloud-sdk/bin/kubectl.1.27

. "$top/tests/harness/users.sh"
. "$top/tests/harness/pki.sh"
. "$top/tests/harness/pamsvc.sh"
. "$top/tests/harness/kubeapi.sh"

indent() { sed 's/^/    /'; }
# as USER CMD...: run as USER the way a background job would: no terminal
# (setsid: a new session with no controlling tty), stdin from /dev/null,
# a fresh session keyring of the user's own (so only the user keyring,
# where the login put the record, can supply it).
as() { local u=$1; shift; as_user "$u" setsid -w "$@" </dev/null 2> >(grep -v '^Joined session keyring' >&2); }

PIN1=314159 PIN2=271828 ISSUER_PIN=demo-issuer-pin
HOSTTOK=kubehsm-host

pki_setup() {
	pki_init "$work/pki" &&
	pki_ca users "kubehsm demo users CA" && pki_ca issuerca "kubehsm demo issuer CA" &&
	pki_issuer_token "$HOSTTOK" "$ISSUER_PIN" issuerca || return 1
	printf '    users CA:  %s\n    issuer CA: %s\n    host issuer token "%s": key "issuer", cert signed by the issuer CA, PIN in a root-only file\n' \
		"$PKI_DIR/users.pem" "$PKI_DIR/issuerca.pem" "$HOSTTOK"
}
step "create a test users CA, an issuer CA and the host issuer's SoftHSM2 token" pki_setup

users_setup() {
	make_user alice && make_user bob || return 1
	printf '    created users %s and %s (removed at exit)\n' "$alice" "$bob"
}
step "create two real users" users_setup

tokens_setup() {
	local u pin
	for u in "$alice" "$bob"; do
		pin=$PIN1; [ "$u" = "$bob" ] && pin=$PIN2
		pki_user_cert "$u" users --cn "$u" --o dev --o ops &&
		pki_token_init "$u" "$pin" && pki_token_import "$u" "$pin" "$u" kube 01 || return 1
		rm -f "$PKI_DIR/$u.key"   # the key now lives only on the token
		printf '    token "%s": key "kube" + certificate CN=%s,O=dev,O=ops from the users CA\n' "$u" "$u"
	done
}
step "give each user a SoftHSM2 token holding their key and certificate" tokens_setup

make_policy() {
	local etc="$work/etc/kubehsm"
	mkdir -p "$etc" && chmod 0755 "$work/etc" "$etc"
	cp "$PKI_DIR/users.pem" "$etc/users-ca.pem"
	cp "$PKI_DIR/issuer.pem" "$etc/issuer.pem"
	printf '%s\n' "$ISSUER_PIN" >"$etc/issuer.pin"
	chmod 0600 "$etc/issuer.pin"; chmod 0644 "$etc/users-ca.pem" "$etc/issuer.pem"
	# No polkitd runs for the demo: polkit mode off (the sample asks
	# if-available).  Everything else is the shipped sample.
	sed -e "s|/etc/kubehsm/|$etc/|g" -e 's|^\(\s*mode = \)"if-available"|\1"off"|' \
		"$top/conf/kubehsm.conf" >"$etc/kubehsm.conf"
	chmod 0644 "$etc/kubehsm.conf"
}
step "write a policy from the shipped sample into $work/etc/kubehsm" make_policy
CONF="$work/etc/kubehsm/kubehsm.conf"

step "check it: kubehsm config check (prints the effective policy)" "$KUBEHSM" config check "$CONF"

typo() { sed -e 's/^\(\s*\)ttl = /\1ttll = /' "$CONF" >"$work/etc/kubehsm/typo.conf"
	chmod 0644 "$work/etc/kubehsm/typo.conf"
	expect_fail "$KUBEHSM" config check "$work/etc/kubehsm/typo.conf"; }
step "a misspelled key is rejected, naming the line" typo

loose_pin() { chmod 0644 "$work/etc/kubehsm/issuer.pin"
	expect_fail "$KUBEHSM" config check "$CONF"; chmod 0600 "$work/etc/kubehsm/issuer.pin"; }
step "an issuer PIN file readable by others is rejected, naming the file" loose_pin

SVC=kubehsm-demo-$$
pam_setup() {
	on_exit "rm -f /etc/pam.d/$SVC"
	pam_service_file "/etc/pam.d/$SVC" --keyinit "config=$CONF"
	indent <"/etc/pam.d/$SVC"
}
step "install the PAM service /etc/pam.d/$SVC (pam_keyinit, then pam_kubehsm)" pam_setup

api_setup() {
	kubeapi_start "$PKI_DIR/issuerca.pem" || return 1
	printf '    %s: nginx, TLS client certificate required, trusts only the issuer CA;\n' "$KUBEAPI_URL"
	printf '    serves /version, pods, selfsubjectreviews (echoes the client certificate subject)\n'
}
step "start the Kubernetes API stand-in (nginx mTLS on loopback)" api_setup

kubeconfigs() {
	local u home
	for u in "$alice" "$bob"; do
		home=$(getent passwd "$u" | cut -d: -f6)
		mkdir -p "$home/.kube"
		{ printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: demo\n  cluster:\n    server: %s\n    certificate-authority: %s\n' \
			"$KUBEAPI_URL" "$KUBEAPI_CA"
		  printf 'contexts:\n- name: demo\n  context: {cluster: demo, user: kubehsm, namespace: default}\ncurrent-context: demo\n'
		  "$KUBEHSM" kubeconfig --name kubehsm; } >"$home/.kube/config"
		chown -R "$u:" "$home/.kube"; chmod 0600 "$home/.kube/config"
	done
	printf '    ~/.kube/config of both users; the users: entry is what kubehsm kubeconfig prints:\n'
	sed -n '/^users:/,$p' "$home/.kube/config" | indent
	! grep -qi 'BEGIN\|client-key\|token:' "$home/.kube/config"   # no secret in it
}
step "write each user's kubeconfig (exec plugin: kubehsm exec, no secrets on disk)" kubeconfigs

login() {
	local out rc=0
	# The PIN is fed once on stdin, as a login prompt would get it.  Without
	# close_session, the login stays open after pamtester exits - like a
	# shell that is still running - and the record stays in alice's keyring.
	out=$(printf '%s\n' "$PIN1" | pamtester "$SVC" "$alice" authenticate open_session 2>&1) || rc=$?
	printf '%s\n' "$out" | indent
	[ $rc -eq 0 ] || return 1
	as "$alice" sh -c 'keyctl show @u' | indent
}
step "log $alice in through PAM: pamtester $SVC $alice authenticate open_session (PIN once)" login

kc_ok() {   # kc_ok USER REGEX KUBECTL ARGS...: must succeed and print REGEX
	local u=$1 re=$2 out; shift 2
	# stdout is shown; kubectl's discovery chatter on stderr only on failure
	out=$(as "$u" "$@" 2>"$work/kc.err") || { printf '%s\n' "$out" | cat - "$work/kc.err" | indent; return 1; }
	printf '%s\n' "$out" | indent
	grep -Eq -- "$re" <<<"$out" || { cat "$work/kc.err" | indent; return 1; }
}
# kc_fail USER KUBECTL ARGS...: must fail; shows the plugin's and kubectl's
# own error lines once each (kubectl retries discovery and repeats them).
kc_fail() {
	local u=$1 rc=0; shift
	kc_out=$(as "$u" "$@" 2>&1) || rc=$?
	kc_out=$(grep -Ev '^E[0-9]{4} ' <<<"$kc_out" | awk '!seen[$0]++')
	printf '%s\n' "$kc_out" | indent
	printf '    (kubectl exit status %d)\n' $rc
	[ $rc -ne 0 ]
}
step "$alice, no terminal, stdin /dev/null: kubectl 1.33 get --raw /version" \
	kc_ok "$alice" '"gitVersion":"v1.30.0-kubehsm"' "$K133" get --raw /version
step "$alice: kubectl 1.33 get pods" kc_ok "$alice" '^kh-test-pod +1/1 +Running' "$K133" get pods
step "$alice: kubectl 1.33 auth whoami (the server echoes the certificate it saw)" \
	kc_ok "$alice" "CN=$alice\$" "$K133" auth whoami
step "$alice: an older kubectl, 1.27, get pods" kc_ok "$alice" '^kh-test-pod' "$K127" get pods
notty() {   # prove there is no terminal: tty says so, kubectl still works
	as "$alice" sh -c 'tty; exit 0' | indent
	as "$alice" sh -c 'tty' >/dev/null 2>&1 && return 1
	kc_ok "$alice" "CN=$alice" "$K133" get --raw /kh-whoami
}
step "$alice: no controlling terminal at all, and still no PIN prompt" notty

status() { as "$alice" "$KUBEHSM" status | indent; }
step "$alice: kubehsm status" status

bob_nothing() {
	local out rc id
	kc_fail "$bob" "$K133" get pods || return 1
	grep -q '^kubehsm: no kube session: log in' <<<"$kc_out" && ! grep -q "$alice" <<<"$kc_out" || return 1
	id=$(as "$alice" keyctl search @u user kubehsm:session:v1) || return 1
	printf '    %s reads %s'"'"'s record, key %s, directly:\n' "$bob" "$alice" "$id"
	rc=0; out=$(as "$bob" keyctl pipe "$id" 2>&1) || rc=$?
	printf '%s\n' "$out" | indent
	[ $rc -ne 0 ] && grep -q 'Permission denied' <<<"$out"
}
step "$bob (not logged in) gets nothing from $alice's session" bob_nothing

logout() { as "$alice" "$KUBEHSM" logout | indent; }
step "$alice logs out: kubehsm logout (what pam_kubehsm's close_session does at the last logout)" logout

after_logout() {
	kc_fail "$alice" "$K133" get pods && grep -q '^kubehsm: your kube session was ended' <<<"$kc_out"
}
step "$alice: kubectl now fails, and says why" after_logout

total=$(( $(ms) - T0 ))
printf '\ndemo: all %d steps passed in %d ms\n' "$n" "$total"
printf '%s\n' "${summary[@]}"
