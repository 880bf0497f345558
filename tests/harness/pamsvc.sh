# tests/harness/pamsvc.sh — the one writer of the PAM services the tests,
# the demo and the benches log in through (source after tap.sh, which sets
# $PAM_KUBEHSM to the module of the build under test).
#
# pam_service_file FILE [--keyinit] MODULE-ARGS...
#   auth and session through pam_kubehsm with MODULE-ARGS, pam_permit for
#   account and after the session line.  --keyinit first gives the login
#   its own session keyring (`pam_keyinit force revoke`), as the README's
#   stacks do; without it the caller's keyrings are used.
pam_service_file() {
	local file=$1 keyinit=0
	shift
	if [ "${1:-}" = --keyinit ]; then keyinit=1; shift; fi
	{
		echo "auth     required $PAM_KUBEHSM $*"
		echo "account  required pam_permit.so"
		[ $keyinit = 0 ] || echo "session  optional pam_keyinit.so force revoke"
		echo "session  required $PAM_KUBEHSM $*"
		echo "session  required pam_permit.so"
	} >"$file"
}
