#!/bin/bash
# pam_rush: the morning rush (issue #30).  Forty users, each with a token
# of their own, log in at the same moment (pamtester authenticate
# open_session, released together), and every one of them gets a kube
# session: the issuer's token sits in a SoftHSM2 store of its own, as in
# the shipped sample policy, and SoftHSM2's file store does not take forty
# logins at once — the host's issuer lock (KH_RUNDIR/lock/issuer) gives
# each its turn.  Each record must hold a certificate for its own user.
#
# The users' token stores are on tmpfs (/dev/shm): SoftHSM2 writes every
# object synchronously, and forty tokens on this machine's disk take a
# minute.  Without the lock, 25 of 40 logins failed here at the issuer.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/pamsvc.sh"

need_root
need_cmd pamtester softhsm2-util pkcs11-tool openssl keyctl timeout python3
[ -f "$PAM_KUBEHSM" ] || skip_all "pam/.libs/pam_kubehsm.so not built"
[ -d /dev/shm ] && [ -w /dev/shm ] || skip_all "needs a writable /dev/shm (tmpfs)"

N=${KH_RUSH_USERS:-40}
PIN=4711
ISSUER_PIN=987654
HOST=khrush$$
STORE=$(mktemp -d /dev/shm/kh-rush.XXXXXX) || { echo "Bail out! mktemp"; exit 1; }
on_exit "rm -rf '$STORE'"
chmod 0755 "$STORE"

pki_init "$STORE/pki" && pki_ca users "kh rush users CA" && pki_ca issuerca "kh rush issuer CA" ||
	{ echo "Bail out! CAs"; exit 1; }
# The issuer's token: a store of its own, named in issuer.env.
# On disk, as an issuer's store is: SoftHSM2's writes and locks there are
# what forty logins at once collide on.
ISSUER_CONF=$KH_TMP/issuer-softhsm2.conf
mkdir -p -m 0755 "$KH_TMP/issuer-tokens"
printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' \
	"$KH_TMP/issuer-tokens" >"$ISSUER_CONF"
SOFTHSM2_CONF=$ISSUER_CONF pki_issuer_token "$HOST" "$ISSUER_PIN" issuerca &&
	chmod 0600 "$PKI_DIR/issuer.pin" || { echo "Bail out! issuer token"; exit 1; }

# Each user's token: a store of its own too (SOFTHSM2_CONF in that user's
# login), as each user's card is: forty tokens in one SoftHSM2 store fail
# each other's slot listing ("Could not get the token flags"), which is
# SoftHSM's doing, not the issuer's.
user_store() {
	mkdir -p -m 0755 "$STORE/$1"
	printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' \
		"$STORE/$1" >"$STORE/$1.conf"
	echo "$STORE/$1.conf"
}

USERS=()
# letters i: a name make_user can tell apart (it keeps letters only).
letters() { printf "\\x$(printf %x $((97 + $1 / 26)))\\x$(printf %x $((97 + $1 % 26)))"; }
for i in $(seq 0 $((N - 1))); do
	v=r$(printf '%b' "$(letters "$i")")
	make_user "$v"
	u=${!v}
	uc=$(user_store "$u")
	{ pki_user_cert "$u" users --cn "$u" --o dev && SOFTHSM2_CONF=$uc pki_token_init "$u" "$PIN" &&
		SOFTHSM2_CONF=$uc pki_token_import "$u" "$PIN" "$u" kube 01; } ||
		{ echo "Bail out! token of $u"; exit 1; }
	USERS+=("$u")
done
pass "$N users, each with a token (and store) of their own; the issuer's token in a store of its own"

CONF=$KH_TMP/etc/kubehsm.conf
pki_policy "$CONF" "$HOST" "issuer_env=SOFTHSM2_CONF = \"$ISSUER_CONF\";" ||
	{ echo "Bail out! policy"; exit 1; }
SVC=kh-rush$$
pam_service_file "/etc/pam.d/$SVC" "config=$CONF"
on_exit "rm -f '/etc/pam.d/$SVC'"

# Released together: every login waits for the same file, then runs.
GO=$KH_TMP/go
OUT=$KH_TMP/rush
mkdir -p "$OUT"
start=$(date +%s%N)
for u in "${USERS[@]}"; do
	(
		while [ ! -e "$GO" ]; do sleep 0.01; done
		env "${PT_ENV[@]}" SOFTHSM2_CONF="$STORE/$u.conf" \
			timeout 120 pamtester "$SVC" "$u" authenticate open_session \
			<<<"$PIN" >"$OUT/$u.out" 2>&1
		echo $? >"$OUT/$u.rc"
	) &
done
sleep 0.5
touch "$GO"
wait
secs=$(( ($(date +%s%N) - start) / 1000000 ))

lost=()
wrong=()
for u in "${USERS[@]}"; do
	if [ "$(cat "$OUT/$u.rc" 2>/dev/null)" != 0 ]; then
		lost+=("$u: $(tr '\n' ' ' <"$OUT/$u.out")")
		continue
	fi
	# The record in the user's keyring, its session certificate for them.
	cn=$(as_user "$u" sh -c 'id=$(keyctl search @u user kubehsm:session:v1 2>/dev/null) &&
		keyctl pipe "$id"' 2>/dev/null |
		python3 "$KH_SRCDIR/tests/harness/record.py" get chain |
		openssl x509 -noout -subject -nameopt multiline 2>/dev/null |
		sed -n 's/^ *commonName *= *//p')
	[ "$cn" = "$u" ] || wrong+=("$u: record for '${cn:-nothing}'")
done
is "${#lost[@]}" 0 "$N logins released at once: pamtester succeeds for every one"
for l in "${lost[@]}"; do diag "$l"; done
is "${#wrong[@]}" 0 "... and every user holds a kube session with a certificate of their own"
for l in "${wrong[@]}"; do diag "$l"; done
retries=$(grep -c "trying once more" "$KH_MODLOG" 2>/dev/null)
diag "$N logins in ${secs} ms (after the release); issuer retries logged: ${retries:-0}"
unlike "$(cat "$KH_MODLOG" 2>/dev/null)" "session credential:|issuer is busy" \
	"no login logged a failure at the issuer"
done_testing
