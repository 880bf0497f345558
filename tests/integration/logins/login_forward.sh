#!/bin/bash
# login_forward: `kubehsm login` for real.  The "laptop" is a p11-kit server
# exposing the user's SoftHSM token (through tests/probes/p11shim, which counts its
# C_Login calls); the user logs in to a real loopback sshd with a password,
# forwarding that server's socket with `ssh -R` to the per-uid path the
# policy names; inside the login `kubehsm login` runs on the login's pty,
# real pkexec asks the real polkitd on the system bus, and kubehsm-login
# runs the kubehsm PAM service as shipped (pam/pam.d/kubehsm).  Then
# kubectl 1.27 and 1.33 work in that login and in a second one; a renewal
# extends the session and keeps its logins; a wrong PIN costs one token
# try; every connection to the forwarded token is a process of the user's,
# not root's; a plain login over a live session, a renewal of none, a missing
# terminal, a polkit rule saying no, and another user's attempts on the
# socket never reach the token.  A token the bastion holds itself works
# the same way without forwarding.  The last logout ends the session.
. "$KH_SRCDIR/tests/integration/logins/logins_common.sh"
. "$KH_SRCDIR/tests/harness/polkit.sh"

need_cmd p11-kit pkexec
polkit_need
LOGIN_PROG=$KH_BUILDDIR/helper/kubehsm-login
[ -x "$LOGIN_PROG" ] || skip_all "helper/kubehsm-login not built"
[ "$(stat -c %u "$LOGIN_PROG")" = 0 ] || skip_all "pkexec needs $LOGIN_PROG owned by root"
polkit_start --system || _logins_bail "polkitd on the system bus did not start"

# The policy names the forwarded token; the shipped kubehsm service.
kubehsm_login_service

# --- the laptop: its own SoftHSM store and a p11-kit server -----------------
LAPTOP=$KH_TMP/laptop
mkdir -p -m 0755 "$LAPTOP/tokens" "$LAPTOP/shimctl"
printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' \
	"$LAPTOP/tokens" >"$LAPTOP/softhsm2.conf"
: >"$LAPTOP/shimctl/logins"
laptop_logins() { grep -c '^C_Login$' "$LAPTOP/shimctl/logins"; }

make_user alice
forget_tally "$alice"
logins_passwd "$alice" "pw-alice-$$"
write_kubeconfig "$alice"
pki_user_cert "$alice" users --cn "$alice" --o dev || _logins_bail "alice's certificate"
(export SOFTHSM2_CONF=$LAPTOP/softhsm2.conf
 pki_token_init "$alice" "$PIN" && pki_token_import "$alice" "$PIN" "$alice" kube 01) ||
	_logins_bail "alice's laptop token"
plain_user bob "pw-bob-$$"
token_user carol     # a token the bastion holds itself

LAPTOP_SOCK=$LAPTOP/pkcs11-server
# The server forks a p11-kit-remote per connection, and stopping the server
# does not stop them: one still holding a connection open outlives the test.
# So the server leads a process group of its own (setsid, which does not
# fork here: a background job of this script leads no group), its remotes
# are in it, and the test ends the whole group.
# (A sanitizer build's shim needs the ASan runtime in p11-kit's processes.)
setsid env SOFTHSM2_CONF="$LAPTOP/softhsm2.conf" KH_P11SHIM_DIR="$LAPTOP/shimctl" \
	${LOGINS_ASAN_RT:+LD_PRELOAD="$LOGINS_ASAN_RT" ASAN_OPTIONS=detect_leaks=0} \
	p11-kit server -f -n "$LAPTOP_SOCK" --provider "$SHIM" "pkcs11:token=$alice" \
	>"$LAPTOP/server.out" 2>&1 &
