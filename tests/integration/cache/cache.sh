#!/bin/bash
# The keyring cache on the real kernel keyring, with real users.
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
need_root
need_cmd keyctl setpriv useradd openssl su python3

PROBE="$KH_BUILDDIR/tests/probes/cache_probe"
[ -x "$PROBE" ] || skip_all "tests/probes/cache_probe not built"
chmod 0755 "$KH_BUILDDIR" "$KH_BUILDDIR/tests" 2>/dev/null || true

make_user alice
make_user bob
A=$(uid_of "$alice"); B=$(uid_of "$bob")

# Realistic material: an EC session key, two certificates, an RSA token cert.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=issuer \
	-keyout "$KH_TMP/issuer.key" -out "$KH_TMP/issuer.pem" -days 2 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$alice/O=dev/O=ops" \
	-keyout "$KH_TMP/session.key" -out "$KH_TMP/session.pem" -days 1 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=$alice" \
	-keyout "$KH_TMP/token.key" -out "$KH_TMP/token.pem" -days 365 2>/dev/null
cat "$KH_TMP/session.pem" "$KH_TMP/issuer.pem" >"$KH_TMP/chain.pem"
MAT=(--chain "$KH_TMP/chain.pem" --key "$KH_TMP/session.key" --token-cert "$KH_TMP/token.pem" --groups dev,ops)

find_as() { local who=$1; shift; run "$@" "$PROBE" find; }

# --- store and read back from every kind of process of the user -----------
run "$PROBE" login "$A" "$alice" user 600 "${MAT[@]}"
is "$rc" 0 "root stores alice's record (scope user)" || diag "$err"
size=$("$PROBE" size "${MAT[@]}")
diag "a typical record (EC P-256 session key, 2-cert chain, RSA-2048 token cert): $size bytes"
ok $(( size <= 6144 ? 0 : 1 )) "a typical record fits in 6 KiB ($size bytes)"

run as_user "$alice" "$PROBE" find
like "$out" "^ok uid=$A user=$alice logins=1 " "alice reads it from a fresh session keyring of hers"
run as_user_inherit "$alice" "$PROBE" find
like "$out" "^ok uid=$A " "alice reads it from a process with no session keyring of hers"
run su -s /bin/bash "$alice" -c "$PROBE find"
like "$out" "^ok uid=$A " "alice reads it after su"
run su -l -s /bin/bash "$alice" -c "$PROBE find"
like "$out" "^ok uid=$A " "alice reads it from a login shell (su -l, pam_keyinit)"

# --- the kernel says what it must -----------------------------------------
KEY=$(as_user "$alice" keyctl search @u user kubehsm:session:v1)
desc=$(as_user "$alice" keyctl rdescribe "$KEY")
is "$desc" "user;$A;$(id -g root);001b0000;kubehsm:session:v1" \
	"the key is owned by alice, read-only for her, nothing for possessors or others"
# /proc/keys lists only what the reader may view: read it as alice.
exp=$(as_user "$alice" awk -v k="$(printf '%08x' "$KEY")" '$1 == k {print $4}' /proc/keys)
like "$exp" '^(9|10)m$' "the kernel timeout is the time left to expiry (600 s -> $exp)"

# --- alice cannot change it ------------------------------------------------
run as_user "$alice" keyctl update "$KEY" forged
isnt "$rc" 0 "alice cannot update her record"
run as_user "$alice" keyctl setperm "$KEY" 0x3f3f0000
isnt "$rc" 0 "alice cannot re-permission her record"
run as_user "$alice" keyctl timeout "$KEY" 999999
isnt "$rc" 0 "alice cannot stretch its timeout"
run as_user "$alice" keyctl chown "$KEY" "$B"
isnt "$rc" 0 "alice cannot give it away"

# --- bob sees nothing --------------------------------------------------------
run as_user "$bob" "$PROBE" find
like "$out" "^miss absent" "bob has no session of his own"
run as_user "$bob" keyctl print "$KEY"
isnt "$rc" 0 "bob cannot read alice's key by its serial"
run as_user "$bob" keyctl describe "$KEY"
isnt "$rc" 0 "bob cannot even see alice's key"
run as_user "$bob" keyctl invalidate "$KEY"
isnt "$rc" 0 "bob cannot invalidate alice's key"
run as_user "$bob" "$PROBE" revoke "$A"
like "$err" "only root" "bob cannot revoke alice's session through kubehsm"
run as_user "$bob" "$PROBE" list "$A"
isnt "$rc" 0 "bob cannot list alice's sessions"
run as_user "$alice" "$PROBE" find
like "$out" "^ok uid=$A " "alice's session is untouched by bob's attempts"

