#!/bin/bash
# pam: pam_kubehsm.so through pamtester and a real /etc/pam.d service, with
# real SoftHSM2 tokens (one per user, one host issuer), real certificates,
# the real kernel keyring and test users.  PIN states SoftHSM never reports
# (final try, locked) and a token vanishing mid-login come from p11shim,
# which also counts C_Login calls.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/pamsvc.sh"

need_root
need_cmd pamtester softhsm2-util pkcs11-tool openssl keyctl jq setpriv timeout
[ -f "$PAM_KUBEHSM" ] || skip_all "pam/.libs/pam_kubehsm.so not built"
SHIM=$KH_BUILDDIR/tests/probes/p11shim/.libs/libkhp11shim.so
[ -f "$SHIM" ] || skip_all "tests/probes/p11shim not built (make check builds it)"
# The test shim is named in policies: a copy the policy's safety checks
# accept whatever the build tree's modes.
kh_trusted SHIM "$SHIM"

PIN=4711
ISSUER_PIN=987654
HOST=khhost$$

pki_init || { echo "Bail out! pki_init"; exit 1; }
pki_ca users "kh test users CA" || { echo "Bail out! CA"; exit 1; }
pki_ca rogue "kh rogue CA" || { echo "Bail out! CA"; exit 1; }
pki_ca issuerca "kh issuer CA" || { echo "Bail out! CA"; exit 1; }
pki_issuer_token "$HOST" "$ISSUER_PIN" issuerca || { echo "Bail out! issuer token"; exit 1; }

# user_with_token VAR CA [pki_user_cert options]: a user, their cert, their token.
user_with_token() {
	local var=$1 ca=$2 name; shift 2
	make_user "$var"
	name=${!var}
	pki_user_cert "$name" "$ca" --cn "$name" "$@" &&
		pki_token_init "$name" "$PIN" &&
		pki_token_import "$name" "$PIN" "$name" kube 01 ||
		{ echo "Bail out! token for $name"; exit 1; }
}
user_with_token alice users --o dev --o ops
user_with_token expd users --not-before 20200101000000Z --not-after 20210101000000Z
user_with_token rogue rogue
# A certificate whose O= claims the cluster-admin group.
user_with_token sysm users --o system:masters --o dev
make_user notok
# MALLORY's token holds a valid certificate of ALICE's.
make_user mallory
ALICE=$alice EXPD=$expd ROGUE=$rogue NOTOKEN=$notok MALLORY=$mallory SYSM=$sysm
pki_token_init "$MALLORY" "$PIN" && pki_token_import "$MALLORY" "$PIN" "$ALICE" kube 01 ||
	{ echo "Bail out! token for $MALLORY"; exit 1; }

# The policy: root-owned file in a root-owned directory.
ETC=$KH_TMP/etc
mkdir -m 0755 "$ETC"
chmod 0600 "$PKI_DIR/issuer.pin"
CONF=$ETC/kubehsm.conf
SHIMCONF=$ETC/shim.conf
# static:kh-all: a group that is in no certificate, to see it in the record.
write_conf() { pki_policy "$1" "$HOST" module="$2" groups='"cert:O", "static:kh-all"'; }
write_conf "$CONF" "$PKI_MODULE"
write_conf "$SHIMCONF" "$SHIM"
export KH_SHIM_MODULE=$PKI_MODULE
SHIMLOG=$KH_TMP/shim.log