P11_SERVER_PID=$!
# running PID...: those of the PIDs still running, "PID COMMAND" a line (a
# zombie is not running; it waits for init, which may never reap it here).
running() { local p; for p in "$@"; do ps -o pid=,stat=,args= -p "$p"; done | awk '$2 !~ /^Z/'; }
# p11_kit_stop: end the server and every remote it started, and wait for them.
p11_kit_stop() {
	local i
	kill -TERM -- "-$P11_SERVER_PID" 2>/dev/null || return 0
	for i in $(seq 1 50); do
		[ -n "$(running $(pgrep -g "$P11_SERVER_PID"))" ] || return 0
		sleep 0.1
	done
	kill -KILL -- "-$P11_SERVER_PID" 2>/dev/null
}
on_exit p11_kit_stop
for _ in $(seq 1 100); do [ -S "$LAPTOP_SOCK" ] && break; sleep 0.05; done
[ -S "$LAPTOP_SOCK" ] || { cat "$LAPTOP/server.out" >&2; _logins_bail "p11-kit server did not start"; }
[ "$(ps -o pgid= -p "$P11_SERVER_PID" | tr -d ' ')" = "$P11_SERVER_PID" ] ||
	_logins_bail "the p11-kit server does not lead a process group of its own"

# The users' runtime directories, as logind makes them.
[ -d /run/user ] || { mkdir -m 0755 /run/user && on_exit "rmdir /run/user 2>/dev/null"; }
runtime_dir() {
	local u=$1 d
	d=/run/user/$(id -u "$u")
	install -d -m 0700 -o "$u" -g "$(id -g "$u")" "$d" "$d/p11-kit" || _logins_bail "mkdir $d"
	on_exit "rm -rf '$d'"
}
runtime_dir "$alice"
runtime_dir "$bob"
ALICE_SOCK=/run/user/$(id -u "$alice")/p11-kit/pkcs11
BOB_SOCK=/run/user/$(id -u "$bob")/p11-kit/pkcs11

logins_pam "$SSHD_SERVICE" < <(logins_kubehsm_stack "$CONF" keyinit)
sshd_start

# klogin LOGIN [ARGS]: kubehsm login [ARGS] on the login's terminal.
KLOGIN="env KUBEHSM_LOGIN_PROGRAM=$LOGIN_PROG $KUBEHSM login"
klogin() { login_run_tty "$1" "$KLOGIN ${2:-}"; }
expires() { record "$1" | jq -r .expires 2>/dev/null; }

# --- alice: ssh with her password, the laptop token forwarded ----------------
ssh_argv "$alice" password -o ExitOnForwardFailure=yes -R "$ALICE_SOCK:$LAPTOP_SOCK"
LOGIN_PASSWORD=pw-alice-$$ login_open a1 "${SSH_ARGV[@]}"
ok $? "$alice logs in over ssh with her password, forwarding her laptop's token" ||
	diag "$(login_transcript a1)"
if [ -S "$ALICE_SOCK" ] && [ "$(stat -c %U "$ALICE_SOCK")" = "$alice" ]; then
	pass "ssh -R made $ALICE_SOCK, a socket of $alice's"
else
	fail "ssh -R made $ALICE_SOCK, a socket of $alice's"; ls -la "$(dirname "$ALICE_SOCK")" >&2
fi
login_run a1 "$KUBEHSM status"
like "$out" "^No kube session" "the password login has no kube session (the token was not reachable at sshd time)"

l0=$(laptop_logins)
login_run a1 "setsid -w $KLOGIN </dev/null"
if [ "$rc" = 1 ] && grep -q 'on a terminal' <<<"$err" && [ "$(laptop_logins)" = "$l0" ]; then
	pass "no terminal: kubehsm login says so and never reaches the token ($err)"
else
	fail "no terminal: kubehsm login says so and never reaches the token"; diag "rc=$rc err=$err"
fi

LOGIN_PIN=$PIN klogin a1
if [ "$rc" = 0 ] && grep -q '^Kube session started' <<<"$out" && grep -q "^Identity: *$alice\$" <<<"$out"; then
	pass "kubehsm login: the PIN asked once on the terminal, a session started and shown"
else
	fail "kubehsm login: the PIN asked once on the terminal, a session started and shown"
	diag "rc=$rc out=$out" "err=$err"
