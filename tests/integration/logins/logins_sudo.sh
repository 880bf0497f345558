#!/bin/bash
# logins_sudo: another uid inside a user's ssh login.  `sudo -u svc`,
# `sudo -iu svc` and `su svc` do not run pam_keyinit (Debian's stacks), so
# svc shares the login's session keyring, which links the user's keyring:
# svc possesses it.  svc must still get nothing of the user's record: not
# read it, find it, invalidate it, hide it behind a key of the same name
# planted in the shared keyring, nor unlink it from her user keyring.
# sudo's session close touches nobody's session, and sudo authenticating the
# invoking user with the token while running as svc mints no record for
# anyone (PAM_USER changes between auth and session).
. "$KH_SRCDIR/tests/integration/logins/logins_common.sh"

token_user alice
plain_user svc pw-svc-$$
logins_pam "$SSHD_SERVICE" < <(logins_kubehsm_stack "$CONF" keyinit)
logins_pam su < <(logins_kubehsm_stack "$CONF")
logins_pam sudo < <(logins_kubehsm_stack "$CONF" base=sudo)
logins_pam sudo-i < <(logins_kubehsm_stack "$CONF" base=sudo-i)
sudoers_nopasswd() {
	logins_sudoers <<EOF
Defaults:$alice !lecture, timestamp_timeout=0
$alice ALL=($svc) NOPASSWD: ALL
EOF
}
sudoers_nopasswd
sshd_start

# Password auth (the PIN at sshd's password prompt) runs PAM in sshd's
# monitor, so this login has a session even where keyboard-interactive's
# forked auth would lose it: what matters here is what other uids can do.
ssh_argv "$alice" password
LOGIN_PASSWORD=$PIN login_open a1 "${SSH_ARGV[@]}"
ok $? "$alice logs in over ssh (password auth, token PIN)" || diag "$(login_transcript a1)"
login_run a1 "$KUBEHSM status"
like "$out" "^Identity: *$alice\$" "$alice has a kube session in her ssh login" || diag "$out$err"
RID=$(record_id "$alice")
state() { echo "id=$(record_id "$alice") serial=$(session_serial "$alice") logins=$(logins "$alice")"; }
S0=$(state)
diag "record: $S0"

# attack WHAT CMD-PREFIX: as svc, through CMD-PREFIX run inside alice's
# login, try everything on alice's record; one assertion per attempt.
attack() {
	local what=$1 prefix=$2 script r
	script="id -un; keyctl pipe $RID >/dev/null 2>&1; echo pipe=\$?;"
	script+=" keyctl print $RID >/dev/null 2>&1; echo print=\$?;"
	script+=" echo search_s=\$(keyctl search @s user $RECORD 2>/dev/null);"
	script+=" keyctl invalidate $RID >/dev/null 2>&1; echo invalidate=\$?;"
	script+=" keyctl revoke $RID >/dev/null 2>&1; echo revoke=\$?;"
	script+=" keyctl add user $RECORD planted-by-\$(id -un) @s >/dev/null 2>&1; echo plant=\$?"
	if [ "$prefix" = su ]; then
		LOGIN_PASSWORD=pw-svc-$$ login_run_tty a1 "su $svc -c $(printf %q "$script")"
	else
		login_run a1 "$prefix sh -c $(printf %q "$script")"
	fi
	r=$out
	is "$(head -n 1 <<<"$r")" "$svc" "$what: the commands run as $svc" || diag "rc=$rc $err"
	for op in pipe print; do
		isnt "$(sed -n "s/^$op=//p" <<<"$r")" 0 "$what: $svc cannot read $alice's record (keyctl $op)"
	done
	isnt "$(sed -n 's/^search_s=//p' <<<"$r")" "$RID" \
		"$what: $svc cannot find it through the shared session keyring (keyctl search @s)"
	isnt "$(sed -n 's/^invalidate=//p' <<<"$r")" 0 "$what: $svc cannot invalidate it"
	isnt "$(sed -n 's/^revoke=//p' <<<"$r")" 0 "$what: $svc cannot revoke it"
	is "$(sed -n 's/^plant=//p' <<<"$r")" 0 \
		"$what: control: $svc can plant a '$RECORD' key in the shared session keyring"
	login_run a1 "env KUBERNETES_EXEC_INFO='$V1' $KUBEHSM exec >/dev/null && $K133 --kubeconfig $KH_TMP/kubeconfig-$alice get --raw /kh-whoami"
	like "$out" "^[0-9A-F]+ O=dev,CN=$alice\$" \
		"$what: $alice's kubehsm exec and kubectl still work past the planted key" || diag "rc=$rc $err"
	is "$(state)" "$S0" "$what: $alice's record, session and login count are unchanged"
	is "$(logins "$svc")" none "$what: $svc has no record"
}

logins_preload_begin   # sudo and su are setuid: a sanitizer build needs /etc/ld.so.preload
attack "sudo -u $svc" "sudo -u $svc"
attack "sudo -iu $svc" "sudo -iu $svc"
attack "su $svc (password)" su

# sudo opens and closes a PAM session with no kubehsm authentication: one
# notice line, nothing cached, nobody's session touched.
logins_syslog_begin
login_run a1 "sudo -u $svc true"
logins_syslog_end
is "$rc" 0 "sudo -u $svc true (NOPASSWD) runs"
# Only this sudo's line: the sink hears every test's logins while it runs.
is "$(grep -c "user '$svc': no kubehsm authentication" "$LOGINS_SYSLOG")" 1 \
	"sudo's session without a kubehsm authentication logs one notice line" ||
	diag "$(grep -i kubehsm "$LOGINS_SYSLOG" | tail -5)"
is "$(state)" "$S0" "sudo's session close leaves $alice's record and login count alone"

# sudo authenticating the invoking user with the token, running as svc.
logins_sudoers <<EOF
Defaults:$alice !lecture, timestamp_timeout=0
$alice ALL=($svc) ALL
EOF
c0=$(shim_logins)
LOGIN_PIN=$PIN login_run_tty a1 "sudo -u $svc id -un"
is "$out" "$svc" "sudo -u $svc with the token: $alice types her PIN, the command runs as $svc" ||
	diag "rc=$rc $err" "$(login_transcript a1 5)"
is "$(($(shim_logins) - c0))" 1 "sudo with the token: one C_Login"
is "$(state)" "$S0" "sudo with the token: no record minted for $alice (PAM_USER changed), her session untouched"
is "$(logins "$svc")" none "sudo with the token: no record minted for $svc"
sudoers_nopasswd

# Last, as it would undo the record's link: svc possesses alice's user
# keyring through the shared session keyring, and a possessor of the
# default user keyring may write it.  Unlinking her record from it would
# hide her session from every process of hers.
A=$(uid_of "$alice")
login_run a1 "sudo -u $svc sh -c 'keyctl unlink $RID \$(keyctl search @s keyring _uid.$A)'"
isnt "$rc" 0 "sudo -u $svc: $svc cannot unlink $alice's record from her user keyring (possessed through the shared session keyring)"
login_run a1 "$KUBEHSM status"
like "$out" "^Identity: *$alice\$" "... and $alice's session is still found" || diag "rc=$rc $out $err"
logins_preload_end

login_close a1
is "$rc" 0 "$alice's ssh login ends"
ended "$alice" "$alice's last login ended"

logins_sanitizer_reports
done_testing