SVC=kubehsm-test-$$
SVCFILE=/etc/pam.d/$SVC
on_exit "rm -f '$SVCFILE' /etc/pam.d/$SVC-*"
# service NAME MODULE-ARGS...: a service using the module for auth and session.
service() {
	local name=$1; shift
	pam_service_file "/etc/pam.d/$name" "$@"
}
service "$SVC" "config=$CONF"
service "$SVC-shim" "config=$SHIMCONF"
service "$SVC-nocache" "config=$CONF no_cache"
# Unix groups too: a directory-sized group (members over 8 KiB, like an
# LDAP group) must not be dropped for its size.  nss_wrapper (cwrap) gives
# the login its own group file with such a group, touching nothing else.
NSSW=$(ls /usr/lib/*/libnss_wrapper.so /lib/*/libnss_wrapper.so 2>/dev/null | head -1)
[ -n "$NSSW" ] || { echo "Bail out! libnss_wrapper.so not found (libnss-wrapper)"; exit 1; }
BIG=khbig$$
cp /etc/passwd "$KH_TMP/nss.passwd"
{ cat /etc/group
  printf '%s:x:%d:%s' "$BIG" $((50000 + $$ % 10000)) "$ALICE"
  for i in $(seq 1 1200); do printf ',khmember%04d' "$i"; done; echo; } >"$KH_TMP/nss.group"
NSS_ENV=(LD_PRELOAD="${KH_PAM_PRELOAD:+$KH_PAM_PRELOAD }$NSSW"
	NSS_WRAPPER_PASSWD="$KH_TMP/nss.passwd" NSS_WRAPPER_GROUP="$KH_TMP/nss.group"
	"${PT_ENV[@]:1}")
# With nss_khcase ahead of the files, user names resolve without regard to
# case, as with sssd: "ALICE" is the account "alice".
NSS_CASE_ENV=("${NSS_ENV[@]}"
	NSS_WRAPPER_MODULE_SO_PATH="$KH_BUILDDIR/tests/probes/nss/.libs/libnss_khcase.so"
	NSS_WRAPPER_MODULE_FN_PREFIX=khcase)
[ -f "$KH_BUILDDIR/tests/probes/nss/.libs/libnss_khcase.so" ] ||
	{ echo "Bail out! tests/probes/nss/libnss_khcase.so not built"; exit 1; }
# pt_nss SERVICE USER PIN OPS...: pt with the private account files.
pt_nss() {
	local svc=$1 user=$2 pin=$3; shift 3
	run env "${NSS_ENV[@]}" timeout 60 pamtester "$svc" "$user" "$@" <<<"$pin"
}
GCONF=$ETC/groups.conf
pki_policy "$GCONF" "$HOST" groups='"cert:O", "unix:khbig*"'
service "$SVC-groups" "config=$GCONF"
service "$SVC-bad" "config=$ETC/missing.conf"
# stacked SUFFIX OPTIONS...: pam_unix asks a password first (stored as
# PAM_AUTHTOK), then pam_kubehsm with OPTIONS, on the shim (C_Login counted).
stacked() {
	local f=$SVCFILE-$1; shift
	{
		echo "auth     optional pam_unix.so"
		echo "auth     required $PAM_KUBEHSM config=$SHIMCONF $*"
		echo "account  required pam_permit.so"
	} >"$f"
}
stacked ufp use_first_pass
stacked ufpp use_first_pass authtok_is_pin
stacked tfp try_first_pass
stacked tfpp try_first_pass authtok_is_pin

