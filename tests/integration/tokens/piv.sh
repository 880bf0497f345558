#!/bin/bash
# piv: PIV smartcards on a real PC/SC stack — a private pcscd with vsmartcard's
# vpcd, two emulated SP 800-73-4 cards (tests/harness/piv_card.py) of two
# users, OpenSC's opensc-pkcs11.so — through pamtester with an EMPTY
# environment and no terminal (everything the module needs comes from
# pkcs11.env, as in sshd's auth child), kubehsm token, kubehsm config check,
# kubehsm sign --key token and tests/probes/token_probe.  What each card
# really saw (VERIFYs, signatures, resets) is counted at the card.
#
# Cases: a card whose CN is a display name, found by certificate with map =
# "uid" and "email"; two cards of two users, each user logs in with their
# own and never touches the other's; a 9C key (key_id = "02",
# CKA_ALWAYS_AUTHENTICATE): one PIN through PAM, exactly one VERIFY per
# C_Login plus the context-specific one, and sign --key token the same;
# a wrong PIN costs one try; the final try is warned, or refused without a
# try when the conversation cannot warn; a blocked card is refused without
# any VERIFY; pkcs11.env set at C_Initialize is enough for a card inserted
# afterwards; disconnect_action = reset measured (the card stays verified
# after logout without it) and warned about.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/pamsvc.sh"
. "$KH_SRCDIR/tests/harness/pcsc.sh"
. "$KH_SRCDIR/tests/integration/tokens/tokens_common.sh"

need_root
need_cmd pamtester pcscd opensc-tool openssl keyctl jq setpriv unshare nsenter ip \
	softhsm2-util pkcs11-tool base64
OPENSC=/usr/lib/x86_64-linux-gnu/opensc-pkcs11.so
PROBE=$KH_BUILDDIR/tests/probes/token_probe
DRIVER=$KH_BUILDDIR/tests/probes/pam_driver
[ -r "$OPENSC" ] || skip_all "needs OpenSC (apt-get install opensc-pkcs11)"
[ -r "$PCSC_VPCD_DRIVER" ] || skip_all "needs vsmartcard-vpcd"
/usr/bin/python3 -c 'import cryptography' 2>/dev/null || skip_all "needs python3-cryptography"
[ -f "$PAM_KUBEHSM" ] && [ -x "$KUBEHSM" ] && [ -x "$PROBE" ] && [ -x "$DRIVER" ] ||
	skip_all "the module, kubehsm and the probes are not built"
chmod 0755 "$KH_BUILDDIR" "$KH_BUILDDIR/helper" 2>/dev/null || true
tokens_pamtester

PIN=123456
ETC=$KH_TMP/etc
API='external-signer.authentication.k8s.io/v1alpha1'

# --- users, CAs, the issuer (SoftHSM), two cards -------------------------------
make_user alice
make_user bob
make_user carol      # has no card
ISSUER_LABEL=khpivhost$$
{
	pki_init && pki_ca users "kh PIV users CA" && pki_ca issuerca "kh issuer CA" &&
	pki_issuer_token "$ISSUER_LABEL" 987654 issuerca && chmod 0600 "$PKI_DIR/issuer.pin" &&
	# The cards' certificates come from the same users CA.
	export PIV_CA_DIR=$KH_TMP/pivca && mkdir -p "$PIV_CA_DIR" &&
	cp "$PKI_DIR/users.pem" "$PIV_CA_DIR/ca.crt" && cp "$PKI_DIR/users.key" "$PIV_CA_DIR/ca.key" &&
	CA=$KH_TMP/card-alice && CB=$KH_TMP/card-bob &&
	# alice: EC, 9A (clientAuth) and 9C with clientAuth too, an email SAN;
	# bob: RSA-2048, 9C for e-mail only (as most cards have it).
	PIV_EKU_9C=clientAuth PIV_SAN="email:$alice@example.org" \
		piv_make_card "$CA" "Alice Smith" "$alice" ec &&
	piv_make_card "$CB" "Bob Jones" "$bob" rsa
} >"$KH_TMP/setup.log" 2>&1 || { cat "$KH_TMP/setup.log"; echo "Bail out! PKI and cards"; exit 1; }

t0=$SECONDS
pcsc_start "$KH_TMP/pcsc" && piv_card_start "$KH_TMP/pcsc" 0 "$CA" &&
	piv_card_start "$KH_TMP/pcsc" 1 "$CB" || { echo "Bail out! pcscd and cards"; exit 1; }