fi
is "$(($(laptop_logins) - l0))" 1 "the PIN cost one C_Login, on the laptop's token"
like "$err" "PIN for token '$alice'" "the PIN prompt named the laptop token"
is "$(logins "$alice")" 1 "the record joined the one open login (count 1)"
kube_session a1 "$alice" "after kubehsm login"

ssh_argv "$alice" password
LOGIN_PASSWORD=pw-alice-$$ login_open a2 "${SSH_ARGV[@]}"
ok $? "a second ssh login of $alice (no forwarding)" || diag "$(login_transcript a2)"
is "$(logins "$alice")" 2 "two open logins: the record counts 2"
kube_session a2 "$alice" "second login"

# --- refusals that never reach the token ---------------------------------------
l0=$(laptop_logins)
LOGIN_PIN=$PIN klogin a1
if [ "$rc" = 1 ] && grep -q -- '--renew' <<<"$err" && [ "$(laptop_logins)" = "$l0" ]; then
	pass "a plain kubehsm login over a live session is refused before the PIN"
else
	fail "a plain kubehsm login over a live session is refused before the PIN"; diag "rc=$rc err=$err"
fi

# The module decides, not kubehsm's early check: kubehsm-login run through
# pkexec directly, over the live session, after the PIN.
s0=$(session_serial "$alice")
LOGIN_PIN=$PIN login_run_tty a1 "pkexec $LOGIN_PROG"
if [ "$rc" = 1 ] && grep -q 'you have a kube session already' <<<"$err" &&
   [ -n "$s0" ] && [ "$(session_serial "$alice")" = "$s0" ] && [ "$(logins "$alice")" = 2 ]; then
	pass "pam_kubehsm (join) itself refuses to replace a live session without --renew"
else
	fail "pam_kubehsm (join) itself refuses to replace a live session without --renew"
	diag "rc=$rc out=$out err=$err"
fi
l0=$(laptop_logins)

polkit_add_rule deny-login "polkit.addRule(function(action, subject) {
	if (action.id == \"org.kubehsm.login\" && subject.user == \"$alice\")
		return polkit.Result.NO;
});" || _logins_bail "polkit rule"
LOGIN_PIN=$PIN klogin a1 --renew
if [ "$rc" = 1 ] && grep -q 'org.kubehsm.login' <<<"$err" && [ "$(laptop_logins)" = "$l0" ]; then
	pass "a polkit rule denying org.kubehsm.login is honoured: refused, the token untouched"
else
	fail "a polkit rule denying org.kubehsm.login is honoured"; diag "rc=$rc out=$out err=$err"
fi
polkit_del_rule deny-login

# --- renewal -------------------------------------------------------------------
e0=$(expires "$alice"); s0=$(session_serial "$alice")
sleep 1.1
LOGIN_PIN=0000 klogin a1 --renew
if [ "$rc" = 1 ] && [ "$(($(laptop_logins) - l0))" = 1 ] && [ "$(session_serial "$alice")" = "$s0" ]; then
	pass "a wrong PIN costs exactly one token try; the session stays as it was"
else
	fail "a wrong PIN costs exactly one token try; the session stays as it was"
	diag "rc=$rc C_Login +$(($(laptop_logins) - l0)) err=$err"