# --- listing ----------------------------------------------------------------
run "$PROBE" list all
like "$out" "^$A kubehsm:session:v1 none$" "root lists alice's session (without its key)"
run as_user "$alice" "$PROBE" list
like "$out" "^$A kubehsm:session:v1 none$" "alice lists her own session"
run as_user "$alice" "$PROBE" list all
isnt "$rc" 0 "alice cannot list everyone's sessions"

# --- login accounting -------------------------------------------------------
"$PROBE" login "$A" "$alice" user 600 "${MAT[@]}" >/dev/null
run as_user "$alice" "$PROBE" find
like "$out" "logins=2 " "a second login of alice replaces the record and counts 2"
n=$(as_user "$alice" keyctl rlist @u | tr ' ' '\n' | while read -r k; do
	as_user "$alice" keyctl rdescribe "$k" 2>/dev/null; echo; done | grep -c ';kubehsm:session:v1$')
is "$n" 1 "still exactly one record in alice's keyring"
run "$PROBE" logout "$A"
is "$out" "kept" "closing one of two logins keeps the session"
run as_user "$alice" "$PROBE" find
like "$out" "logins=1 " "and counts one login left"
run "$PROBE" logout "$A"
is "$out" "removed" "closing the last login removes the session"
run as_user "$alice" "$PROBE" find
like "$out" "^miss revoked" "alice is told her session was ended"

# --- expiry -----------------------------------------------------------------
"$PROBE" store "$A" "$alice" user 2 "${MAT[@]}" >/dev/null
run as_user "$alice" "$PROBE" find
like "$out" "^ok " "a 2-second session is served while valid"
sleep 3
run as_user "$alice" "$PROBE" find
like "$out" "^miss (expired|absent)" "and not once it has expired ($out)"
# A record whose own expiry has passed while the kernel still holds it.
"$PROBE" store "$A" "$alice" user 600 --expires-in 1 "${MAT[@]}" >/dev/null
sleep 2
run as_user "$alice" "$PROBE" find
like "$out" "^miss expired" "the reader checks the record's expiry itself"

# --- revocation -------------------------------------------------------------
"$PROBE" login "$A" "$alice" user 600 "${MAT[@]}" >/dev/null
run "$PROBE" revoke "$A"
is "$out" "revoked" "root revokes alice's session"
run as_user "$alice" "$PROBE" find
like "$out" "^miss revoked" "a revoked session is not served"
"$PROBE" login "$A" "$alice" user 600 "${MAT[@]}" >/dev/null
run as_user "$alice" "$PROBE" revoke "$A"
is "$out" "revoked" "alice ends her own session (logout)"
run as_user_inherit "$alice" "$PROBE" find
like "$out" "^miss revoked" "and it is gone for all her processes"

# --- forged and tampered records are refused --------------------------------
"$PROBE" login "$A" "$alice" user 600 "${MAT[@]}" >/dev/null
# To a file, not $(...): the record ends in a newline that must stay.
as_user "$alice" sh -c 'keyctl pipe $(keyctl search @u user kubehsm:session:v1)' >"$KH_TMP/good.json"
sed "1s/\"uid\":$A/\"uid\":$B/" "$KH_TMP/good.json" >"$KH_TMP/other-uid.json"
sed '1s/"v":2/"v":3/' "$KH_TMP/good.json" >"$KH_TMP/v3.json"
sed '1s/"v":2/"v":1/' "$KH_TMP/good.json" >"$KH_TMP/v1.json"
head -c 300 "$KH_TMP/good.json" >"$KH_TMP/truncated.json"
forge() { "$PROBE" forge "$@" >/dev/null; }
forge "$A" "$A" kubehsm:session:v1 000b0000 600 "$KH_TMP/other-uid.json"
run as_user "$alice" "$PROBE" find
like "$out" "^miss refused.*uid $B" "a record naming another uid is refused"
forge "$A" "$A" kubehsm:session:v1 000b0000 600 "$KH_TMP/v3.json"
run as_user "$alice" "$PROBE" find
like "$out" "^miss refused.*version 3" "a record of an unknown version is refused"
forge "$A" "$A" kubehsm:session:v1 000b0000 600 "$KH_TMP/v1.json"
run as_user "$alice" "$PROBE" find
like "$out" "^miss refused.*version 1 .*log in again" \
	"a record of the version before the pre-rendered answer is refused: log in again"
