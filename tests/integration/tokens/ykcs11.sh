#!/bin/bash
# ykcs11: the same emulated PIV cards through Yubico's ykcs11 (libykcs11.so)
# instead of OpenSC: one card as a plain PIV applet, one with the emulator's
# YubiKey 5 personality (ATR, GET VERSION, GET SERIAL, GET METADATA).
# ykcs11 labels a token "YubiKey PIV #<serial>" (#0 for a plain applet), so
# the label says nothing of its owner: the certificate does.
#
# What ykcs11 needs of a card (measured with the emulator, see
# tests/harness/pcsc.sh): a reader whose name starts with "Yubico" (it lists
# no slot otherwise), the PIV application selectable by its 5-byte RID,
# data answered to case-3 APDUs, an empty VERIFY answering the tries — and,
# from ykcs11 2.7 (Debian 13) on, YubiKey's GET VERSION (INS FD): libykpiv
# 2.7 fails the connect when it fails, so a plain PIV card is "no token"
# (2.2.0, Debian 12, ignored it).  The plain card answers it there
# (piv_card.py --get-version), once the refusal itself is measured.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/pamsvc.sh"
. "$KH_SRCDIR/tests/harness/pcsc.sh"
. "$KH_SRCDIR/tests/integration/tokens/tokens_common.sh"

need_root
need_cmd pamtester pcscd opensc-tool openssl keyctl jq setpriv unshare nsenter ip softhsm2-util \
	pkcs11-tool
YKCS11=/usr/lib/x86_64-linux-gnu/libykcs11.so
[ -r "$YKCS11" ] || skip_all "needs ykcs11 (apt-get install ykcs11)"
[ -r "$PCSC_VPCD_DRIVER" ] || skip_all "needs vsmartcard-vpcd"
/usr/bin/python3 -c 'import cryptography' 2>/dev/null || skip_all "needs python3-cryptography"
[ -f "$PAM_KUBEHSM" ] && [ -x "$KUBEHSM" ] || skip_all "the module and kubehsm are not built"
tokens_pamtester

PIN=123456
ETC=$KH_TMP/etc
make_user alice
make_user bob
ISSUER_LABEL=khykhost$$
{
	pki_init && pki_ca users "kh PIV users CA" && pki_ca issuerca "kh issuer CA" &&
	pki_issuer_token "$ISSUER_LABEL" 987654 issuerca && chmod 0600 "$PKI_DIR/issuer.pin" &&
	export PIV_CA_DIR=$KH_TMP/pivca && mkdir -p "$PIV_CA_DIR" &&
	cp "$PKI_DIR/users.pem" "$PIV_CA_DIR/ca.crt" && cp "$PKI_DIR/users.key" "$PIV_CA_DIR/ca.key" &&
	CA=$KH_TMP/card-alice && CB=$KH_TMP/card-bob &&
	PIV_EKU_9C=clientAuth piv_make_card "$CA" "Alice Smith" "$alice" rsa &&
	PIV_SERIAL=7654321 piv_make_card "$CB" "Bob Jones" "$bob" ec
} >"$KH_TMP/setup.log" 2>&1 || { cat "$KH_TMP/setup.log"; echo "Bail out! PKI and cards"; exit 1; }
pcsc_start "$KH_TMP/pcsc" && piv_card_start "$KH_TMP/pcsc" 0 "$CA" &&
	piv_card_start "$KH_TMP/pcsc" 1 "$CB" --yubikey || { echo "Bail out! pcscd and cards"; exit 1; }
SOCK=$PCSCLITE_CSOCK_NAME

ENV="PCSCLITE_CSOCK_NAME = \"$SOCK\";"
tokens_policy "$ETC/uid.conf" module="$YKCS11" env="$ENV"
tokens_policy "$ETC/9c.conf" module="$YKCS11" env="$ENV" token='key_id = "02";'
tokens_policy "$ETC/yk5.conf" module="$YKCS11" env="$ENV" token='uri = "pkcs11:model=YubiKey%20YK5";'
SVC=kh-ykcs11-$$
for p in uid 9c yk5; do tokens_service "$SVC-$p" "$ETC/$p.conf"; done

mark() { ma=$(piv_events_mark "$CA"); mb=$(piv_events_mark "$CB"); }
at() { if [ "$1" = "$CA" ]; then piv_count "$CA" "$2" "$ma"; else piv_count "$CB" "$2" "$mb"; fi; }
NOENV=(env -u PCSCLITE_CSOCK_NAME)

# ykcs11's own version (C_GetInfo: 2.20 is 2.2.0, 2.71 is 2.7.1).
YK_LIBVER=$(pkcs11-tool --module "$YKCS11" -I 2>/dev/null |
	sed -n 's/^Library .*(ver \([0-9]*\)\.\([0-9]*\))$/\1 \2/p')