fi
l0=$(laptop_logins)
# trust.ca_file need not be readable by the user (the policy accepts 0600):
# the child that speaks to the forwarded token, by then the user, reads it
# as root read it for it.
chmod 0600 "$PKI_DIR/users.pem"
# The caller's limits (pkexec passes them on) must not reach root's
# kubehsm-login, nor may SIGPIPE end it: what its process has, read from
# /proc for as long as it lives (the last reading is after its start-up).
watch_login_prog() {
	local p="" seen="" q
	for _ in $(seq 1 6000); do
		# This test's program only (other kubehsm builds may run theirs).
		p=""
		for q in $(pgrep -x kubehsm-login); do
			[ "$(readlink "/proc/$q/exe")" = "$LOGIN_PROG" ] && p=$q
		done
		if [ -n "$p" ]; then
			seen=1
			cat "/proc/$p/limits" >"$KH_TMP/kl.limits.new" 2>/dev/null &&
				grep '^SigIgn:' "/proc/$p/status" >"$KH_TMP/kl.sigign.new" 2>/dev/null &&
				mv "$KH_TMP/kl.limits.new" "$KH_TMP/kl.limits" &&
				mv "$KH_TMP/kl.sigign.new" "$KH_TMP/kl.sigign"
		elif [ -n "$seen" ]; then
			return 0
		fi
		sleep 0.01
	done
}
rm -f "$KH_TMP/kl.limits" "$KH_TMP/kl.sigign"
watch_login_prog &
WATCH=$!
# An ASan build reserves terabytes of shadow address space as it starts:
# the caller's address-space and data limits would end the user's own
# (sanitized) kubehsm before it reached pkexec.  That build checks the CPU
# and stack limits; the -Werror build checks all four.
if [ "${KH_SANITIZERS:-0}" = 1 ]; then
	caller_limits="-t 100000 -s 2048"
	limit_names=("Max cpu time")
	limits_what="CPU time limit (address space and data: in the -Werror build)"
else
	caller_limits="-t 100000 -v 60000000 -d 60000000 -s 2048"
	limit_names=("Max cpu time" "Max address space" "Max data size")
	limits_what="CPU time, address space and data limits"
fi
LOGIN_PIN=$PIN login_run_tty a1 "(ulimit -S $caller_limits && exec env --default-signal=PIPE $KLOGIN --renew)"
wait "$WATCH"
chmod 0644 "$PKI_DIR/users.pem"
if [ "$rc" = 0 ] && grep -q '^Kube session renewed' <<<"$out"; then
	pass "kubehsm login --renew with the same token, trust.ca_file readable by root only (0600)"
else
	fail "kubehsm login --renew with the same token, trust.ca_file readable by root only (0600)"
	diag "rc=$rc out=$out err=$err"
fi
lim() { awk -v what="$1" 'index($0, what) == 1 { print $(NF - 2) }' "$KH_TMP/kl.limits" 2>/dev/null; }
got_limits= want_limits=
for n in "${limit_names[@]}"; do
	got_limits+="$(lim "$n"):" want_limits+="unlimited:"
done
is "$got_limits" "$want_limits" "kubehsm-login drops the caller's $limits_what" ||
	diag "$(cat "$KH_TMP/kl.limits" 2>/dev/null)"