forge "$A" "$A" kubehsm:session:v1 000b0000 600 "$KH_TMP/truncated.json"
run as_user "$alice" "$PROBE" find
like "$out" "^miss refused.*malformed" "a truncated record is refused"
forge "$A" "$A" kubehsm:session:v1 000f0000 600 "$KH_TMP/good.json"
run as_user "$alice" "$PROBE" find
like "$out" "^miss refused.*writable" "a record alice could write is refused"
forge "$A" "$A" kubehsm:session:v1 000b0b0b 600 "$KH_TMP/good.json"
run as_user "$alice" "$PROBE" find
like "$out" "^miss refused.*other users" "a record visible to others is refused"
# The old contract's permissions: a possessor of another uid could read it.
forge "$A" "$A" kubehsm:session:v1 0b0b0000 600 "$KH_TMP/good.json"
run as_user "$alice" "$PROBE" find
like "$out" "^miss refused.*possesses" "a record a possessor could read is refused"
forge 0 "$A" kubehsm:session:v1 0b0b0000 600 "$KH_TMP/good.json"
run as_user "$alice" "$PROBE" find
like "$out" "^miss (absent|revoked)" "a record owned by someone else is passed over, not used"
# alice planting her own record in her session keyring is refused too.
run as_user "$alice" sh -c "keyctl padd user kubehsm:session:v1 @s <'$KH_TMP/good.json' >/dev/null && '$PROBE' find"
like "$out" "^miss refused.*writable" "a record alice made herself is refused"

# --- a reused uid: the kernel keeps a deleted account's keys ----------------
"$PROBE" store "$A" "formeruser" user 600 "${MAT[@]}" >/dev/null
run as_user "$alice" "$PROBE" find
like "$out" "^miss refused.*issued to user 'formeruser', not to '$alice'" \
	"a record issued to another account name under alice's uid is refused"
run as_user "$alice" env LOGNAME=someoneelse "$PROBE" find
like "$out" "^miss refused.*issued to user 'formeruser', not to '$alice'" \
	"... also when LOGNAME names a third user (the account database decides)"
"$PROBE" login "$A" "$alice" user 600 "${MAT[@]}" >/dev/null
run as_user "$alice" "$PROBE" find
like "$out" "^ok uid=$A user=$alice logins=1 " \
	"and alice's next login replaces it without counting it as hers"
# The login's LOGNAME naming the record's user spares the account lookup;
# a LOGNAME naming someone else, or none, falls back to it.  (Under strace,
# LeakSanitizer cannot run: a sanitizer build's probe would die at exit.)
install -d -o "$alice" -m 0700 "$KH_TMP/alice-trace"
NOLSAN="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
run as_user "$alice" env "$NOLSAN" strace -f -e trace=openat,connect -o "$KH_TMP/alice-trace/nss" "$PROBE" find
like "$out" "^ok uid=$A " "served with LOGNAME=$alice (strace)"
unlike "$(cat "$KH_TMP/alice-trace/nss")" "/etc/passwd|nsswitch|nscd" \
	"LOGNAME names the record's user: no account-database lookup"
run as_user "$alice" env "$NOLSAN" LOGNAME=nobody strace -f -e trace=openat,connect -o "$KH_TMP/alice-trace/nss" "$PROBE" find
like "$out" "^ok uid=$A " "served with LOGNAME=nobody: the account database says $alice"
like "$(cat "$KH_TMP/alice-trace/nss")" "/etc/passwd|nsswitch" \
	"LOGNAME names someone else: the account database is asked"
run as_user "$alice" env -u LOGNAME "$PROBE" find
like "$out" "^ok uid=$A " "served without LOGNAME: the account database says $alice"

