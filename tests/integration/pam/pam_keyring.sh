#!/bin/bash
# pam_keyring: nothing pam_kubehsm puts in a kernel keyring is readable by
# another uid through possession (DESIGN.md, "The cache"; issue 25).
#
# pam_keyinit links root's user keyring into every root login's session
# keyring, and a process of another uid started inside that login (sudo -u,
# su, a daemon from a root shell) shares the session keyring: it possesses
# root's user keyring and all it holds.  First issue 25's reproduction:
# with session.cache_pin, an authentication whose session never opens (ssh
# -N, a client that drops after auth, a sudo whose session stack lacks the
# module) leaves the PIN's hand-off key in root's user keyring; a process
# of svc inside the root login must get nothing of it, not even knowing its
# serial and its name.  The hand-off itself must still work from auth to a
# session step in another process.  Then an audit of every kind of key the
# module and the cache make — session records and PIN keys of both scopes,
# the hand-off, ended markers of root and of the user — for possessor,
# group and other rights.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/pamsvc.sh"

need_root
need_cmd pamtester softhsm2-util pkcs11-tool openssl keyctl setpriv timeout
[ -f "$PAM_KUBEHSM" ] || skip_all "pam/.libs/pam_kubehsm.so not built"
[ -x "$KUBEHSM" ] || skip_all "helper/kubehsm not built"
PROBE=$KH_BUILDDIR/tests/probes/cache_probe
DRIVER=$KH_BUILDDIR/tests/probes/pam_driver
[ -x "$PROBE" ] && [ -x "$DRIVER" ] || skip_all "tests/probes not built (make check builds them)"
[ -r /proc/keys ] || skip_all "no /proc/keys (CONFIG_KEYS_DEBUG_PROC_KEYS)"

PIN=KHPIN4f2a71
ISSUER_PIN=987654
HOST=khkrhost$$
pki_init && pki_ca users "kh test users CA" && pki_ca issuerca "kh issuer CA" &&
	pki_issuer_token "$HOST" "$ISSUER_PIN" issuerca || { echo "Bail out! pki"; exit 1; }
chmod 0600 "$PKI_DIR/issuer.pin"
for v in alice bob carol; do
	make_user "$v"
	pki_user_cert "${!v}" users --cn "${!v}" --o dev && pki_token_init "${!v}" "$PIN" &&
		pki_token_import "${!v}" "$PIN" "${!v}" kube 01 || { echo "Bail out! token"; exit 1; }
done
make_user svc
ALICE=$alice BOB=$bob CAROL=$carol SVCUSER=$svc
ETC=$KH_TMP/etc
CONF=$ETC/kubehsm.conf
pki_policy "$CONF" "$HOST" cache_pin=true || { echo "Bail out! policy"; exit 1; }
CONF_S=$ETC/kubehsm-session.conf
sed 's/scope = "user"/scope = "session"/' "$CONF" >"$CONF_S" && chmod 0644 "$CONF_S"
grep -q 'scope = "session"' "$CONF_S" || { echo "Bail out! scope session policy"; exit 1; }

SVC=kh-keyring-$$
on_exit "rm -f /etc/pam.d/$SVC /etc/pam.d/$SVC-*"
# A session step can run in a process of its own, as sshd's monitor runs
# it after keyboard-interactive auth in a forked child: pam_env then sets
# the handle in the PAM environment, as sshd carries it ($ETC/handoff.env,
# empty otherwise).
: >"$ETC/handoff.env"
{
	echo "auth     required $PAM_KUBEHSM config=$CONF"
	echo "account  required pam_permit.so"
	echo "session  optional pam_env.so conffile=$ETC/handoff.env readenv=0"
	echo "session  required $PAM_KUBEHSM config=$CONF"
	echo "session  required pam_permit.so"
} >"/etc/pam.d/$SVC"
pam_service_file "/etc/pam.d/$SVC-sess" --keyinit "config=$CONF_S"