read -r yk_major yk_minor <<<"$YK_LIBVER"
[ -n "${yk_minor:-}" ] || { echo "Bail out! cannot read ykcs11's version"; exit 1; }
diag "ykcs11 $yk_major.$yk_minor (C_GetInfo libraryVersion)"
if [ "$yk_major" -gt 2 ] || { [ "$yk_major" = 2 ] && [ "$yk_minor" -ge 70 ]; }; then
	mark
	run "${NOENV[@]}" "$KUBEHSM" token --config "$ETC/uid.conf" --user "$alice"
	like "$(oneline "$out")" "slot [0-9]+ 'Yubico Virtual PIV 00 00' \| +no token \|" \
		"ykcs11 >= 2.7: a plain PIV card that does not answer GET VERSION is no token"
	is "$(at "$CA" "unsupported 00 FD")" 1 "... after exactly one GET VERSION (INS FD), answered 6D00"
	piv_card_stop "$CA" && piv_card_start "$KH_TMP/pcsc" 0 "$CA" --get-version ||
		{ echo "Bail out! alice's card with GET VERSION"; exit 1; }
fi

mark
run "${NOENV[@]}" "$KUBEHSM" token --config "$ETC/uid.conf" --user "$alice"
is "$rc" 0 "kubehsm token through ykcs11: a token for $alice" || diag "$err"
like "$out" "token +'YubiKey PIV #0'  Yubico \(www.yubico.com\) / YubiKey XXX" \
	"a plain PIV applet: 'YubiKey PIV #0', model YubiKey XXX"
like "$out" "token +'YubiKey PIV #7654321'  Yubico \(www.yubico.com\) / YubiKey YK5  serial 7654321" \
	"the YubiKey 5 personality: 'YubiKey PIV #<serial>', model YubiKey YK5"
like "$out" "^$alice: token 'YubiKey PIV #0' \(serial 0, slot [0-9]+\), certificate CKA_ID 01\$" \
	"the label names no one: $alice's card is found by its certificate"
like "$(grep -A8 "CKA_ID 02" <<<"$out" | head -9)" "PIN per signature: yes" \
	"ykcs11: the 9C key wants a PIN per signature"
is "$(at "$CA" verify) $(at "$CB" verify)" "0 0" "kubehsm token sent no PIN"

mark
pt "$SVC-uid" "$alice" "$PIN" authenticate open_session close_session
is "$rc" 0 "$alice logs in through ykcs11 (plain applet, RSA-2048)" || diag "$(oneline "$out$err")"
is "$(at "$CA" "verify ok") $(at "$CA" "sign 9a") $(at "$CB" verify)" "1 1 0" \
	"one VERIFY and one 9A signature at her card, no VERIFY at bob's"
mark
pt "$SVC-uid" "$bob" "$PIN" authenticate
# ykcs11 2.2.0 builds a YubiKey >= 5.3's public keys from GET METADATA, with
# explicit curve parameters instead of the P-256 OID: the certificate's key,
# not the token's public key object, is what kubehsm checks against.
is "$rc" 0 "$bob logs in through ykcs11 (YubiKey 5 personality, EC P-256)" || diag "$(oneline "$out$err")"
is "$(at "$CB" "verify ok") $(at "$CA" verify)" "1 0" "one VERIFY at bob's card, none at $alice's"
mark
pt "$SVC-yk5" "$alice" "$PIN" authenticate
like "$rc:$(oneline "$err")" "^1:.*cannot retrieve authentication info" \
	"token.uri model=YubiKey YK5 leaves $alice's plain card out"
is "$(at "$CA" verify)" 0 "... and it is not offered a PIN"

mark
pt "$SVC-9c" "$alice" "$PIN" authenticate
is "$rc" 0 "9C through ykcs11: one PIN through PAM, no terminal" || diag "$(oneline "$out$err")"
is "$(at "$CA" "verify ok") $(at "$CA" "sign 9c")" "2 1" \
	"9C through ykcs11: C_Login + the context-specific login, one signature"

mark
pt "$SVC-uid" "$alice" 000000 authenticate
is "$rc:$(at "$CA" "verify fail"):$(piv_tries "$CA")" "1:1:2" "a wrong PIN: one VERIFY, one try (3 -> 2)"
for _ in 1 2; do
	LOGIN_OUT=$(printf '%s\n' 000000 | "${PT[@]}" "$SVC-uid" "$alice" authenticate 2>&1)
done
like "$LOGIN_OUT" "final PIN try" "ykcs11 reports the final try: warned"
is "$(piv_tries "$CA")" 0 "the card is blocked"
mark
pt "$SVC-uid" "$alice" "$PIN" authenticate
like "$rc:$(oneline "$out$err")" "^1:.*PIN locked" "a blocked card: refused (ykcs11 reports CKF_USER_PIN_LOCKED)"
is "$(at "$CA" verify)" 0 "a blocked card: no VERIFY (ykcs11 itself would send one)"

done_testing