# --- session scope ----------------------------------------------------------
# A login's session keyring as pam_keyinit makes it: joined with the real
# uid switched to the user, so the keyring is the user's (root stays the
# effective uid; bash -p keeps it).  USERSES wraps a command in one.
"$PROBE" revoke "$A" >/dev/null
USERSES=(setpriv --ruid="$A" --euid=0 keyctl session -)
run keyctl session - bash -c "'$PROBE' store $A $alice session 600 ${MAT[*]}"
like "$err" "session keyring is not the user's.*pam_keyinit" \
	"a session-scope record is refused where the login's session keyring is not the user's"
run "${USERSES[@]}" bash -p -c "'$PROBE' store $A $alice session 600 ${MAT[*]} &&
	setpriv --reuid=$A --regid=$(id -g "$alice") --init-groups '$PROBE' find"
like "$out" "^ok uid=$A " "a session-scope record is served inside its login"
run as_user "$alice" "$PROBE" find
like "$out" "^miss (absent|revoked)" "and is invisible from another login of the same user"
run "${USERSES[@]}" bash -p -c "S=\$('$PROBE' store $A $alice session 600 ${MAT[*]}) &&
	'$PROBE' logout $A --serial \$S && setpriv --reuid=$A --regid=$(id -g "$alice") --init-groups '$PROBE' find"
like "$out" "^removed" "closing a session-scope login removes its record"
like "$out" "miss (revoked|absent)" "after which it is not served inside that login either"

# --- the PIN, only when asked, in its own key --------------------------------
"$PROBE" login "$A" "$alice" user 600 --pin 'KHPIN-4711' "${MAT[@]}" >/dev/null
run as_user "$alice" "$PROBE" pin
is "$out" "pin KHPIN-4711" "with cache_pin the user's processes get the PIN"
run as_user "$alice" sh -c 'keyctl print $(keyctl search @u user kubehsm:session:v1)'
unlike "$out" "KHPIN-4711" "the PIN is not in the session record"
run as_user "$bob" "$PROBE" pin
isnt "$rc" 0 "bob gets no PIN"
PK=$(as_user "$alice" keyctl search @u user kubehsm:pin:v1)
is "$(as_user "$alice" keyctl rdescribe "$PK" | cut -d';' -f2,4)" "$A;001b0000" "the PIN key is alice's and read-only"
"$PROBE" login "$A" "$alice" user 600 "${MAT[@]}" >/dev/null
run as_user "$alice" "$PROBE" pin
isnt "$rc" 0 "a login without cache_pin removes the earlier PIN key"

# --- concurrent writers ------------------------------------------------------
# The count is of alice's open logins: the sections above opened some and
# never closed them, so read where it stands first.
"$PROBE" revoke "$A" >/dev/null
"$PROBE" login "$A" "$alice" user 600 "${MAT[@]}" >/dev/null
L=$(as_user "$alice" "$PROBE" find | sed -n 's/.* logins=\([0-9]*\) .*/\1/p')
for i in $(seq 1 50); do "$PROBE" login "$A" "$alice" user 600 "${MAT[@]}" >"$KH_TMP/c$i.out" 2>&1 & done
wait
fails=$(cat "$KH_TMP"/c*.out | grep -c error || true)
is "$fails" 0 "50 concurrent logins all succeed"
run as_user "$alice" "$PROBE" find
like "$out" "^ok uid=$A user=$alice logins=$((L + 50)) " "they leave one valid record that counted all 50 (from $L)"
n=$(as_user "$alice" keyctl rlist @u | tr ' ' '\n' | while read -r k; do
	as_user "$alice" keyctl rdescribe "$k" 2>/dev/null; echo; done | grep -c ';kubehsm:session:v1$')
is "$n" 1 "exactly one record key remains"