diag "pcscd and two cards up in $((SECONDS - t0)) s"
SOCK=$PCSCLITE_CSOCK_NAME
# pcscd 2.x: alice and bob pass its polkit check by the rule kubehsm ships;
# carol, who has no card, does not.
pcsc_polkit_allow "$alice" "$bob" || { echo "Bail out! the pcscd polkit rule"; exit 1; }
pcsc_opensc_conf "$KH_TMP/osc-reset" reset && OSC_RESET=$OPENSC_CONF
pcsc_opensc_conf "$KH_TMP/osc-leave" && OSC_LEAVE=$OPENSC_CONF
unset OPENSC_CONF

# --- policies: OpenSC with pkcs11.env, the SoftHSM issuer with issuer.env -------
ENV_RESET="PCSCLITE_CSOCK_NAME = \"$SOCK\"; OPENSC_CONF = \"$OSC_RESET\";"
ENV_LEAVE="PCSCLITE_CSOCK_NAME = \"$SOCK\"; OPENSC_CONF = \"$OSC_LEAVE\";"
tokens_policy "$ETC/uid.conf" module="$OPENSC" env="$ENV_RESET"
tokens_policy "$ETC/leave.conf" module="$OPENSC" env="$ENV_LEAVE"
tokens_policy "$ETC/email.conf" module="$OPENSC" env="$ENV_RESET" map=email \
	trust='domains = [ "example.org" ];'
tokens_policy "$ETC/9c.conf" module="$OPENSC" env="$ENV_RESET" token='key_id = "02";' \
	cache_pin=true signer=token
SVC=kh-piv-$$
for p in uid leave email 9c; do tokens_service "$SVC-$p" "$ETC/$p.conf"; done

# mark: note both cards' event counts; at CARD EVENT: how many since.
mark() { ma=$(piv_events_mark "$CA"); mb=$(piv_events_mark "$CB"); }
at() { if [ "$1" = "$CA" ]; then piv_count "$CA" "$2" "$ma"; else piv_count "$CB" "$2" "$mb"; fi; }
prompts() { grep -o "PIN for token '[^']*'" <<<"$1" | grep -c . || :; }
NOENV=(env -u PCSCLITE_CSOCK_NAME -u OPENSC_CONF)

# --- kubehsm token: what the module shows, and the choice, without a PIN -------
mark
run "${NOENV[@]}" "$KUBEHSM" token --config "$ETC/leave.conf" --user "$alice"
is "$rc" 0 "kubehsm token: exit 0, a token would be used for $alice" || diag "$err"
like "$out" "token +'Alice Smith'  piv_II / PKCS#15 emulated  serial [0-9]{16}" \
	"kubehsm token: the card labelled with the CN (a display name), manufacturer, model, serial"
like "$out" "subject +CN=Alice Smith,UID=$alice" "kubehsm token: the certificate's subject"
like "$out" "maps to +$alice \(trust.map = uid\)" "kubehsm token: it maps to $alice by UID"
like "$(grep -A8 "CKA_ID 01 'Certificate for PIV Authentication'" <<<"$out" | head -9)" \
	"for $alice +the user's  <- kubehsm uses this one" \
	"kubehsm token: 9A (CKA_ID 01) is the one used (clientAuth first, then the lowest CKA_ID)"
like "$(grep -A8 "CKA_ID 02 'Certificate for Digital Signature'" <<<"$out" | head -9)" \
	"PIN per signature: yes \(PIV slot 9C" \
	"kubehsm token: the 9C key wants its PIN per signature (OpenSC hides the key before login)"
like "$out" "maps to +$bob" "kubehsm token: bob's card is shown as $bob's"
like "$out" "^$alice: token 'Alice Smith' \(serial [0-9]+, slot [0-9]+\), certificate CKA_ID 01\$" \
	"kubehsm token: the verdict names the token and certificate"
like "$err" "warning: OpenSC leaves a card verified after kubehsm logs out.*disconnect_action = reset" \
	"kubehsm token: warns when opensc.conf does not reset the card at disconnect"
run "${NOENV[@]}" "$KUBEHSM" token --config "$ETC/uid.conf" --user "$alice" --json
is "$(jq -r '.verdict.outcome + " " + .verdict.token + " " + .verdict.certificateId' <<<"$out")" \
	"chosen Alice Smith 01" "kubehsm token --json: the same verdict"
is "$(jq -r '.warnings | length' <<<"$out")" 0 "kubehsm token: no warning with disconnect_action = reset"
run "${NOENV[@]}" "$KUBEHSM" token --config "$ETC/uid.conf" --user "$carol"
is "$rc" 1 "kubehsm token: exit 1 for a user without a card"
like "$out" "^$carol: no token: no token holds a valid certificate of '$carol'" \
	"kubehsm token: ... and says why"
