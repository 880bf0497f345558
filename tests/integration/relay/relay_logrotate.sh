#!/bin/bash
# relay_logrotate: the real logrotate rotates the relay's audit log with the
# shipped stanza (debian/kubehsm-relayd.logrotate, its path the only thing
# rewritten, into the test's directory), and the relay writes the new file.
#
# The relay makes the log's directory root's, its group's, 0750: logrotate
# accepts it without "su" (0770 made it refuse: "parent directory has
# insecure permissions").  logrotate runs in a PID namespace of its own,
# so the stanza's postrotate (pkill -HUP -x kubehsm-relayd) reaches no
# relay -- neither another test's nor ours: the relay must notice the new
# file by itself.  A second rotation compresses the first week
# (delaycompress), and the relay, after its drop, can remove no rotated
# file.
set -u
. "$KH_SRCDIR/tests/harness/relay.sh"
relay_preamble logrotate unshare zcat jq
STANZA=$KH_SRCDIR/debian/kubehsm-relayd.logrotate
[ -r "$STANZA" ] || skip_all "no $STANZA"

plan_auto
relay_init
make_user alice
relay_start || exit 1
relay_mint "$alice" && relay_deliver "$alice" || { echo "Bail out! session for $alice"; exit 1; }
LOGDIR=$(dirname "$RELAY_AUDIT")
GROUP=$(id -gn "$RELAY_USER")

is "$(stat -c '%a %U:%G' "$LOGDIR")" "750 root:$GROUP" \
	"the relay made the log's directory root's, group $GROUP, 0750 (only root writes it)"

# The stanza as shipped; only its path points into the test's directory.
grep -q '^/var/log/kubehsm/audit.log {' "$STANZA"
ok $? "the shipped stanza rotates /var/log/kubehsm/audit.log"
sed "s|^/var/log/kubehsm/audit.log {|$RELAY_AUDIT {|" "$STANZA" >"$KH_TMP/logrotate.conf"
chmod 0644 "$KH_TMP/logrotate.conf"
rotate() {
	run unshare --pid --fork --mount-proc logrotate -v -f -s "$KH_TMP/logrotate.state" \
		"$KH_TMP/logrotate.conf"
}

relay_kc "$alice" get --raw "/kh-whoami?week=1"
is "$(jq -r .path "$RELAY_AUDIT" | tail -1)" "/kh-whoami?week=1" "a first line in the log"
rotate
is "$rc" 0 "logrotate -f with the shipped stanza succeeds" || diag "$err"
unlike "$err" "skipping|insecure permissions|error:" "... and skips nothing" || diag "$err"
[ -f "$RELAY_AUDIT.1" ] && grep -q 'week=1' "$RELAY_AUDIT.1"
ok $? "... the week's log is now audit.log.1"
is "$(stat -c '%a %U:%G' "$RELAY_AUDIT" 2>&1)" "600 $RELAY_USER:$GROUP" \
	"... and a new audit.log is there, 0600, the relay's (create 0600 keeps the owner)"
relay_kc "$alice" get --raw "/kh-whoami?week=2"
is "$rc" 0 "a request after the rotation"
is "$(jq -r .path "$RELAY_AUDIT" 2>/dev/null | tail -1)" "/kh-whoami?week=2" \
	"... is written to the new file (no SIGHUP reached the relay)"
grep -q 'week=2' "$RELAY_AUDIT.1"
is "$?" 1 "... and not to the old one"

rotate
is "$rc" 0 "a second rotation" || diag "$err"
zcat "$RELAY_AUDIT.2.gz" 2>/dev/null | grep -q 'week=1'
ok $? "... compresses the first week (audit.log.2.gz)"
grep -q 'week=2' "$RELAY_AUDIT.1"
ok $? "... keeps the second as audit.log.1"
relay_kc "$alice" get --raw "/kh-whoami?week=3"
is "$(jq -r .path "$RELAY_AUDIT" 2>/dev/null | tail -1)" "/kh-whoami?week=3" \
	"... and the relay writes the third week's file"

run setpriv --reuid="$RELAY_UID" --regid="$(id -g "$RELAY_USER")" --clear-groups \
	--init-groups --reset-env rm -f "$RELAY_AUDIT.1" "$RELAY_AUDIT.2.gz"
[ -f "$RELAY_AUDIT.1" ] && [ -f "$RELAY_AUDIT.2.gz" ]
ok $? "the relay's user cannot remove a rotated week"
run relay_as "$alice" cat "$RELAY_AUDIT.1"
isnt "$rc" 0 "no user can read one"

relay_stop
is "$RELAY_STATUS" 0 "the relay stops cleanly"
done_testing
