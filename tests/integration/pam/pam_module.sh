#!/bin/bash
# pam_module: one PKCS#11 module initialisation per login when the issuer
# key lives in the users' module (issue #24), and never at a cost to the
# user's token; one read of the policy per login.
#
# The users' tokens and the issuer's are SoftHSM2 tokens behind p11shim,
# which traces the module's life (KH_SHIM_TRACE: C_Initialize, C_Finalize,
# sessions, C_Login, C_Logout, each with its slot).  Asserted:
#   - issuer on the users' module, same environment: one C_Initialize and
#     one C_Finalize for auth + open_session + close_session; the user's
#     token is logged out and has no session open when the issuer's token
#     logs in; the record is cached as always;
#   - a second authenticate in one handle finalises what the first kept
#     before it initialises the module again;
#   - kept only until open_session returns: paused after open_session,
#     before pam_end (tests/probes/pam_driver), the module is finalised
#     already; after authenticate alone it is still initialised, and pam_end
#     finalises it;
#   - an open_session that mints nothing (the issuer's PIN file unusable, or
#     its PIN wrong) finalises it all the same;
#   - not kept — finalised at the end of auth and initialised again for the
#     issuer — when the issuer's environment differs, and when the user's
#     token sits in a removable slot (a card reader: finalising is what
#     resets a card);
#   - the issuer on another module: the users' module is finalised at the
#     end of auth;
#   - the policy file is opened once for auth, open_session and
#     close_session in one handle, and by a session step without auth.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/integration/pam/pam_common.sh"
need_root
need_cmd pamtester softhsm2-util pkcs11-tool openssl keyctl python3 timeout strace
[ -f "$PAM_KUBEHSM" ] || skip_all "pam/.libs/pam_kubehsm.so not built"
SHIM=$KH_BUILDDIR/tests/probes/p11shim/.libs/libkhp11shim.so
[ -f "$SHIM" ] || skip_all "tests/probes/p11shim not built (make check builds it)"
DRIVER=$KH_BUILDDIR/tests/probes/pam_driver
[ -x "$DRIVER" ] || skip_all "tests/probes/pam_driver not built (make check builds it)"
kh_trusted SHIM "$SHIM"
pam_driver_env