run "${NOENV[@]}" "$KUBEHSM" config check "$ETC/9c.conf"
like "$out" "# token 'Alice Smith' .*CKA_ID 02\) needs the PIN for every signature" \
	"config check: says the selected 9C key needs a PIN per signature"
is "$rc:$err" "0:" "config check: exit 0, nothing on stderr (disconnect_action = reset is set)"
is "$(at "$CA" verify) $(at "$CB" verify)" "0 0" "none of that sent a PIN to either card"

# --- two cards of two users: each their own, never the other's ------------------
mark
pt "$SVC-uid" "$alice" "$PIN" authenticate open_session close_session
is "$rc" 0 "$alice logs in with her card (CN 'Alice Smith', map uid), empty environment" ||
	diag "$(oneline "$out$err")"
is "$(prompts "$out$err")" 1 "$alice: one PIN prompt, naming her card"
is "$(at "$CA" "verify ok") $(at "$CA" "sign 9a")" "1 1" "$alice's card: one VERIFY, one 9A signature"
is "$(at "$CB" verify) $(at "$CB" sign)" "0 0" "bob's card: no VERIFY, no signature during $alice's login"
unlike "$out$err" "PKCS#11 key PIN|WARNING|ERROR" "no library printed anything into the login"
mark
pt "$SVC-uid" "$bob" "$PIN" authenticate
is "$rc" 0 "$bob logs in with his card (RSA-2048)" || diag "$(oneline "$out$err")"
is "$(at "$CB" "verify ok") $(at "$CA" verify)" "1 0" "one VERIFY at bob's card, none at $alice's"
mark
pt "$SVC-uid" "$carol" "$PIN" authenticate
like "$rc:$(oneline "$err")" "^1:.*cannot retrieve authentication info" \
	"$carol, who has no card: PAM_AUTHINFO_UNAVAIL (the stack goes on to the password)"
is "$(prompts "$out$err") $(at "$CA" verify) $(at "$CB" verify)" "0 0 0" "$carol: no prompt, no VERIFY at any card"
mark
pt "$SVC-email" "$alice" "$PIN" authenticate
is "$rc" 0 "map = \"email\" (the SAN's local part, domain example.org) finds $alice's card" ||
	diag "$(oneline "$out$err")"

# --- 9C: CKA_ALWAYS_AUTHENTICATE, one PIN through PAM ---------------------------
mark
pt "$SVC-9c" "$alice" "$PIN" authenticate open_session
is "$rc" 0 "key_id = \"02\" (9C, a PIN per signature): login with no terminal" || diag "$(oneline "$out$err")"
is "$(prompts "$out$err")" 1 "9C: the PIN was asked once, through PAM"
is "$(at "$CA" "verify ok") $(at "$CA" "verify fail")" "2 0" \
	"9C: two VERIFYs with the right PIN (C_Login + the context-specific login), none wrong"
is "$(at "$CA" "sign 9c") $(at "$CA" "sign 9a")" "1 0" "9C: the challenge signed with 9C"
unlike "$out$err" "PKCS#11 key PIN" "9C: libp11 asked no one for a PIN"

# sign --key token: the session's certificate found on the card, the cached
# PIN for the C_Login and, again, for the context-specific login.
openssl rand 32 >"$KH_TMP/digest"
REQ=$(printf '{"apiVersion":"%s","kind":"SignRequest","configuration":{},"digest":"%s","signerOptsType":"crypto.Hash","signerOpts":"5"}' \
	"$API" "$(base64 -w0 "$KH_TMP/digest")")
mark
run as_user "$alice" env KUBEHSM_CONFIG="$ETC/9c.conf" "$KUBEHSM" sign --key token "$REQ" </dev/null
err=$(grep -v '^Joined session keyring: ' <<<"$err")
printf '%s' "$out" | jq -r .signature 2>/dev/null | base64 -d >"$KH_TMP/sig" 2>/dev/null
openssl x509 -in "$CA/9c.crt" -noout -pubkey >"$KH_TMP/9c.pub"
if [ "$rc" = 0 ] && openssl pkeyutl -verify -pubin -inkey "$KH_TMP/9c.pub" -in "$KH_TMP/digest" \
	-sigfile "$KH_TMP/sig" >/dev/null 2>&1; then
	pass "kubehsm sign --key token as $alice (no terminal, environment reset): the 9C key signed"
else
	fail "kubehsm sign --key token as $alice: the 9C key signed"; diag "rc=$rc out=$out err=$err"