# --- another uid in the login's session keyring (sudo -u, su) ---------------
# A login's session keyring as pam_keyinit makes it (USERSES), with alice's
# user keyring linked in; bob's process shares it, as `sudo -u bob` inside
# alice's login does, and so possesses her keyrings.
"$PROBE" revoke "$A" >/dev/null
GA=$(id -g "$alice"); GB=$(id -g "$bob")
run "${USERSES[@]}" bash -p -c "
	'$PROBE' login $A $alice user 600 ${MAT[*]} >/dev/null || exit 9
	K=\$(setpriv --reuid=$A --regid=$GA --init-groups sh -c 'keyctl link @u @s && keyctl search @u user kubehsm:session:v1')
	U=\$(setpriv --reuid=$A --regid=$GA --init-groups keyctl show @s | awk '/_uid\\.$A\$/ {print \$1}')
	setpriv --reuid=$B --regid=$GB --init-groups sh -c \"
		keyctl print \$K >/dev/null 2>&1 && echo bob-read
		keyctl search @s user kubehsm:session:v1 >/dev/null 2>&1 && echo bob-search
		keyctl invalidate \$K >/dev/null 2>&1 && echo bob-invalidate
		keyctl unlink \$K \$U >/dev/null 2>&1 && echo bob-unlink
		keyctl clear \$U >/dev/null 2>&1 && echo bob-clear
		printf forged | keyctl padd user kubehsm:session:v1 \$U >/dev/null 2>&1 && echo bob-displace
		printf forged | keyctl padd user kubehsm:session:v1 @s >/dev/null && echo bob-planted\"
	setpriv --reuid=$A --regid=$GA --init-groups '$PROBE' find"
unlike "$out" "bob-read|bob-search|bob-invalidate" \
	"bob, possessing alice's keyrings, can neither read, search nor invalidate her record"
unlike "$out" "bob-unlink|bob-clear|bob-displace" \
	"nor unlink it from her user keyring, clear that keyring or displace the record there"
like "$out" "bob-planted" "bob can plant a key of the record's name in the shared session keyring"
like "$out" "^ok uid=$A user=$alice " "which neither is used nor hides alice's own record"

# A tmux server outlives its login: pam_keyinit revoke leaves it a revoked
# session keyring, and the user keyring still holds the scope-user record.
run keyctl session - bash -c "setpriv --reuid=$A --regid=$GA --init-groups sh -c \
	'keyctl link @u @s >/dev/null && keyctl revoke @s && \"$PROBE\" find'"
like "$out" "^ok uid=$A " "a process whose session keyring was revoked still finds the record"