pam_common_setup || { echo "Bail out! setup"; exit 1; }
export KH_SHIM_MODULE=$PKI_MODULE
TRACE=$KH_TMP/shim.trace
export KH_SHIM_TRACE=$TRACE
USER_SLOT=$(pki_p11tool -L 2>/dev/null | awk -v l="$ALICE" '
	/^Slot / { s = $2 } /token label/ { sub(/^[^:]*: */, ""); if ($0 == l) { print s; exit } }')
ISSUER_SLOT=$(pki_p11tool -L 2>/dev/null | awk -v l="$HOST" '
	/^Slot / { s = $2 } /token label/ { sub(/^[^:]*: */, ""); if ($0 == l) { print s; exit } }')
# pkcs11-tool prints "Slot N (0xHEX)": the trace has the decimal slot id.
slot_id() { pki_p11tool -L 2>/dev/null | sed -n "s/^Slot $1 (0x\([0-9a-f]*\)).*/\1/p" | head -n 1; }
USER_SLOT=$((16#$(slot_id "$USER_SLOT")))
ISSUER_SLOT=$((16#$(slot_id "$ISSUER_SLOT")))
[ "$USER_SLOT" != "$ISSUER_SLOT" ] || { echo "Bail out! slots not told apart"; exit 1; }

# Policies: users' tokens on the shim; the issuer on the shim too (same
# environment), on the shim with an environment of its own, or on SoftHSM.
SAME=$ETC/same.conf OWNENV=$ETC/ownenv.conf OTHER=$ETC/other.conf NOPIN=$ETC/nopin.conf
pki_policy "$SAME" "$HOST" module="$SHIM" issuer_module="$SHIM"
pki_policy "$OWNENV" "$HOST" module="$SHIM" issuer_module="$SHIM" issuer_env='KH_TEST_ISSUER = "1";'
pki_policy "$OTHER" "$HOST" module="$SHIM"
# Issuer PIN files that fail at login: one the module cannot read as a PIN
# (two lines), before the issuer's token is looked at; one with a wrong PIN.
(umask 077; printf '9876\n54\n' >"$PKI_DIR/twolines.pin"; echo 000000 >"$PKI_DIR/wrong.pin")
pki_policy "$NOPIN" "$HOST" module="$SHIM" issuer_module="$SHIM" pin_file="$PKI_DIR/twolines.pin"
pki_policy "$ETC/wrongpin.conf" "$HOST" module="$SHIM" issuer_module="$SHIM" \
	pin_file="$PKI_DIR/wrong.pin"
SVC=kh-module-$$
on_exit "rm -f /etc/pam.d/$SVC-*"
for c in same ownenv other nopin wrongpin; do
	pam_service_file "/etc/pam.d/$SVC-$c" "config=$ETC/$c.conf"
done

# login SERVICE-SUFFIX OP...: pamtester with the PIN, the trace emptied first.
login() {
	local svc=$SVC-$1; shift
	: >"$TRACE"
	out=$(printf '%s\n' "$PIN" | env "${PT_ENV[@]}" timeout 60 pamtester "$svc" "$ALICE" "$@" 2>&1)
	rc=$?
}
count() { grep -c "^$1\$" "$TRACE" || :; }
# The trace's events as one line, for diagnostics.
events() { tr '\n' ',' <"$TRACE"; }
# first LINE: the line number of LINE's first occurrence in the trace (0: none).
first() { grep -n -m1 -x "$1" "$TRACE" | cut -d: -f1 | grep . || echo 0; }
# sessions_open_at N SLOT: sessions of SLOT opened and not closed before line N.
sessions_open_at() {
	head -n "$(($1 - 1))" "$TRACE" | awk -v s="$2" '
		$1 == "C_OpenSession" && $2 == s { n++ }
		$1 == "C_CloseSession" && $2 == s { n-- }
		$1 == "C_CloseAllSessions" && $2 == s { n = 0 }
		END { print n + 0 }'
}
logout_all() { "$KH_BUILDDIR/tests/probes/cache_probe" revoke "$(uid_of "$ALICE")" >/dev/null 2>&1 || :; }

# --- the issuer on the users' module, same environment ----------------------------
login same authenticate open_session close_session
is "$rc" 0 "issuer on the users' module: the login succeeds" || diag "$out"
is "$(count C_Initialize):$(count C_Finalize)" "1:1" \
	"one C_Initialize and one C_Finalize for auth, open_session and close_session" ||
	diag "$(events)"
ul=$(first "C_Login $USER_SLOT") il=$(first "C_Login $ISSUER_SLOT") lo=$(first "C_Logout $USER_SLOT")
[ "$ul" -gt 0 ] && [ "$lo" -gt "$ul" ] && [ "$il" -gt "$lo" ]
ok $? "the user's token is logged out before the issuer's token logs in" || diag "$(events)"
is "$(sessions_open_at "$il" "$USER_SLOT")" 0 \
	"no session of the user's token is open when the issuer's logs in" || diag "$(events)"
login same authenticate open_session
is "$rc:$(pam_record "$ALICE" | python3 -c 'import json,sys; print(json.load(sys.stdin)["user"])')" \
	"0:$ALICE" "the record is minted and cached as before"
logout_all

# A second authentication in one handle finalises what the first kept
# before it initialises the module again: never two at once.
: >"$TRACE"
out=$(printf '%s\n%s\n' "$PIN" "$PIN" |
	env "${PT_ENV[@]}" timeout 60 pamtester "$SVC-same" "$ALICE" \
	authenticate authenticate open_session close_session 2>&1)
rc=$?
is "$rc:$(count C_Initialize):$(count C_Finalize)" "0:2:2" \
	"authenticate twice in one handle: two initialisations, two finalisations" ||
	diag "$out $(events)"
[ "$(sed -n '/^C_Initialize$/=' "$TRACE" | sed -n 2p)" -gt "$(first C_Finalize)" ]
ok $? "... the first finalised before the second begins" || diag "$(events)"
logout_all

# --- the policy: read once per login ------------------------------------------------------
# pol_reads OPS...: how many times one pamtester run opened the policy file.
pol_reads() {
	local e envs=()
	for e in "${PT_ENV[@]}"; do envs+=(-E "$e"); done
	printf '%s\n' "$PIN" | timeout 60 strace -f -qq "${envs[@]}" -e trace=openat \
		-o "$KH_TMP/pol.st" pamtester "$SVC-same" "$ALICE" "$@" >/dev/null 2>&1
	grep -c "openat([0-9]*, \"$(basename "$SAME")\"" "$KH_TMP/pol.st" || :
}
is "$(pol_reads authenticate open_session close_session)" 1 \
	"one login reads the policy once: open_session uses what auth read"
logout_all
is "$(pol_reads open_session close_session)" 1 "a session step without auth reads it itself"

# --- how long it is kept ---------------------------------------------------------
# paused WHEN OP...: pam_driver through OPs, paused WHEN (before-end,
# after-end); the number of C_Finalize calls the trace shows then.
paused() {
	local when=$1 o=$KH_TMP/drv.out pid; shift
	: >"$TRACE"
	env "${DRV_ENV[@]}" KH_PIN=$PIN KH_PAUSE=$when "$DRIVER" "$SVC-same" "$ALICE" 1 "$@" \
		>"$o" 2>&1 &
	pid=$!
	for _ in $(seq 1 300); do grep -q '^paused$' "$o" && break; sleep 0.1; done
	if grep -q '^paused$' "$o"; then count C_Finalize; else echo "no pause: $(cat "$o")"; fi
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}
is "$(paused before-end authenticate open_session)" 1 \
	"open_session finalises the module before it returns, not at pam_end"
logout_all
is "$(paused before-end authenticate)" 0 "after authenticate alone the module is kept"
is "$(paused after-end authenticate)" 1 "... and pam_end finalises it"

# --- an open_session that mints nothing -------------------------------------------------
login nopin authenticate open_session
is "$(count C_Initialize):$(count C_Finalize)" "1:1" \
	"the issuer's PIN file unusable: nothing minted, the kept module finalised" ||
	diag "$out $(events)"
is "$(pam_record "$ALICE")" "" "... and no record cached"
login wrongpin authenticate open_session
is "$(count C_Initialize):$(count C_Finalize):$(first "C_Login $ISSUER_SLOT" | grep -vc '^0$')" \
	"1:1:1" "the issuer's PIN wrong: the module taken for it is finalised" ||
	diag "$out $(events)"
is "$(pam_record "$ALICE")" "" "... and no record cached"

# --- not kept ---------------------------------------------------------------------------------
login ownenv authenticate open_session close_session
is "$rc:$(count C_Initialize):$(count C_Finalize)" "0:2:2" \
	"an issuer environment of its own: the module initialised again for the issuer" ||
	diag "$out $(events)"
KH_SHIM_SLOT_FLAGS=removable login same authenticate open_session close_session
is "$rc:$(count C_Initialize):$(count C_Finalize)" "0:2:2" \
	"the user's token in a removable slot: finalised at the end of auth" ||
	diag "$out $(events)"
fin=$(first C_Finalize) il=$(first "C_Login $ISSUER_SLOT")
[ "$fin" -gt 0 ] && [ "$il" -gt "$fin" ]
ok $? "... before the issuer's token logs in" || diag "$(events)"
login other authenticate open_session close_session
is "$rc:$(count C_Initialize):$(count C_Finalize)" "0:1:1" \
	"the issuer on another module: the users' module finalised once" || diag "$(events)"

done_testing