# root_login CMD: CMD in what pam_keyinit makes of a root login: a session
# keyring of its own with root's user keyring linked into it.
root_login() { keyctl session - bash -c 'keyctl link @u @s >/dev/null && eval "$1"' - "$1"; }
# as_svc_in_root_login CMD: CMD run by svc inside such a login (what sudo -u
# svc from a root shell does to keyrings: it keeps the session keyring).
as_svc_in_root_login() {
	root_login "setpriv --reuid=$(uid_of "$SVCUSER") --regid=$(id -g "$SVCUSER") --clear-groups sh -c $(printf %q "$1")"
}
# stash_of USER SERVICE: the handle of the newest hand-off stash of USER
# made by SERVICE (the stash is root's; its name is the handle).
stash_of() {
	grep -lsF "\"service\":\"$2\"" /run/kubehsm/handoff/* 2>/dev/null |
		xargs -r grep -lF "\"user\":\"$1\"" | xargs -r ls -t | head -n 1 | xargs -r basename
}
# pin_key HANDLE: the serial of root's hand-off key for HANDLE, as root sees it.
pin_key() {
	local k
	for k in $(keyctl rlist @u 2>/dev/null); do
		[ "$(keyctl rdescribe "$k" 2>/dev/null | cut -d';' -f5-)" = "kubehsm:handoff-pin:$1" ] &&
			{ echo "$k"; return 0; }
	done
	return 0
}

plan_auto

# --- issue 25: the PIN's hand-off key and svc inside a root login -------------
pt "$SVC" "$ALICE" "$PIN" authenticate
is "$rc" 0 "with cache_pin, $ALICE authenticates and no session opens (ssh -N)"
H=$(stash_of "$ALICE" "$SVC")
K=$(pin_key "$H")
isnt "$K" "" "control: the PIN waits for the session step in root's user keyring (key $K)"
SNOOP="k=$K; h=$H"'
for r in $(keyctl rlist @s 2>/dev/null); do
	keyctl rlist "$r" 2>/dev/null | tr " " "\n" | grep -qx "$k" && echo "listed $k in $r"
done
d=$(keyctl describe "$k" 2>/dev/null) && echo "describe: $d"
p=$(keyctl print "$k" 2>/dev/null) && echo "print: $p"
p=$(keyctl pipe "$k" 2>/dev/null) && echo "pipe: $p"
f=$(keyctl search @s user "kubehsm:handoff-pin:$h" 2>/dev/null) && echo "search: $f"
id -un'
out=$(as_svc_in_root_login "$SNOOP" 2>&1)
diag "what $SVCUSER got inside the root login:" "$out"
like "$out" "^listed $K in " \
	"control: $SVCUSER possesses root's user keyring through the root login's session keyring and lists the key"
is "$(tail -n 1 <<<"$out")" "$SVCUSER" "control: the snooping commands ran as $SVCUSER"
got=$(grep -Ev "^listed |^Joined session keyring|^$SVCUSER\$" <<<"$out")
is "$got" "" "$SVCUSER cannot describe, read, pipe or search the PIN's key (the reproduction prints nothing)"
unlike "$out" "$PIN" "the PIN is nowhere in what $SVCUSER got"
# The PIN still reaches a session step in another process.
printf 'PAM_KUBEHSM_HANDOFF DEFAULT=%s\n' "$H" >"$ETC/handoff.env"
pt "$SVC" "$ALICE" "" open_session
is "$rc" 0 "the session step in another process takes the hand-off"
: >"$ETC/handoff.env"
run as_user "$ALICE" sh -c 'keyctl print "$(keyctl search @u user kubehsm:pin:v1)"'
is "$out" "$PIN" "... with the PIN: $ALICE's processes get it from their own PIN key (cache_pin)"
is "$(pin_key "$H")" "" "the hand-off key is gone once taken"

# --- audit: every key kubehsm made, for possessor, group and other rights -----
# keys_seen_by UID: the kubehsm keys in /proc/keys as UID sees them,
# possessing its own user keyring (root: inside a root login).  A key the
# reader may not view is not listed: each uid reads its own.
keys_seen_by() {
	local u=$1
	if [ "$u" = 0 ]; then
		root_login 'cat /proc/keys' 2>/dev/null
	else
		setpriv --reuid="$u" --regid="$(id -g "$u")" --clear-groups \
			keyctl session - sh -c 'keyctl link @u @s >/dev/null; cat /proc/keys' 2>/dev/null
	fi | awk -v u="$u" '$6 == u && $9 ~ /^kubehsm/'
}
# The kernel's permission word: possessor, user, group, other (a byte each).
# No possessor view, read or search (possession reaches across uids); no
# group or other rights at all.
AUDITED=$KH_TMP/audited
: >"$AUDITED"
audit() {   # audit WHAT UID...: one assertion for the kubehsm keys of the uids
	local what=$1 u bad=
	shift
	for u in "$@"; do
		while read -r serial _ _ _ perm owner _ type desc _; do
			[ -n "$serial" ] || continue
			# Root's own keys: only this test's hand-off keys (other
			# tests' may come and go meanwhile).
			if [ "$owner" = 0 ] && [ "$desc" != "kubehsm:handoff-pin:$H:" ] &&
			   [ "$desc" != "kubehsm:handoff-pin:${H2:-none}:" ]; then
				continue
			fi
			echo "$owner ${desc%:} $type" >>"$AUDITED"
			if (((16#$perm & 16#0b000000) != 0 || (16#$perm & 16#0000ffff) != 0)); then
				bad+="$type '${desc%:}' of uid $owner: permissions $perm"$'\n'
			fi
		done < <(keys_seen_by "$u")
	done
	is "$bad" "" "audit, $what: no possessor view/read/search, no group or other rights"
}

# A scope-user session with its PIN key, and a hand-off left waiting.
pt "$SVC" "$ALICE" "$PIN" authenticate open_session
is "$rc" 0 "$ALICE logs in (scope user, cache_pin)"
pt "$SVC" "$ALICE" "$PIN" authenticate
H2=$(stash_of "$ALICE" "$SVC")
audit "a scope-user session and a waiting hand-off" 0 "$(uid_of "$ALICE")"

# A scope-session record, in the login's own keyring (pam_keyinit), while
# the login is open.
env "${PT_ENV[@]}" KH_PIN="$PIN" KH_PAUSE=before-end timeout 120 \
	"$DRIVER" "$SVC-sess" "$BOB" 1 authenticate open_session >"$KH_TMP/bob.out" 2>&1 &
BOBPID=$!
on_exit "kill $BOBPID"
for _ in $(seq 1 200); do grep -q '^paused' "$KH_TMP/bob.out" && break; sleep 0.1; done
grep -q '^paused' "$KH_TMP/bob.out"
ok $? "$BOB's login is open (scope session)" || diag "$(cat "$KH_TMP/bob.out")"
audit "a scope-session login" "$(uid_of "$BOB")"
kill "$BOBPID" 2>/dev/null; wait "$BOBPID" 2>/dev/null

# Ended markers: root's (a revoke), and the user's own (kubehsm logout).
pt "$SVC" "$CAROL" "$PIN" authenticate open_session
"$PROBE" revoke "$(uid_of "$CAROL")" >/dev/null
run as_user "$ALICE" "$KUBEHSM" logout
is "$rc" 0 "$ALICE ends her session herself (kubehsm logout)"
audit "ended markers of root and of the user" "$(uid_of "$CAROL")" "$(uid_of "$ALICE")"

# The audit saw every kind of key it was meant to.
for kind in "$(uid_of "$ALICE") kubehsm:session:v1" "$(uid_of "$ALICE") kubehsm:pin:v1" \
	"$(uid_of "$BOB") kubehsm:session:v1" "$(uid_of "$BOB") kubehsm:pin:v1" \
	"$(uid_of "$CAROL") kubehsm:ended:v1" "$(uid_of "$ALICE") kubehsm:ended:v1" \
	"0 kubehsm:handoff-pin:$H2"; do
	grep -qxF "$kind user" "$AUDITED"
	ok $? "control: the audit saw uid ${kind/ / key }" || diag "$(sort -u "$AUDITED")"
done
"$PROBE" revoke "$(uid_of "$ALICE")" >/dev/null
keyctl invalidate "$(pin_key "$H2")" 2>/dev/null

done_testing