fi
is "$(at "$CA" "verify ok") $(at "$CA" "sign 9c")" "2 1" "sign --key token: login + context-specific login, one signature"
if pcsc_has_polkit; then
	# Out of the rule's group (polkit reads it at each check), the same
	# command is refused by pcscd, and says so.
	gpasswd -d "$alice" "khpcsc$$" >/dev/null
	mark
	run as_user "$alice" env KUBEHSM_CONFIG="$ETC/9c.conf" "$KUBEHSM" sign --key token "$REQ" </dev/null
	like "$rc:$(oneline "$err")" "^[1-9][0-9]*:.*pcscd refused this process: its polkit check" \
		"sign --key token as $alice outside the polkit rule: says pcscd refused her" ||
		diag "rc=$rc err=$err"
	is "$(at "$CA" verify)" 0 "... and no PIN reached her card"
	gpasswd -a "$alice" "khpcsc$$" >/dev/null
fi

# --- pcscd's polkit check: a user it refuses is told so ---------------------------
if pcsc_has_polkit; then
	run as_user "$carol" "$KUBEHSM" token --config "$ETC/uid.conf"
	like "$rc:$(oneline "$err")" \
		"^1:.*cannot list slots.*pcscd refused this process: its polkit check \(action org\.debian\.pcsc-lite\.access_pcsc\) said no.*pam_kubehsm\(8\)" \
		"kubehsm token as $carol, outside the polkit rule: says pcscd refused her, and where the rule is" ||
		diag "rc=$rc err=$err"
	diag "$carol is told: $(grep -m1 'pcscd refused' <<<"$err")"
	grep -q 'Rejected unauthorized PC/SC client' "$PCSC_DIR/pcscd.log"
	ok $? "... and pcscd did refuse her (its log)"
	run as_user "$alice" "$KUBEHSM" token --config "$ETC/uid.conf"
	like "$rc:$(oneline "$out")" "^0:.*token +'Alice Smith'" "kubehsm token as $alice, inside the rule: her card"
else
	diag "pcscd $(pcscd --version 2>&1 | sed -n '1s/.*version \(.*\)\.$/\1/p') asks no polkit: no refusal to test"
fi

# --- pkcs11.env is read at C_Initialize, and that is enough -------------------
# bob's card is taken out; the probe loads OpenSC with PCSCLITE_CSOCK_NAME
# and OPENSC_CONF from -e (its own environment has neither); the card goes
# back in; the same process, whose environment is as it was, sees it.
piv_card_stop "$CB"
rm -f "$KH_TMP/go" "$KH_TMP/go.ready"
"${NOENV[@]}" "$PROBE" -m "$OPENSC" -e PCSCLITE_CSOCK_NAME="$SOCK" -e OPENSC_CONF="$OSC_RESET" \
	reinsert "$KH_TMP/go" >"$KH_TMP/reinsert.out" 2>&1 &
probe_pid=$!
for _ in $(seq 1 400); do [ -e "$KH_TMP/go.ready" ] && break; sleep 0.05; done
piv_card_start "$KH_TMP/pcsc" 1 "$CB" || echo "Bail out! bob's card back in"
touch "$KH_TMP/go"
wait "$probe_pid"
out=$(cat "$KH_TMP/reinsert.out")
like "$out" "env PCSCLITE_CSOCK_NAME=unset" "after C_Initialize the variables are put back (unset)"
is "$(sed -n '/^again$/q;/^label=/p' <<<"$out" | tr '\n' ' ')" "label=Alice Smith " \
	"before: the probe sees alice's card only"
is "$(sed -n '/^again$/,$p' <<<"$out" | grep '^label=' | sort | tr '\n' ' ')" \
	"label=Alice Smith label=Bob Jones " "a card inserted after C_Initialize is seen without the variables"

# --- disconnect_action: measured at the card ------------------------------------
# Another application keeps alice's card connected (pcscd would power it off
# ~1 s after the last client otherwise).
pcsc_hold 0
pt "$SVC-leave" "$alice" "$PIN" authenticate
is "$rc:$(piv_tries "$CA")" "0:verified" \
	"disconnect_action = leave: after the login the card is still verified (OpenSC sends nothing on C_Logout)"
pcsc_release 0
sleep 1.5
pcsc_hold 0
mark
pt "$SVC-uid" "$alice" "$PIN" authenticate
tries=$(piv_tries "$CA")
if [ "$rc" = 0 ] && [ "$tries" = 3 ] && [ "$(at "$CA" reset)" -ge 1 ]; then
	pass "disconnect_action = reset: the card was reset after the login, not verified (3 tries)"
else
	fail "disconnect_action = reset: the card was reset after the login"; diag "rc=$rc tries=$tries"