# pt SERVICE USER PIN OPS...: pamtester (tests/harness/pamsvc.sh).
# record USER: the user's cached record as the user sees it, as one JSON
# object (tests/harness/record.py), or "".
record() {
	as_user "$1" sh -c 'id=$(keyctl search @u user kubehsm:session:v1 2>/dev/null) &&
		keyctl pipe "$id"' 2>/dev/null | python3 "$KH_SRCDIR/tests/harness/record.py" json
}
logins() { local l; l=$(record "$1" | jq -r .logins 2>/dev/null); echo "${l:-none}"; }
shim_logins() { grep -c '^C_Login$' "$SHIMLOG" 2>/dev/null || :; }
oneline() { tr '\n' ' ' <<<"$1"; }
token_flags() { pki_p11tool --list-token-slots 2>/dev/null |
	awk -v l="$1" '/token label/ { sub(/^[^:]*: /, ""); cur = $0 }
		/token flags/ && cur == l { print; exit }'; }

plan 56

# --- right PIN: a record that chains to the issuer CA --------------------
pt "$SVC" "$ALICE" "$PIN" authenticate open_session
is "$rc" 0 "right PIN: authenticate + open_session succeed"
REC=$(record "$ALICE")
isnt "$REC" "" "a record is cached in $ALICE's user keyring"
is "$(jq -r '.uid, .kube_user, (.groups | join(",")), .logins' <<<"$REC" | tr '\n' ' ')" \
	"$(uid_of "$ALICE") $ALICE dev,ops,kh-all 1 " "record: uid, kube user, groups, one login"
jq -r .chain <<<"$REC" >"$KH_TMP/chain.pem"
openssl x509 -in "$KH_TMP/chain.pem" -out "$KH_TMP/session.pem" 2>/dev/null
run openssl verify -CAfile "$PKI_DIR/issuerca.pem" -untrusted "$KH_TMP/chain.pem" \
	-purpose sslclient "$KH_TMP/session.pem"
is "$rc" 0 "session certificate chains to the issuer CA (clientAuth)"
SUBJ=$(openssl x509 -in "$KH_TMP/session.pem" -noout -subject -nameopt RFC2253)
like "$SUBJ" "CN=$ALICE" "session certificate names the user"
like "$SUBJ" "O=kh-all,O=ops,O=dev|O=dev.*O=ops.*O=kh-all" "... and the groups"
NA=$(date -d "$(openssl x509 -in "$KH_TMP/session.pem" -noout -enddate | cut -d= -f2)" +%s)
EXP=$(jq -r .expires <<<"$REC")
[ "$NA" = "$EXP" ] && [ "$EXP" -le $(($(date +%s) + 3600)) ]
ok $? "notAfter = record expiry <= now + ttl"
PUB1=$(openssl x509 -in "$KH_TMP/session.pem" -noout -pubkey)
PUB2=$(jq -r .key <<<"$REC" | openssl pkey -pubout 2>/dev/null)
is "$PUB1" "$PUB2" "the cached session key is the certified key"
unlike "$(keyctl rdescribe "$(as_user "$ALICE" keyctl search @u user kubehsm:session:v1)" 2>/dev/null)" \
	"^user;0;" "the record is not owned by root"

# --- another login, then logouts -----------------------------------------
# Root counts the uid's open logins.  pamtester holds one login per run; the
# first login above was opened and never closed, so it still counts.
pt "$SVC" "$ALICE" "$PIN" authenticate open_session close_session
is "$rc:$(logins "$ALICE")" "0:1" "a second login's close_session keeps the first login's record"
pt "$SVC" "$ALICE" "$PIN" authenticate open_session
is "$(logins "$ALICE")" 2 "login counting: open logins are counted"
# A login without a token counts too (its close must not end the session).
{ echo "session required pam_permit.so"; echo "session optional $PAM_KUBEHSM config=$CONF"; } >"$SVCFILE-pw"
pt "$SVC-pw" "$ALICE" "" open_session
is "$(logins "$ALICE")" 3 "a login that minted nothing is counted as well"
# End the two logins pamtester left open, as their login programs would.
"$KH_BUILDDIR/tests/probes/cache_probe" logout "$(uid_of "$ALICE")" >/dev/null
"$KH_BUILDDIR/tests/probes/cache_probe" logout "$(uid_of "$ALICE")" >/dev/null
is "$(logins "$ALICE")" 1 "two logins close: one left"
pt "$SVC-pw" "$ALICE" "" open_session close_session
is "$(logins "$ALICE")" 1 "a login without a token opens and closes: the session is untouched"
"$KH_BUILDDIR/tests/probes/cache_probe" logout "$(uid_of "$ALICE")" >/dev/null
is "$(logins "$ALICE")" none "logout of the last login removes the record"
pt "$SVC" "$ALICE" "$PIN" authenticate open_session close_session
is "$rc:$(logins "$ALICE")" "0:none" "a login opened and closed alone leaves no record"

# --- wrong PIN: PAM_AUTH_ERR, exactly one attempt --------------------------
: >"$SHIMLOG"
export KH_SHIM_LOG=$SHIMLOG
pt "$SVC-shim" "$ALICE" 0000 authenticate
like "$rc:$(oneline "$err")" "^1:.*Authentication failure" "wrong PIN: PAM_AUTH_ERR"
like "$out$err" "wrong PIN" "the user is told the PIN was wrong"
is "$(shim_logins)" 1 "wrong PIN: exactly one C_Login"
like "$(token_flags "$ALICE")" "count low" "SoftHSM counted one failed attempt"
is "$(logins "$ALICE")" none "wrong PIN: no record"

# --- final try: warned, right PIN still works ------------------------------
: >"$SHIMLOG"
KH_SHIM_PIN_FLAGS=final_try pt "$SVC-shim" "$ALICE" "$PIN" authenticate
like "$rc:$out$err" "^0:.*final PIN try" "final try: the user is warned, right PIN accepted"
unlike "$(token_flags "$ALICE")" "count low" "a good login clears SoftHSM's count-low flag"

# --- locked: refused without C_Login ---------------------------------------
: >"$SHIMLOG"
KH_SHIM_PIN_FLAGS=locked pt "$SVC-shim" "$ALICE" "$PIN" authenticate
like "$rc:$(oneline "$err")" "^1:.*maximum number of retries" "locked token: PAM_MAXTRIES"
is "$(shim_logins)" 0 "locked token: no C_Login"

# --- token vanishes mid-login ---------------------------------------------
KH_SHIM_VANISH=login pt "$SVC-shim" "$ALICE" "$PIN" authenticate
like "$rc:$(oneline "$err")" "^1:.*cannot retrieve authentication info" \
	"token pulled during login: PAM_AUTHINFO_UNAVAIL"
unset KH_SHIM_LOG

# --- refusals before any PIN ------------------------------------------------
pt "$SVC" "$NOTOKEN" "$PIN" authenticate
like "$rc:$(oneline "$err")" "^1:.*cannot retrieve authentication info" "no token: PAM_AUTHINFO_UNAVAIL"
pt "$SVC" "$MALLORY" "$PIN" authenticate
like "$rc:$(oneline "$err")" "^1:.*Authentication failure" "token holding another user's certificate: PAM_AUTH_ERR"
pt "$SVC" "$EXPD" "$PIN" authenticate
like "$rc:$(oneline "$err")" "^1:.*Authentication failure" "expired certificate: PAM_AUTH_ERR"
pt "$SVC" "$ROGUE" "$PIN" authenticate
like "$rc:$(oneline "$err")" "^1:.*Authentication failure" "certificate from an untrusted CA: PAM_AUTH_ERR"
pt "$SVC-bad" "$ALICE" "$PIN" authenticate
like "$rc:$(oneline "$err")" "^1:.*(Error in service module|System error)" "missing config: PAM_SERVICE_ERR"

# --- options: an earlier module's password as the PIN (#13) ----------------
# Only when the admin says the two are the same secret (authtok_is_pin):
# another module's password tried as the PIN costs a token try.
export KH_SHIM_LOG=$SHIMLOG
: >"$SHIMLOG"
pt "$SVC-ufp" "$ALICE" "$PIN" authenticate
like "$rc:$(oneline "$err")" "^[1-9].*(Error in service module|System error)" \
	"use_first_pass without authtok_is_pin: a configuration error"
is "$(shim_logins)" 0 "... and no token try"
pt "$SVC-ufpp" "$ALICE" "$PIN" authenticate
is "$rc:$(shim_logins)" "0:1" "use_first_pass authtok_is_pin: the password typed for pam_unix is the PIN, one try"
: >"$SHIMLOG"
pt "$SVC-tfp" "$ALICE" "$(printf 'unix-password\n%s' "$PIN")" authenticate
is "$rc:$(shim_logins)" "0:1" \
	"try_first_pass without authtok_is_pin: the stored password is not tried, the PIN is asked (one try)"
: >"$SHIMLOG"
pt "$SVC-tfpp" "$ALICE" "$(printf '0000\n%s' "$PIN")" authenticate
like "$rc:$(oneline "$out$err")" "^0:.*PIN for token" \
	"try_first_pass authtok_is_pin: a stored password that is not the PIN, then the PIN is asked"
is "$(shim_logins)" 2 "... two tries, as the admin allowed"
: >"$SHIMLOG"
KH_SHIM_PIN_FLAGS=locked pt "$SVC-tfpp" "$ALICE" "$(printf '%s\n%s' "$PIN" "$PIN")" authenticate
like "$rc:$(shim_logins):$(oneline "$err")" "^1:0:.*maximum number of retries" \
	"try_first_pass on a locked token: PAM_MAXTRIES, no try"
# A last try the user cannot be warned of is not made.  tests/probes/pam_driver
# answers pam_unix's password prompt with the PIN (PAM_AUTHTOK) and, with
# KH_CONV_MUTE, cannot show a message, like a non-interactive application.
DRIVER=$KH_BUILDDIR/tests/probes/pam_driver
: >"$SHIMLOG"
run env "${PT_ENV[@]}" KH_SHIM_PIN_FLAGS=final_try KH_CONV_MUTE=1 KH_PIN="$PIN" \
	"$DRIVER" "$SVC-ufpp" "$ALICE" 1 authenticate
is "$rc:$(shim_logins)" "7:0" "final try and a conversation that cannot warn: refused (PAM_AUTH_ERR), no try"
: >"$SHIMLOG"
run env "${PT_ENV[@]}" KH_SHIM_PIN_FLAGS=count_low KH_CONV_MUTE=1 KH_PIN="$PIN" \
	"$DRIVER" "$SVC-ufpp" "$ALICE" 1 authenticate
is "$rc:$(shim_logins)" "7:0" "count low and a conversation that cannot warn: refused, no try"
: >"$SHIMLOG"
run env "${PT_ENV[@]}" KH_SHIM_PIN_FLAGS=final_try KH_PIN="$PIN" \
	"$DRIVER" "$SVC-ufpp" "$ALICE" 1 authenticate
like "$rc:$(shim_logins):$(oneline "$err")" "^0:1:.*final PIN try" \
	"final try with a conversation that warns: warned, then tried once"
unset KH_SHIM_LOG
pt "$SVC-nocache" "$ALICE" "$PIN" authenticate open_session
is "$rc:$(logins "$ALICE")" "0:none" "no_cache: authenticates, caches nothing"

# --- kube groups -------------------------------------------------------------
pt "$SVC-groups" "$SYSM" "$PIN" authenticate open_session close_session
is "$rc" 0 "a certificate with O=system:masters still logs in"
pt "$SVC-groups" "$SYSM" "$PIN" authenticate open_session
is "$(record "$SYSM" | jq -r '.groups | join(",")')" "dev" \
	"O=system:masters is left out of the session (deny_groups default system:*), O=dev kept"
openssl x509 -noout -subject -nameopt RFC2253 -in <(record "$SYSM" | jq -r .chain) >"$KH_TMP/sysm.subj" 2>/dev/null
unlike "$(cat "$KH_TMP/sysm.subj")" "system:masters" "and the session certificate does not name it"
pt_nss "$SVC-groups" "$ALICE" "$PIN" authenticate open_session
is "$rc" 0 "a login whose unix groups include one of over 8 KiB" || diag "$err"
like "$(record "$ALICE" | jq -r '.groups | join(",")')" "(^|,)$BIG(,|\$)" \
	"a unix group with over 8 KiB of members is kept (getgrgid_r buffer grows)"

# --- the account's name, not what was typed ----------------------------------
# The token label (%u), the certificate mapping, the kube user name and the
# record name the account (pw_name), whatever case the user typed.
UPPER=${ALICE^^}
"$KH_BUILDDIR/tests/probes/cache_probe" revoke "$(uid_of "$ALICE")" >/dev/null
run env "${NSS_CASE_ENV[@]}" timeout 60 pamtester "$SVC" "$UPPER" authenticate open_session <<<"$PIN"
is "$rc" 0 "logging in as '$UPPER' resolves to the account '$ALICE'" || diag "$err"
is "$(record "$ALICE" | jq -r '.user + " " + .kube_user')" "$ALICE $ALICE" \
	"the record and the kube user name the account, not what was typed"

# --- setcred: a PAM_KUBEHSM_HANDOFF in the environment proves nothing --------
# sshd's monitor calls setcred after a forked auth, and libpam jumps on its
# answer.  An earlier module (pam_env here) can put any value in the PAM
# environment: setcred must answer as for no kubehsm authentication, so the
# stack below falls through to pam_deny, unless the value names a stash
# the session step would take.  Each step is its own pamtester process, as
# each is its own process behind sshd.
"$KH_BUILDDIR/tests/probes/cache_probe" revoke "$(uid_of "$ALICE")" >/dev/null
# setcred_svc NAME: pam_env sets PAM_KUBEHSM_HANDOFF from $ETC/NAME.env, then
# success of pam_kubehsm jumps over pam_deny (auth and setcred alike).
setcred_svc() {
	: >"$ETC/$1.env"
	{
		echo "auth     optional pam_env.so conffile=$ETC/$1.env readenv=0"
		echo "auth     [success=1 default=ignore] $PAM_KUBEHSM config=$CONF"
		echo "auth     requisite pam_deny.so"
		echo "auth     required pam_permit.so"
		echo "account  required pam_permit.so"
		echo "session  optional pam_env.so conffile=$ETC/$1.env readenv=0"
		echo "session  required $PAM_KUBEHSM config=$CONF"
	} >"/etc/pam.d/$1"
}
handoff_env() { printf 'PAM_KUBEHSM_HANDOFF DEFAULT=%s\n' "$2" >"$ETC/$1.env"; }
setcred_svc "$SVC-sc"
for v in ../../../../etc/shadow 0123456789abcdef0123456789abcdef; do
	handoff_env "$SVC-sc" "$v"
	pt "$SVC-sc" "$ALICE" "" setcred
	like "$rc:$(oneline "$err")" "^1:.*credentials" \
		"setcred with PAM_KUBEHSM_HANDOFF=$v and no stash behind it: not a kubehsm login (the stack reaches pam_deny)"
done
pt "$SVC-sc" "$ALICE" "$PIN" authenticate
is "$rc" 0 "control: auth alone (sshd's forked child) leaves a stash"
# (Earlier auth-only steps above left stashes of other services.)
STASH=$(grep -lsF "\"service\":\"$SVC-sc\"" /run/kubehsm/handoff/* 2>/dev/null |
	xargs -r grep -lF "\"user\":\"$ALICE\"" | head -n 1)
handoff_env "$SVC-sc" "${STASH##*/}"
pt "$SVC-sc" "$ALICE" "" setcred
is "$rc" 0 "control: setcred in another process, the stash's handle in the environment: success"
[ -n "$STASH" ] && [ -f "$STASH" ]
ok $? "setcred leaves the stash for the session step"
pt "$SVC-sc" "$ALICE" "" open_session
like "$rc:$(logins "$ALICE")" "^0:[0-9]+$" "open_session in a third process takes it and caches the session"
[ ! -e "$STASH" ]
ok $? "the stash is used up"
"$KH_BUILDDIR/tests/probes/cache_probe" revoke "$(uid_of "$ALICE")" >/dev/null