is "$(lim 'Max stack size')" 8388608 "... and runs on the kernel's default stack, not the caller's"
mask=$(awk '{print $2}' "$KH_TMP/kl.sigign" 2>/dev/null)
if [ -n "$mask" ] && (( (16#$mask >> 12) & 1 )); then
	pass "kubehsm-login ignores SIGPIPE (a forwarded-token process the user kills cannot end it)"
else
	fail "kubehsm-login ignores SIGPIPE (a forwarded-token process the user kills cannot end it)"
	diag "SigIgn: ${mask:-none read}"
fi
is "$(($(laptop_logins) - l0))" 1 "the renewal cost one C_Login"
e1=$(expires "$alice")
if [ -n "$e0" ] && [ -n "$e1" ] && [ "$e1" -gt "$e0" ]; then
	pass "the renewal moved the expiry forward ($e0 -> $e1)"
else
	fail "the renewal moved the expiry forward"; diag "e0=$e0 e1=$e1"
fi
isnt "$(session_serial "$alice")" "$s0" "the record was replaced: a new session certificate"
is "$(logins "$alice")" 2 "the renewal kept the login count (2)"
kube_session a2 "$alice" "after the renewal, in the other login"

# --- who talks to the forwarded token (issue 25) ----------------------------------
# The socket ssh made is moved aside and a proxy of alice's takes its place:
# it records the peer credentials (SO_PEERCRED) of every connection to it
# and passes the bytes on.  Whatever reaches alice's forwarded token must
# be a process of alice's — never root, which would otherwise parse what
# her end of the socket says.
PEERLOG=/run/user/$(id -u "$alice")/peercred.log
ALICE_SSH_SOCK=$ALICE_SOCK.ssh
mv "$ALICE_SOCK" "$ALICE_SSH_SOCK" || _logins_bail "move $ALICE_SOCK aside"
as_user_inherit "$alice" /usr/bin/python3 - "$ALICE_SOCK" "$ALICE_SSH_SOCK" "$PEERLOG" \
	>"$LAPTOP/peerproxy.out" 2>&1 <<'PY' &
import os, socket, struct, sys, threading
listen, target, log = sys.argv[1:4]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(listen)
srv.listen(8)
open(log, "w").close()
print("ready", flush=True)
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
while True:
    c, _ = srv.accept()
    pid, uid, gid = struct.unpack("3i", c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    with open(log, "a") as f:
        f.write("uid=%d pid=%d\n" % (uid, pid))
    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    u.connect(target)
    threading.Thread(target=pump, args=(c, u), daemon=True).start()
    threading.Thread(target=pump, args=(u, c), daemon=True).start()
PY
PEERPROXY=$!
on_exit "kill $PEERPROXY 2>/dev/null"
for _ in $(seq 1 100); do grep -q '^ready' "$LAPTOP/peerproxy.out" && break; sleep 0.05; done
grep -q '^ready' "$LAPTOP/peerproxy.out" || _logins_bail "peer-credential proxy: $(cat "$LAPTOP/peerproxy.out")"
l0=$(laptop_logins)
LOGIN_PIN=$PIN klogin a1 --renew
if [ "$rc" = 0 ] && grep -q '^Kube session renewed' <<<"$out" && [ "$(($(laptop_logins) - l0))" = 1 ]; then
	pass "kubehsm login --renew through the peer-credential proxy (one C_Login)"
else
	fail "kubehsm login --renew through the peer-credential proxy"; diag "rc=$rc out=$out err=$err"
fi
peers=$(cut -d' ' -f1 "$PEERLOG" | sort -u | tr '\n' ' ')
is "$peers" "uid=$(id -u "$alice") " \
	"every connection to alice's forwarded token came from a process of alice's, none from root"
kill "$PEERPROXY" 2>/dev/null
wait "$PEERPROXY" 2>/dev/null
rm -f "$ALICE_SOCK"
mv "$ALICE_SSH_SOCK" "$ALICE_SOCK" || _logins_bail "move $ALICE_SOCK back"

# --- another user and alice's socket -------------------------------------------
ssh_argv "$bob" password
LOGIN_PASSWORD=pw-bob-$$ login_open b1 "${SSH_ARGV[@]}"
ok $? "$bob logs in over ssh" || diag "$(login_transcript b1)"
as_user "$bob" ln -s "$ALICE_SOCK" "$BOB_SOCK"
l0=$(laptop_logins)
LOGIN_PIN=$PIN klogin b1
if [ "$rc" = 1 ] && grep -q "$BOB_SOCK is not a socket (a symbolic link)" <<<"$err" &&
   [ "$(laptop_logins)" = "$l0" ] && [ -z "$(record "$bob")" ]; then
	pass "$bob's socket path as a link to $alice's socket: refused, her token untouched"
else
	fail "$bob's socket path as a link to $alice's socket: refused"; diag "rc=$rc out=$out err=$err"
fi
rm -f "$BOB_SOCK"
ln "$ALICE_SOCK" "$BOB_SOCK" || _logins_bail "hard link"
LOGIN_PIN=$PIN klogin b1
if [ "$rc" = 1 ] && grep -q "belongs to uid $(id -u "$alice"), not to the user" <<<"$err" &&
   [ "$(laptop_logins)" = "$l0" ] && [ -z "$(record "$bob")" ]; then
	pass "$alice's socket itself at $bob's path (not his own): refused, her token untouched"
else
	fail "$alice's socket itself at $bob's path: refused"; diag "rc=$rc out=$out err=$err"
fi
rm -f "$BOB_SOCK"
LOGIN_PIN=$PIN klogin b1
if [ "$rc" = 1 ] && grep -q "kubehsm: token: " <<<"$err" && [ "$(laptop_logins)" = "$l0" ]; then
	pass "$bob without a forwarded socket: the bastion's module, which has no token of his (said)"
else
	fail "$bob without a forwarded socket: the bastion's module, no token of his"; diag "rc=$rc err=$err"
fi
login_close b1

# --- a token the bastion holds itself -------------------------------------------
ssh_argv "$carol" kbd
LOGIN_PIN=$PIN login_open c1 "${SSH_ARGV[@]}"
ok $? "$carol logs in with her bastion token's PIN" || diag "$(login_transcript c1)"
login_run c1 "$KUBEHSM logout"
is "$rc" 0 "$carol ends her session with kubehsm logout"
LOGIN_PIN=$PIN login_run_tty c1 "pkexec $LOGIN_PROG --renew"
if [ "$rc" = 1 ] && grep -q 'no kube session to renew' <<<"$err" && [ -z "$(record_id "$carol")" ]; then
	pass "pam_kubehsm (join) itself refuses a renewal when there is no session"
else
	fail "pam_kubehsm (join) itself refuses a renewal when there is no session"; diag "rc=$rc err=$err"
fi
c0=$(shim_logins)
LOGIN_PIN=$PIN klogin c1
if [ "$rc" = 0 ] && grep -q "^Identity: *$carol\$" <<<"$out"; then
	pass "kubehsm login with a token the bastion holds (no forwarding)"
else
	fail "kubehsm login with a token the bastion holds (no forwarding)"; diag "rc=$rc out=$out err=$err"
fi
is "$(($(shim_logins) - c0))" 1 "one C_Login on the bastion's token"
kube_session c1 "$carol" "bastion token, kubehsm login"
login_close c1
ended "$carol" "$carol's only login ended"

# --- the end -------------------------------------------------------------------
login_close a1
is "$(logins "$alice")" 1 "after login 1 ends the record counts 1"
login_close a2
ended "$alice" "the last login ended"

# --- nothing left running --------------------------------------------------------
# A client still connected when the test stops the laptop's server, as an
# ssh channel or a stuck kubehsm-login may be: the p11-kit-remote serving
# it must go with the server, not outlive the test (issue 25).
/usr/bin/python3 - "$P11_CLIENT" "unix:path=$LAPTOP_SOCK" >"$LAPTOP/holder.out" 2>&1 <<'PY' &
import ctypes, os, sys, time
os.environ["P11_KIT_SERVER_ADDRESS"] = sys.argv[2]
lib = ctypes.CDLL(sys.argv[1])
fl = ctypes.c_void_p()
assert lib.C_GetFunctionList(ctypes.byref(fl)) == 0
# CK_FUNCTION_LIST: a CK_VERSION (two bytes, padded to a pointer), then
# C_Initialize; p11-kit's client connects to its server there.
init = ctypes.CFUNCTYPE(ctypes.c_ulong, ctypes.c_void_p)(
    ctypes.c_void_p.from_address(fl.value + ctypes.sizeof(ctypes.c_void_p)).value)
print("C_Initialize", init(None), flush=True)
time.sleep(600)
PY
HOLDER=$!
on_exit "kill $HOLDER 2>/dev/null"
for _ in $(seq 1 100); do grep -q '^C_Initialize' "$LAPTOP/holder.out" && break; sleep 0.1; done
REMOTES=$(pgrep -P "$P11_SERVER_PID" | tr '\n' ' ')
is "$(cat "$LAPTOP/holder.out"):$([ -n "$REMOTES" ] && echo remote)" "C_Initialize 0:remote" \
	"control: a client connected to the laptop's server has its p11-kit-remote"
p11_kit_stop
is "$(running $REMOTES)" "" "stopping the laptop's server ends the p11-kit-remote of every open connection"
kill "$HOLDER" 2>/dev/null

logins_sanitizer_reports
done_testing