fi
pcsc_release 0

# --- wrong PIN, final try, blocked ----------------------------------------------
mark
pt "$SVC-uid" "$alice" 000000 authenticate
like "$rc:$(oneline "$err")" "^1:.*Authentication failure" "a wrong PIN: PAM_AUTH_ERR"
is "$(at "$CA" "verify fail") $(at "$CA" "verify ok") $(piv_tries "$CA")" "1 0 2" \
	"a wrong PIN: exactly one VERIFY, the counter down by one (3 -> 2)"
pt "$SVC-uid" "$alice" 000000 authenticate
is "$(piv_tries "$CA")" 1 "a second wrong PIN: one try left"
mark
run "${PT_ENV[@]}" KH_CONV_MUTE=1 KH_PIN="$PIN" setsid -w timeout 180 \
	"$DRIVER" "$SVC-uid" "$alice" 1 authenticate
is "$rc:$(at "$CA" verify)" "7:0" "final try and a conversation that cannot warn: refused, no VERIFY"
mark
pt "$SVC-uid" "$alice" "$PIN" authenticate
like "$rc:$(oneline "$out")" "^0:.*kubehsm: token 'Alice Smith': final PIN try" \
	"final try: the user is warned, then the right PIN logs in"
is "$(at "$CA" "verify ok") $(piv_tries "$CA")" "1 3" "final try: one VERIFY, the counter back to 3"

for _ in 1 2 3; do pt "$SVC-uid" "$bob" 000000 authenticate; done
is "$(piv_tries "$CB")" 0 "three wrong PINs block bob's card"
mark
pt "$SVC-uid" "$bob" "$PIN" authenticate
like "$rc:$(oneline "$out$err")" "^1:.*PIN locked.*maximum number of retries" \
	"a blocked card: PAM_MAXTRIES, the user told"
is "$(prompts "$out$err") $(at "$CB" verify)" "0 0" "a blocked card: no PIN prompt, no VERIFY sent to it"

# --- the card pulled from its reader right after C_Login (issue #29) -------------
# p11shim in front of OpenSC runs KH_SHIM_AFTER_LOGIN once the card has
# accepted the PIN: it stops alice's emulator, so her card is gone from
# the reader before C_Login returns.  libp11 0.4.13 (Debian 13) waited for
# ever here; kubehsm no longer asks libp11 for anything after C_Login.  The
# login must end, within 30 s (measured: a few seconds, the time OpenSC
# takes to see the reader empty), with one line saying the card went away.
SHIM=$KH_BUILDDIR/tests/probes/p11shim/.libs/libkhp11shim.so
if [ -f "$SHIM" ]; then
	kh_trusted SHIM "$SHIM"
	tokens_policy "$ETC/pulled.conf" module="$SHIM" env="$ENV_RESET"
	tokens_service "$SVC-pulled" "$ETC/pulled.conf"
	# Pull alice's card, then wait (at most 5 s) until pcscd has seen
	# reader 0 empty, as it has when a hand pulls a card.
	PULL=$KH_TMP/pull.sh
	cat >"$PULL" <<PULL
#!/bin/sh
kill -TERM $(cat "$CA/card.pid")
i=0
while [ \$i -lt 50 ]; do
	PCSCLITE_CSOCK_NAME=$SOCK opensc-tool --list-readers 2>/dev/null | grep -Eq '^0 +No' && exit 0
	sleep 0.1
	i=\$((i + 1))
done
PULL
	chmod 0755 "$PULL"
	: >"$KH_MODLOG"
	t0=$(date +%s%N)
	run env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LD_PRELOAD="$KH_PAM_PRELOAD" \
		KH_LOGCAP_FILE="$KH_MODLOG" KH_SHIM_MODULE="$OPENSC" KH_SHIM_AFTER_LOGIN="$PULL" \
		setsid -w timeout 30 pamtester "$SVC-pulled" "$alice" authenticate <<<"$PIN"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	like "$rc:$(oneline "$err")" "^[1-9]:.*Authentication service cannot retrieve" \
		"card pulled after C_Login: the login ends (PAM_AUTHINFO_UNAVAIL), no wait for ever"
	isnt "$rc" 124 "card pulled after C_Login: ended before the 30 s bound (took $ms ms)"
	like "$(cat "$KH_MODLOG")" "user '$alice': (token key|proof of possession): (token 'Alice Smith' was removed|the token was removed while signing)" \
		"card pulled after C_Login: the log says the card was removed"
	diag "card pulled after C_Login: the login ended in $ms ms"
else
	skip "tests/probes/p11shim not built"
fi

done_testing
