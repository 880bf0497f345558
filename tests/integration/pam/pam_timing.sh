#!/bin/bash
# pam_timing: the module option timing=FILE through pamtester and a real
# /etc/pam.d service (bench/TIMING.md), and polkit.mode on a host with no
# system bus: "if-available" lets the login through without loading the
# polkit plugin (its timing line has the step polkit and no polkit_load),
# "required" refuses the session with the same message as before.  The bus
# is made absent with DBUS_SYSTEM_BUS_ADDRESS naming a socket that is not
# there, so a bus the machine or another test runs is never seen.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/pamsvc.sh"

need_root
need_cmd pamtester softhsm2-util pkcs11-tool openssl keyctl timeout
[ -f "$PAM_KUBEHSM" ] || skip_all "pam/.libs/pam_kubehsm.so not built"

PIN=4711
ISSUER_PIN=987654
HOST=khthost$$
pki_init && pki_ca users "kh test users CA" && pki_ca issuerca "kh issuer CA" &&
	pki_issuer_token "$HOST" "$ISSUER_PIN" issuerca || { echo "Bail out! PKI"; exit 1; }
chmod 0600 "$PKI_DIR/issuer.pin"
make_user alice
U=$alice
pki_user_cert "$U" users --cn "$U" --o dev && pki_token_init "$U" "$PIN" &&
	pki_token_import "$U" "$PIN" "$U" kube 01 || { echo "Bail out! token"; exit 1; }

ETC=$KH_TMP/etc
mkdir -m 0755 "$ETC"
for m in off if-available required; do
	pki_policy "$ETC/$m.conf" "$HOST" polkit="$m" || { echo "Bail out! policy"; exit 1; }
done
TLOG=$KH_TMP/timing.log
SVC=kubehsm-timing-$$
on_exit "rm -f /etc/pam.d/$SVC-*"
for m in off if-available required; do
	pam_service_file "/etc/pam.d/$SVC-$m" "config=$ETC/$m.conf" "timing=$TLOG"
done
pam_service_file "/etc/pam.d/$SVC-rel" "config=$ETC/off.conf" "timing=timing.log"
NOBUS=unix:path=$KH_TMP/no-such-bus/system_bus_socket

# lines: the timing lines of the last pamtester run (one process: one pid).
lines() { grep "^kh-timing v1 module=pam_kubehsm pid=[0-9]* " "$TLOG"; }
has_step() { grep -q " $2=[0-9][0-9]*\( \|\$\)" <<<"$1"; }
# sum_ok LINE: the steps add up to at most total.
sum_ok() {
	awk '{ t = -1; s = 0
		for (i = 3; i <= NF; i++) { split($i, kv, "=")
			if (kv[1] == "total") t = kv[2]
			else if (i > 7 && kv[1] != "start") s += kv[2] }
		exit !(t >= 0 && s <= t) }' <<<"$1"
}
# ptlog SERVICE OPS...: pamtester with no system bus, a fresh timing file.
ptlog() {
	local svc=$1; shift
	rm -f "$TLOG"
	run env "${PT_ENV[@]}" DBUS_SYSTEM_BUS_ADDRESS="$NOBUS" timeout 60 pamtester \
		"$svc" "$U" "$@" <<<"$PIN"
}

plan 20

# --- timing=FILE: one line per entry point --------------------------------
ptlog "$SVC-off" authenticate open_session close_session
is "$rc" 0 "polkit off, timing=FILE: the login succeeds"
L=$(lines)
is "$(awk '{ print $5, $6 }' <<<"$L" | tr '\n' ' ')" \
	"phase=auth rc=0 phase=open rc=0 phase=close rc=0 " "three lines: auth, open, close, rc=0"
is "$(awk '{ print $4 }' <<<"$L" | sort -u | wc -l)" 1 "... all of one process (pid=)"
AUTH=$(grep ' phase=auth ' <<<"$L") OPEN=$(grep ' phase=open ' <<<"$L")
missing=
for s in user policy p11_load find conv login challenge identity handoff p11_close; do
	has_step "$AUTH" $s || missing+=" $s"
done
is "$missing" "" "auth: every step of the login is in its line"
missing=
for s in handoff user policy issuer keygen mint p11_close store; do
	has_step "$OPEN" $s || missing+=" $s"
done
is "$missing" "" "open: every step of the session is in its line"
has_step "$OPEN" polkit || has_step "$OPEN" polkit_load
ok $((!$?)) "polkit off: no polkit step"
bad=0
while IFS= read -r l; do sum_ok "$l" || bad=1; done <<<"$L"
is "$bad" 0 "in every line the steps add up to at most total"
unlike "$(cat "$TLOG")" "$U|$HOST" "the lines name neither the user nor a token"
is "$(stat -c %a "$TLOG")" 600 "the timing file is root's alone (0600)"

# --- no system bus, polkit.mode if-available ---------------------------------
ptlog "$SVC-if-available" authenticate open_session close_session
is "$rc" 0 "no system bus, if-available: the login succeeds"
OPEN=$(lines | grep ' phase=open ')
has_step "$OPEN" polkit
ok $? "... polkit was asked for (the step polkit is timed)"
has_step "$OPEN" polkit_load
ok $((!$?)) "... without loading the polkit plugin (no polkit_load step)"
like "$(cat "$KH_MODLOG")" \
	"polkit unreachable \(Could not connect: No such file or directory\); org\.kubehsm\.cache-credentials allowed by polkit\.mode = if-available" \
	"... and logs the plugin's own line for an absent bus"

# GIO already in the host: its shared bus connection, not the socket, would
# answer, so the plugin is loaded and asked; the verdict is the same.
GIO=$(ldconfig -p | awk '/libgio-2\.0\.so\.0 .*x86-64/ { print $NF; exit }')
: >"$KH_MODLOG"
rm -f "$TLOG"
run env "${PT_ENV[@]}" LD_PRELOAD="${KH_PAM_PRELOAD:+$KH_PAM_PRELOAD }$GIO" \
	DBUS_SYSTEM_BUS_ADDRESS="$NOBUS" timeout 60 pamtester "$SVC-if-available" "$U" \
	authenticate open_session close_session <<<"$PIN"
has_step "$(lines | grep ' phase=open ')" polkit_load
ok $? "no system bus, GIO already in the host: the plugin is loaded and asked (rc $rc)"
like "$(cat "$KH_MODLOG")" \
	"polkit unreachable \(Could not connect: No such file or directory\); org\.kubehsm\.cache-credentials allowed by polkit\.mode = if-available" \
	"... and says what the look without it says"

# --- no system bus, polkit.mode required ---------------------------------------
: >"$KH_MODLOG"
ptlog "$SVC-required" authenticate open_session
like "$rc:$err" "^[1-9].*(Cannot make/remove an entry for the specified session|session)" \
	"no system bus, required: the session is refused"
like "$(cat "$KH_MODLOG")" \
	"polkit unreachable \(Could not connect: No such file or directory\), policy requires it \(polkit\.mode = required\): org\.kubehsm\.cache-credentials refused" \
	"... with the same message as the plugin gives"
has_step "$(lines | grep ' phase=open ')" polkit_load
ok $((!$?)) "... also without loading the plugin"

# --- a relative timing path is a configuration error ---------------------------
pt "$SVC-rel" "$U" "$PIN" authenticate
isnt "$rc" 0 "timing=relative: the service fails"
grep -q "malformed module option 'timing=timing.log' (timing= needs an absolute path or syslog)" \
	"$KH_MODLOG"
ok $? "... and the log says why"
