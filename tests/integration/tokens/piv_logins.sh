#!/bin/bash
# piv_logins: a PIV card's 9C key (CKA_ALWAYS_AUTHENTICATE) behind the real
# login programs, on a pty — OpenSSH sshd (keyboard-interactive, whose auth
# child has an EMPTY environment: PCSCLITE_CSOCK_NAME and OPENSC_CONF reach
# OpenSC only through pkcs11.env, which is the point), login(1) and su -l —
# with one PIN prompt, asked through PAM, exactly one VERIFY per C_Login
# plus the context-specific one, and nothing read from the terminal by a
# library; then kubectl 1.27 and 1.33 in the login.
#
# Then a card on the user's "laptop", forwarded with `p11-kit server
# --provider opensc-pkcs11.so` over ssh -R into a real sshd login, for
# `kubehsm login` through real pkexec and polkitd: the card labels itself,
# and is found by its certificate.  A renewal with a token holding another
# certificate (#25) is refused in one line, before any PIN is asked.
. "$KH_SRCDIR/tests/integration/logins/logins_common.sh"
. "$KH_SRCDIR/tests/harness/polkit.sh"
. "$KH_SRCDIR/tests/harness/pcsc.sh"

need_cmd pcscd opensc-tool p11-kit pkexec unshare nsenter ip
OPENSC=/usr/lib/x86_64-linux-gnu/opensc-pkcs11.so
[ -r "$OPENSC" ] || skip_all "needs OpenSC (apt-get install opensc-pkcs11)"
[ -r "$PCSC_VPCD_DRIVER" ] || skip_all "needs vsmartcard-vpcd"
/usr/bin/python3 -c 'import cryptography' 2>/dev/null || skip_all "needs python3-cryptography"
polkit_need
LOGIN_PROG=$KH_BUILDDIR/helper/kubehsm-login
[ -x "$LOGIN_PROG" ] || skip_all "helper/kubehsm-login not built"
[ "$(stat -c %u "$LOGIN_PROG")" = 0 ] || skip_all "pkexec needs $LOGIN_PROG owned by root"
P11_CLIENT=$(ls /usr/lib/*/pkcs11/p11-kit-client.so 2>/dev/null | head -n 1)
[ -n "$P11_CLIENT" ] || skip_all "needs p11-kit's client module (apt-get install p11-kit-modules)"

PIV_PIN=123456
plain_user alice "pw-alice-$$"
plain_user bob "pw-bob-$$"

# The cards come from logins_common's users CA; both 9A and 9C certify
# client authentication, and the policy names 9C (key_id = "02").
{
	export PIV_CA_DIR=$KH_TMP/pivca && mkdir -p "$PIV_CA_DIR" &&
	cp "$PKI_DIR/users.pem" "$PIV_CA_DIR/ca.crt" && cp "$PKI_DIR/users.key" "$PIV_CA_DIR/ca.key" &&
	CA=$KH_TMP/card-alice && CB=$KH_TMP/card-bob &&
	PIV_EKU_9C=clientAuth piv_make_card "$CA" "Alice Smith" "$alice" ec &&
	PIV_EKU_9C=clientAuth piv_make_card "$CB" "Bob Jones" "$bob" ec &&
	# bob's other certificate, on a SoftHSM token: the renewal that must
	# not ask a PIN.
	pki_user_cert bob2 users --uid "$bob" --cn "Bob Jones" &&
	pki_token_init bobold "$PIN" && pki_token_import bobold "$PIN" bob2 old 02
} >"$KH_TMP/setup.log" 2>&1 || { cat "$KH_TMP/setup.log"; _logins_bail "cards"; }
# pcscd 2.x asks polkit: it shares the system bus and polkitd that pkexec
# needs below (polkit.sh runs one of each).
if pcsc_has_polkit; then
	polkit_start --system || _logins_bail "polkitd on the system bus did not start"
fi
pcsc_start "$KH_TMP/pcsc" && piv_card_start "$KH_TMP/pcsc" 0 "$CA" &&
	piv_card_start "$KH_TMP/pcsc" 1 "$CB" || _logins_bail "pcscd and cards"
SOCK=$PCSCLITE_CSOCK_NAME
pcsc_opensc_conf "$KH_TMP/osc" reset && OSC=$OPENSC_CONF
unset OPENSC_CONF

PIVCONF=$KH_TMP/etc/piv.conf
cat >"$PIVCONF" <<EOF
version = 1;
pkcs11 = { module = "$OPENSC";
  env = { PCSCLITE_CSOCK_NAME = "$SOCK"; OPENSC_CONF = "$OSC"; };
  forward = { module = "$P11_CLIENT"; socket = "/run/user/%U/p11-kit/pkcs11"; }; };
token = { key_id = "02"; };
trust = { ca_file = "$PKI_DIR/users.pem"; map = "uid"; };
identity = { username = "%u"; groups = [ "static:dev" ]; };
issuer = { key = "pkcs11:token=$HOST;object=issuer"; module = "$PKI_MODULE";
  cert_file = "$PKI_DIR/issuer.pem"; pin_file = "$PKI_DIR/issuer.pin"; };
session = { ttl = "1h"; scope = "user"; };
polkit = { mode = "off"; };
EOF
chmod 0644 "$PIVCONF"

ma=0
mark() { ma=$(piv_events_mark "$1"); }
at() { piv_count "$1" "$2" "$ma"; }
# (the driver's own "[logindrv] answered ..." notes are not the terminal's)
pin_prompts() { grep -v '^\[logindrv\]' <<<"$1" | grep -o "PIN for token '[^']*'" | grep -c . || :; }

# p_login NAME WHAT ARGV...: alice logs in with her card's PIN; one prompt,
# two VERIFYs (C_Login + the 9C context-specific login), a kube session.
p_login() {
	local name=$1 what=$2 t
	shift 2
	mark "$CA"
	LOGIN_PIN=$PIV_PIN login_open "$name" "$@"
	if ! ok $? "$what: $alice logs in with her card's PIN (9C, a PIN per signature)"; then
		diag "$(login_transcript "$name" 12)"
		return 1
	fi
	t=$(login_transcript "$name" 200)
	is "$(pin_prompts "$t")" 1 "$what: one PIN prompt, naming the card ('Alice Smith')"
	unlike "$t" "PKCS#11 key PIN|WARNING|ERROR" "$what: no library read the terminal or wrote to it"
	is "$(at "$CA" "verify ok") $(at "$CA" "verify fail") $(at "$CA" "sign 9c")" "2 0 1" \
		"$what: at the card, C_Login and the context-specific VERIFY, one 9C signature"
	kube_session "$name" "$alice" "$what"
	login_close "$name"
	ended "$alice" "$what, logout"
}

logins_pam "$SSHD_SERVICE" < <(logins_kubehsm_stack "$PIVCONF" keyinit)
logins_pam login < <(logins_kubehsm_stack "$PIVCONF" keyinit)
logins_pam su-l < <(logins_kubehsm_stack "$PIVCONF" keyinit)
# In a sanitizer build sshd's PAM child (a fork of the single-threaded
# monitor) hangs in glibc's gettext lock when opensc-pkcs11.so's
# constructor starts GLib (sc_notify_init -> bindtextdomain), before any of
# kubehsm's code runs on the card; not seen without the sanitizers.  The
# sshd cases run in the -Werror build; login(1) and su run in both.
SSHD_CASES=1
if [ "$LOGINS_ASAN" = 1 ]; then
	SSHD_CASES=0
	diag "sanitizer build: the sshd cases (kbd-interactive, the forwarded card) run only in the -Werror build: sshd's PAM child hangs in bindtextdomain under OpenSC's GLib constructor with ASan preloaded"
fi
if [ $SSHD_CASES = 1 ]; then
	sshd_start
	ssh_argv "$alice" kbd
	p_login s1 "sshd keyboard-interactive (empty environment in the auth child)" "${SSH_ARGV[@]}"
fi
p_login l1 "login(1)" login "$alice"
p_login sl1 "su -l by root" su -l "$alice"

if [ $SSHD_CASES = 0 ]; then
	logins_sanitizer_reports
	done_testing
	exit 0
fi

# --- bob's card on his laptop, forwarded, kubehsm login -------------------------
[ -n "$POLKIT_BUS_ADDRESS" ] || polkit_start --system ||
	_logins_bail "polkitd on the system bus did not start"
logins_pam kubehsm < <(sed -e "s|pam_kubehsm\.so|$PAM_KUBEHSM config=$PIVCONF|" \
	"$KH_SRCDIR/pam/pam.d/kubehsm")
LAPTOP=$KH_TMP/laptop
mkdir -p -m 0755 "$LAPTOP" "$LAPTOP/shimctl"
: >"$LAPTOP/shimctl/logins"
LAPTOP_SOCK=$LAPTOP/pkcs11-server
# laptop_serve PROVIDER TOKEN-URI [VAR=VALUE...]: the laptop's p11-kit server.
laptop_serve() {
	local provider=$1 uri=$2
	shift 2
	rm -f "$LAPTOP_SOCK"
	env "$@" ${LOGINS_ASAN_RT:+LD_PRELOAD="$LOGINS_ASAN_RT" ASAN_OPTIONS=detect_leaks=0} \
		p11-kit server -f -n "$LAPTOP_SOCK" --provider "$provider" "$uri" \
		>"$LAPTOP/server.out" 2>&1 &
	P11_SERVER_PID=$!
	on_exit "pkill -P $P11_SERVER_PID 2>/dev/null; kill $P11_SERVER_PID 2>/dev/null"
	for _ in $(seq 1 100); do [ -S "$LAPTOP_SOCK" ] && return 0; sleep 0.05; done
	cat "$LAPTOP/server.out" >&2
	_logins_bail "p11-kit server did not start"
}
laptop_stop() { pkill -P "$P11_SERVER_PID" 2>/dev/null; kill "$P11_SERVER_PID" 2>/dev/null; wait "$P11_SERVER_PID" 2>/dev/null; }

[ -d /run/user ] || { mkdir -m 0755 /run/user && on_exit "rmdir /run/user 2>/dev/null"; }
BOB_RUN=/run/user/$(id -u "$bob")
install -d -m 0700 -o "$bob" -g "$(id -g "$bob")" "$BOB_RUN" "$BOB_RUN/p11-kit" ||
	_logins_bail "mkdir $BOB_RUN"
on_exit "rm -rf '$BOB_RUN'"
# bob's card is in his laptop, not in a reader of the bastion: the
# emulator shares one pcscd, so the card is out while sshd looks (bob then
# has no token and the password logs him in), and is the laptop's after.
piv_card_stop "$CB"
laptop_serve "$SHIM" "pkcs11:token=bobold" SOFTHSM2_CONF="$SOFTHSM2_CONF" KH_P11SHIM_DIR="$LAPTOP/shimctl"
ssh_argv "$bob" password -o ExitOnForwardFailure=yes -R "$BOB_RUN/p11-kit/pkcs11:$LAPTOP_SOCK"
LOGIN_PASSWORD=pw-bob-$$ login_open b1 "${SSH_ARGV[@]}"
ok $? "$bob logs in over ssh with his password, forwarding his laptop's p11-kit socket" ||
	diag "$(login_transcript b1)"
laptop_stop
piv_card_start "$KH_TMP/pcsc" 1 "$CB" || _logins_bail "bob's card in his laptop's reader"
laptop_serve "$OPENSC" "pkcs11:token=Bob%20Jones" PCSCLITE_CSOCK_NAME="$SOCK" OPENSC_CONF="$OSC"
KLOGIN="env KUBEHSM_LOGIN_PROGRAM=$LOGIN_PROG $KUBEHSM login"
mark "$CB"
LOGIN_PIN=$PIV_PIN login_run_tty b1 "$KLOGIN"
if [ "$rc" = 0 ] && grep -q '^Kube session started' <<<"$out"; then
	pass "kubehsm login with the forwarded card (found by certificate through p11-kit)"
else
	fail "kubehsm login with the forwarded card"; diag "rc=$rc out=$out err=$err"
fi
is "$(pin_prompts "$err")" 1 "kubehsm login: one PIN prompt, naming the card ('Bob Jones')"
is "$(at "$CB" "verify ok") $(at "$CB" "sign 9c")" "2 1" \
	"the laptop's card: C_Login + the context-specific login over p11-kit's RPC, one signature"
kube_session b1 "$bob" "forwarded card, kubehsm login"

# The laptop now serves a token holding another certificate of bob's.
laptop_stop
laptop_serve "$SHIM" "pkcs11:token=bobold" SOFTHSM2_CONF="$SOFTHSM2_CONF" KH_P11SHIM_DIR="$LAPTOP/shimctl"
s0=$(session_serial "$bob")
LOGIN_PIN=$PIN login_run_tty b1 "$KLOGIN --renew"
if [ "$rc" = 1 ] && grep -q "holds another certificate than the one your kube session was started with" <<<"$err"; then
	pass "kubehsm login --renew with a token holding another certificate: refused (#25)"
else
	fail "kubehsm login --renew with a token holding another certificate: refused"; diag "rc=$rc err=$err"
fi
is "$(pin_prompts "$err"):$(grep -c '^C_Login$' "$LAPTOP/shimctl/logins")" "0:0" \
	"... before the PIN: no prompt, no C_Login, no try spent"
is "$(grep -c '^kubehsm: ' <<<"$err")" 1 "... in one line (no second 'no kube session: Permission denied')"
is "$(session_serial "$bob")" "$s0" "... and the session is as it was"
laptop_stop
login_close b1
ended "$bob" "$bob's only login ended"

logins_sanitizer_reports
done_testing
