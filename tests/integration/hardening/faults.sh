#!/bin/bash
# faults: fault injection into real logins (pamtester, a real /etc/pam.d
# service, SoftHSM2 tokens, the real keyring).  Each fault must end in a
# defined outcome: the PAM code the module documents (pam_kubehsm(8)), a
# syslog line saying what happened, no record in the user's keyring, and no
# crash (pamtester exits normally, below 128).
#
#   - the token vanishes between C_Login and the challenge signature
#     (p11shim KH_SHIM_VANISH=after-login and =sign) -> PAM_AUTHINFO_UNAVAIL
#   - pkcs11.module names no file                   -> PAM_SERVICE_ERR (policy)
#   - pkcs11.module is a file, not a library        -> PAM_AUTHINFO_UNAVAIL
#   - pkcs11.module is a library, not PKCS#11       -> PAM_AUTHINFO_UNAVAIL
#   - the issuer PIN file is missing                -> PAM_SERVICE_ERR (policy)
#   - the issuer PIN is wrong                       -> authenticate succeeds,
#                                                      open_session PAM_SESSION_ERR
#   - the clock passes the session's expiry         -> kubehsm exec serves nothing
# Covered elsewhere, not repeated here: polkitd not running under each
# polkit.mode (pam_wrapper.sh), the keyring quota full and concurrent logins
# of one user (cache.sh), the token vanishing at C_Login and locked tokens
# (pam.sh).
#
# There is no syslog daemon here: when /dev/log does not exist the test
# binds a tiny datagram sink there for its duration (removed at exit) and
# reads the module's lines from it.
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
need_root
need_cmd pamtester softhsm2-util pkcs11-tool openssl keyctl python3 setpriv timeout
[ -f "$PAM_KUBEHSM" ] || skip_all "pam/.libs/pam_kubehsm.so not built"
[ -x "$KUBEHSM" ] || skip_all "helper/kubehsm not built"
PROBE="$KH_BUILDDIR/tests/probes/cache_probe"
[ -x "$PROBE" ] || skip_all "tests/probes/cache_probe not built"
SHIM=$KH_BUILDDIR/tests/probes/p11shim/.libs/libkhp11shim.so
[ -f "$SHIM" ] || skip_all "tests/probes/p11shim not built (make check builds it)"
chmod 0755 "$KH_BUILDDIR" "$KH_BUILDDIR/helper" "$KH_BUILDDIR/tests" 2>/dev/null || true
# An ASan-built module in the uninstrumented pamtester (as pam.sh does).
PT_ENV=()
if nm -D "$PAM_KUBEHSM" 2>/dev/null | grep -q __asan_init; then
	PT_ENV=(LD_PRELOAD="$(gcc -print-file-name=libasan.so)"
		ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
fi

# --- a syslog sink at /dev/log (one test at a time owns it) ----------------
exec 9>/tmp/kubehsm-test-devlog.lock
flock -w 600 9 || { echo "Bail out! /dev/log sink lock"; exit 1; }
SYSLOG=$KH_TMP/syslog
if [ -e /dev/log ]; then
	echo "Bail out! /dev/log exists (a syslog daemon runs): this test needs to own it"; exit 1
fi
python3 - "$SYSLOG" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
os.chmod("/dev/log", 0o666)
with open(sys.argv[1], "ab", buffering=0) as f:
    while True:
        f.write(s.recv(65536).rstrip(b"\0\n") + b"\n")
PY
SINK=$!
on_exit "kill $SINK; rm -f /dev/log"
for _ in $(seq 50); do [ -S /dev/log ] && break; sleep 0.1; done
[ -S /dev/log ] || { echo "Bail out! the syslog sink did not start"; exit 1; }
logger -t kh-faults-probe "sink check $$" 2>/dev/null || python3 -c 'import syslog; syslog.openlog("kh-faults-probe"); syslog.syslog("sink check '$$'")'
sleep 0.2
grep -q "sink check $$" "$SYSLOG"
ok $? "control: the /dev/log sink receives syslog lines"
mark() { SYSMARK=$(wc -l <"$SYSLOG"); }
newlog() { sleep 0.2; tail -n +"$((SYSMARK + 1))" "$SYSLOG"; }

# --- PKI, tokens, users, policies ------------------------------------------
PIN=4711
ISSUER_PIN=987654
HOST=khfhost$$
pki_init && pki_ca users "kh test users CA" && pki_ca issuerca "kh issuer CA" &&
	pki_issuer_token "$HOST" "$ISSUER_PIN" issuerca || { echo "Bail out! pki"; exit 1; }
make_user alice
ALICE=$alice
pki_user_cert "$ALICE" users --cn "$ALICE" --o dev &&
	pki_token_init "$ALICE" "$PIN" &&
	pki_token_import "$ALICE" "$PIN" "$ALICE" kube 01 || { echo "Bail out! token"; exit 1; }
ETC=$KH_TMP/etc
mkdir -m 0755 "$ETC"
chmod 0600 "$PKI_DIR/issuer.pin"
(umask 077; echo 000000 >"$ETC/wrong.pin")
echo "this is not a shared object" >"$ETC/not-a-library.so"; chmod 0644 "$ETC/not-a-library.so"
NOTP11=$(ls /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null || ls /lib/*/libz.so.1 | head -1)
write_conf() {   # write_conf NAME USER-MODULE ISSUER-PIN-FILE
	pki_policy "$ETC/$1.conf" "$HOST" module="$2" pin_file="$3"
}
write_conf good "$PKI_MODULE" "$PKI_DIR/issuer.pin"
write_conf shim "$SHIM" "$PKI_DIR/issuer.pin"
write_conf nomodule "/usr/lib/no-such-pkcs11-module.so" "$PKI_DIR/issuer.pin"
write_conf notlib "$ETC/not-a-library.so" "$PKI_DIR/issuer.pin"
write_conf notp11 "$NOTP11" "$PKI_DIR/issuer.pin"
write_conf nopin "$PKI_MODULE" "$ETC/no-such.pin"
write_conf wrongpin "$PKI_MODULE" "$ETC/wrong.pin"
export KH_SHIM_MODULE=$PKI_MODULE
SHIMLOG=$KH_TMP/shim.log

SVC=kh-faults-$$
on_exit "rm -f /etc/pam.d/$SVC-*"
for c in good shim nomodule notlib notp11 nopin wrongpin; do
	{
		echo "auth     required $PAM_KUBEHSM config=$ETC/$c.conf"
		echo "account  required pam_permit.so"
		echo "session  required $PAM_KUBEHSM config=$ETC/$c.conf"
		echo "session  required pam_permit.so"
	} >"/etc/pam.d/$SVC-$c"
done
{
	echo "auth     required $PAM_KUBEHSM config=$ETC/good.conf debug"
	echo "account  required pam_permit.so"
	echo "session  required $PAM_KUBEHSM config=$ETC/good.conf debug"
} >"/etc/pam.d/$SVC-debug"

pt() {   # pt CASE OPS...: pamtester as a login would run it, PIN on stdin
	local c=$1; shift
	mark
	run env "${PT_ENV[@]}" timeout 60 pamtester "$SVC-$c" "$ALICE" "$@" <<<"$PIN"
	err=$(tr '\n' ' ' <<<"$err")
}
record() {
	as_user "$ALICE" sh -c 'for k in $(keyctl rlist @u); do keyctl rdescribe $k; done' 2>/dev/null |
		grep 'kubehsm:session'
}
# outcome NAME RE-PAMTESTER RE-SYSLOG: the PAM code, the syslog line, no
# record, no crash — four assertions per fault.
outcome() {
	local name=$1 want=$2 logre=$3 lines
	lines=$(newlog)
	like "$err" "$want" "$name: PAM code" || diag "rc=$rc out=$out"
	like "$lines" "pam_kubehsm\\($SVC-[a-z0-9]+:(auth|session)\\).*$logre" "$name: syslog line" ||
		diag "syslog since the step: $lines"
	is "$(record)" "" "$name: no record in the user's keyring"
	ok $(( rc > 0 && rc < 128 ? 0 : 1 )) "$name: pamtester failed cleanly (exit $rc, no crash)"
}

# --- control: a normal login works and is logged ----------------------------
pt good authenticate open_session close_session
is "$rc" 0 "control: authenticate + open_session + close_session succeed" || diag "$err"
like "$(newlog)" "pam_kubehsm\\($SVC-good:auth\\).*authenticated with token" "control: the login is logged"

# --- the debug log says what happened (polkit.mode = off here) --------------
pt debug authenticate open_session close_session
is "$rc" 0 "control: a login with the debug option" || diag "$err"
lines=$(newlog)
like "$lines" "pam_kubehsm\($SVC-debug:session\).*polkit.mode = off: polkit not asked" \
	"debug, polkit off: the log says polkit was not asked"
unlike "$lines" "polkit allows caching" "... and never that polkit allowed it"

# --- the token vanishes between C_Login and the challenge signature --------
# after-login: gone right after a successful C_Login (the key lookup fails);
# sign: gone exactly at the challenge signature's C_SignInit.
for v in after-login sign; do
	re="token key: token '$ALICE' was removed"
	[ $v = sign ] && re="proof of possession: the token was removed while signing"
	: >"$SHIMLOG"
	KH_SHIM_LOG=$SHIMLOG KH_SHIM_VANISH=$v pt shim authenticate open_session
	is "$(grep -c '^C_Login$' "$SHIMLOG")" 1 "vanish ($v): C_Login was called once"
	outcome "token gone ($v) between C_Login and the challenge signature" \
		"Authentication service cannot retrieve authentication info" \
		"user '$ALICE': $re"
done

# --- the PKCS#11 module cannot be used --------------------------------------
pt nomodule authenticate open_session
outcome "pkcs11.module names no file" "Error in service module" \
	"policy: .*nomodule.conf:2: pkcs11\\.module /usr/lib/no-such-pkcs11-module.so: No such file"
pt notlib authenticate open_session
outcome "pkcs11.module is not a shared library" \
	"Authentication service cannot retrieve authentication info" \
	"user '$ALICE': PKCS#11 module: cannot load PKCS#11 module .*not-a-library.so"
pt notp11 authenticate open_session
outcome "pkcs11.module is a library without C_GetFunctionList ($(basename "$NOTP11"))" \
	"Authentication service cannot retrieve authentication info" \
	"user '$ALICE': PKCS#11 module: .* is not a PKCS#11 module \\(no C_GetFunctionList\\)"

# --- the issuer PIN ----------------------------------------------------------
pt nopin authenticate open_session
outcome "issuer PIN file missing" "Error in service module" \
	"policy: .*nopin.conf:7: issuer.pin_file .*no-such.pin: No such file"
pt wrongpin authenticate open_session
outcome "issuer PIN wrong" "Cannot make/remove an entry for the specified session" \
	"user '$ALICE': issuer \\(default\\): session credential: wrong PIN for token '$HOST'"
like "$(newlog)" "$SVC-wrongpin:auth\\).*authenticated with token" \
	"issuer PIN wrong: authentication itself succeeded (the failure is the session step)"

# --- the clock passes the session's expiry -----------------------------------
A=$(uid_of "$ALICE")
pt good authenticate open_session
is "$rc" 0 "a real login caches a session for the expiry case"
as_user "$ALICE" sh -c 'keyctl pipe $(keyctl search @u user kubehsm:session:v1)' >"$KH_TMP/payload" 2>/dev/null
as_user "$ALICE" keyctl clear @u >/dev/null 2>&1
# The same record, re-stamped to expire in 3 s while the kernel keeps it for
# 10 minutes: only the clock moving past "expires" can stop it being served.
python3 -c 'import sys, time
sys.path.insert(0, sys.argv[2]); import record
r = record.load(open(sys.argv[1]).read()); now = int(time.time())
r["created"] = now - 60; r["expires"] = now + 3
print(record.dump(r), end="")' "$KH_TMP/payload" "$KH_SRCDIR/tests/harness" >"$KH_TMP/soon.json"
"$PROBE" forge "$A" "$A" kubehsm:session:v1 000b0000 600 "$KH_TMP/soon.json" >/dev/null
INFO='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}'
run as_user "$ALICE" env KUBERNETES_EXEC_INFO="$INFO" "$KUBEHSM" exec
like "$out" '"kind":"ExecCredential"' "before its expiry the session is served"
sleep 4
run as_user "$ALICE" env KUBERNETES_EXEC_INFO="$INFO" "$KUBEHSM" exec
err=$(grep -v '^Joined session keyring' <<<"$err")
is "$rc:$out" "1:" "clock past the expiry: kubehsm exec exits 1 and prints nothing on stdout"
like "$err" '^kubehsm: .*expired' "clock past the expiry: it says the session expired"
isnt "$(record)" "" "the expired record is left for the kernel's timeout (kubehsm exec never writes)"

done_testing