# --- revocation reaches a record wherever the user linked it ----------------
K=$(as_user "$alice" sh -c 'keyctl link @u @s >/dev/null && R=$(keyctl newring kh-keep @u) &&
	K=$(keyctl search @u user kubehsm:session:v1) && keyctl link $K $R >/dev/null &&
	keyctl unlink $K @u >/dev/null && echo $K')
run as_user "$alice" keyctl print "$K"
is "$rc" 0 "alice moved her record out of the user keyring into a keyring of her own"
run "$PROBE" revoke "$A"
is "$out" "revoked" "root revokes alice's session"
run as_user "$alice" keyctl print "$K"
isnt "$rc" 0 "the record is gone although it was no longer in the user keyring (root's index)"
as_user "$alice" sh -c 'keyctl unlink $(keyctl search @u keyring kh-keep) @u' >/dev/null 2>&1

# --- scope session: root lists and revokes it from outside the login --------
run "${USERSES[@]}" bash -p -c "
	S=\$('$PROBE' store $A $alice session 600 ${MAT[*]}) || exit 9
	'$PROBE' list all | grep '^$A ' ; echo serial=\$S
	'$PROBE' revoke $A >/dev/null
	setpriv --reuid=$A --regid=$GA --init-groups '$PROBE' find"
like "$out" "^$A kubehsm:session:v1 none$" "root lists a scope-session record living in a login's keyring"
like "$out" "^miss (revoked|absent)" "and root's revoke, run outside that login, ends it"

# --- the writer never changes its host's ids ---------------------------------
# su runs with the caller's real uid and effective uid 0.  Storing and
# ending a session in such a process must leave every id as it was.
make_user carol
C=$(uid_of "$carol")
run setpriv --ruid="$B" --euid=0 "$PROBE" login "$C" "$carol" user 600 --ids "${MAT[@]}"
like "$out" "^ids $B 0 0 / 0 0 0$" "login in an su-like process (real uid bob, effective root): ids unchanged"
run as_user "$carol" "$PROBE" find
like "$out" "^ok uid=$C user=$carol logins=1 " "the session it stored is carol's"
run setpriv --ruid="$B" --euid=0 "$PROBE" logout "$C" --ids
like "$out" "^ids $B 0 0 / 0 0 0$" "logout in an su-like process: ids unchanged"
run as_user "$carol" "$PROBE" find
like "$out" "^miss revoked" "and the session it ended really went"

# --- the keyring helper: spawned, not forked; fully the user; nothing else --
# Root's work on carol's keys runs in kubehsm-keyops, started with
# posix_spawn (clone with CLONE_VM|CLONE_VFORK, then exec: the host's
# memory is never copied into a process of hers), an empty environment,
# its request on a socket.  It becomes carol — groups, gid, uid, each
# checked — before its first keyring call.
env "$NOLSAN" strace -f -s 128 -o "$KH_TMP/keyops.trace" -e trace=clone,clone3,vfork,fork,execve,setgroups,setresgid,setresuid,keyctl,prctl \
	"$PROBE" login "$C" "$carol" user 600 "${MAT[@]}" >/dev/null 2>&1
ok $? "a login under strace stores carol's session"
tr=$(cat "$KH_TMP/keyops.trace")
like "$tr" 'execve\("[^"]*kubehsm-keyops", \["kubehsm-keyops"\], 0x[0-9a-f]+ /\* 0 vars \*/' \
	"the helper is executed with no arguments and an empty environment"
like "$tr" 'clone3?\([^)]*CLONE_VM[^)]*CLONE_VFORK' "... by posix_spawn (CLONE_VM|CLONE_VFORK: the host is not copied)"
unlike "$tr" '(^|[^_])(fork|vfork)\(|clone\(child_stack=NULL, flags=[^,]*SIGCHLD' \
	"no fork of the host"
hpid=$(awk '/execve\(".*kubehsm-keyops"/ {print $1; exit}' "$KH_TMP/keyops.trace")
order=$(awk -v p="$hpid" -v u="$C" -v g="$(id -g "$carol")" '$1 == p {
	if ($0 ~ /setgroups\(0, (NULL|\[\])\) += 0/ && !sg) sg = NR
	if ($0 ~ ("setresgid\\(" g ", " g ", " g "\\) += 0") && !rg) rg = NR
	if ($0 ~ ("setresuid\\(" u ", " u ", " u "\\) += 0") && !ru) ru = NR
	if ($0 ~ /keyctl\(/ && !k) k = NR
	if ($0 ~ /PR_SET_DUMPABLE, (0|SUID_DUMP_DISABLE)/ && !d) d = NR }
	END { print (sg && rg && ru && k && sg < rg && rg < ru && ru < k && d && d < k) ? "ok" : "sg=" sg " rg=" rg " ru=" ru " d=" d " k=" k }' "$KH_TMP/keyops.trace")
is "$order" "ok" "the helper drops groups, then sets gid, then uid, and is undumpable before its first keyring call"
run as_user "$carol" "$PROBE" find
like "$out" "^ok uid=$C user=$carol " "the session it stored is carol's"
"$PROBE" logout "$C" --keep >/dev/null   # that login closes again (the counts below start from none)
# A helper that is not kubehsm's (or of another version) fails the call
# with a reason, and nothing is half-stored.  (The probe finds its helper
# beside itself: a copy of it in a directory of its own.)
mkdir -p "$KH_TMP/badhelper"
cp "$PROBE" "$KH_TMP/badhelper/cache_probe"
printf '#!/bin/sh\nhead -c 40 >/dev/null; printf "garbage-garbage-garbage-garbage-garbage"\n' \
	>"$KH_TMP/badhelper/kubehsm-keyops"
chmod 0755 "$KH_TMP/badhelper" "$KH_TMP/badhelper/kubehsm-keyops"
before=$(as_user "$carol" "$PROBE" find)
run "$KH_TMP/badhelper/cache_probe" store "$C" "$carol" user 900 "${MAT[@]}"
if [ "$rc" -ne 0 ] && grep -q "keyring helper for uid $C" <<<"$err"; then pass "a helper speaking garbage fails the store: $err"
else fail "a helper speaking garbage"; diag "rc=$rc out=$out err=$err"; fi
is "$(as_user "$carol" "$PROBE" find)" "$before" "... and carol's session is the one she had"
# A helper that hangs (a user may SIGSTOP her own process: here strace
# stops it as it sets its uid, a call only the helper makes — not prctl,
# which a sanitizer runtime in the host calls too) is killed at the
# deadline, and the host goes on with its ids as they were.
t0=$(date +%s)
run setpriv --ruid="$B" --euid=0 env "$NOLSAN" strace -f -o /dev/null -e trace=setresuid -e inject=setresuid:signal=SIGSTOP \
	"$PROBE" login "$C" "$carol" user 600 --ids "${MAT[@]}"
t1=$(date +%s)
if [ "$rc" -ne 0 ] && grep -q "keyring helper for uid $C did not finish" <<<"$err" && [ $((t1 - t0)) -lt 25 ]; then
	pass "a hung helper is killed at the deadline ($((t1 - t0)) s): $err"
else fail "a hung helper"; diag "rc=$rc t=$((t1 - t0)) out=$out err=$err"; fi
like "$out" "^ids $B 0 0 / 0 0 0$" "... and the host's ids are unchanged"
is "$(pgrep -u "$C" -x kubehsm-keyops | wc -l)" 0 "and no helper is left behind"

# --- every login counts, minting or not ------------------------------------
# A login without a token (password, cron) keeps the uid's session alive;
# a record minted inside a login (kubehsm login: --join) counts no login.
run "$PROBE" count "$C" "$carol"
is "$out" "counted" "a login of carol that minted nothing is counted"
"$PROBE" login "$C" "$carol" user 600 --join "${MAT[@]}" >/dev/null
run as_user "$carol" "$PROBE" find
like "$out" "^ok uid=$C user=$carol logins=1 " "a record minted inside it joins that one login"
"$PROBE" login "$C" "$carol" user 600 "${MAT[@]}" >/dev/null
run as_user "$carol" "$PROBE" find
like "$out" "^ok uid=$C user=$carol logins=2 " "a token login on top counts two"
run "$PROBE" logout "$C"
is "$out" "kept" "the token login closes: the session stays for the other login"
run as_user "$carol" "$PROBE" find
like "$out" "^ok uid=$C user=$carol logins=1 " "and counts one"
run "$PROBE" logout "$C"
is "$out" "removed" "the last login, which minted nothing, closes: the session ends"
run "$PROBE" login "$C" "$carol" user 600 --join "${MAT[@]}"
run as_user "$carol" "$PROBE" find
like "$out" "^ok uid=$C user=$carol logins=0 " \
	"a record minted with no login open counts none (it ends at its expiry)"

# --- quota -------------------------------------------------------------------
before=$(as_user "$alice" "$PROBE" find)
as_user "$alice" bash -c 'for i in $(seq 1 60); do head -c 1500 /dev/zero | tr "\0" x | keyctl padd user filler$i @u >/dev/null 2>&1 || break; done'
run "$PROBE" login "$A" "$alice" user 600 "${MAT[@]}"
like "$err" "quota is full" "a full key quota gives a clear error"
after=$(as_user "$alice" "$PROBE" find)
is "$after" "$before" "and leaves the previous record intact"
as_user "$alice" bash -c 'for i in $(seq 1 60); do keyctl unlink $(keyctl search @u user filler$i 2>/dev/null) @u >/dev/null 2>&1; done' || true

# --- secrets do not linger in memory -----------------------------------------
# scan_reader MODE WORD: start a reader that stops (--hold: before freeing
# the record, --pause: after), scan its writable memory for the key's marker.
scan_reader() {
	local pid
	as_user_inherit "$alice" "$PROBE" find "$1" >"$KH_TMP/scan.out" 2>&1 &
	for _ in $(seq 1 100); do grep -q "$2" "$KH_TMP/scan.out" && break; sleep 0.1; done
	pid=$(pgrep -u "$A" -f "cache_probe find $1" | head -1)
	run /usr/bin/python3 "$KH_SRCDIR/tests/harness/memscan.py" "$pid" KHTESTSECRETKEYMARKER
	kill "$pid" 2>/dev/null; wait 2>/dev/null
}
"$PROBE" store "$A" "$alice" user 600 >/dev/null     # dummy key with a marker
scan_reader --hold holding
ok $(( rc == 0 && out > 0 ? 0 : 1 )) "the memory scan finds the key while the reader holds it ($out copies)"
scan_reader --pause paused
is "$rc:$out" "0:0" "no copy of the session key is left in the reader's memory after use"
[ "$rc" = 0 ] || diag "$err"

done_testing
