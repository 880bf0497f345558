# tests/harness/pamsvc.sh — the one writer of the PAM services the tests,
# the demo and the benches log in through (source after tap.sh, which sets
# $PAM_KUBEHSM to the module of the build under test), and the environment
# of the PAM applications a test starts itself.
#
# KH_PAM_PRELOAD  what LD_PRELOAD must hold for a PAM application to load
#                 the module: in a sanitizer build the ASan runtime first
#                 (pamtester is not instrumented); and tests/probes/logcap,
#                 which keeps the module's syslog lines in $KH_MODLOG for
#                 tap.sh to show when an assertion fails.
# PT_ENV          `env "${PT_ENV[@]}" pamtester ...`: LD_PRELOAD first, then
#                 the variables those libraries read.
# pt SERVICE USER PIN OPS...
#                 pamtester, the PIN on stdin, with PT_ENV; $out $err $rc.
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

KH_PAM_PRELOAD=
PT_ENV=()
if nm -D "$PAM_KUBEHSM" 2>/dev/null | grep -q __asan_init; then
	KH_PAM_PRELOAD=$(gcc -print-file-name=libasan.so)
	[ -f "$KH_PAM_PRELOAD" ] || { echo "Bail out! libasan.so not found"; exit 1; }
	# Leak checking of pamtester/libpam is off; the module's leaks are
	# checked with an instrumented driver (pam_valgrind.sh).
	PT_ENV+=(ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
fi
if [ -n "${KH_LOGCAP:-}" ] && [ -f "$KH_LOGCAP" ]; then
	KH_PAM_PRELOAD="${KH_PAM_PRELOAD:+$KH_PAM_PRELOAD }$KH_LOGCAP"
	PT_ENV+=(KH_LOGCAP_FILE="$KH_MODLOG")
fi
[ -z "$KH_PAM_PRELOAD" ] || PT_ENV=(LD_PRELOAD="$KH_PAM_PRELOAD" "${PT_ENV[@]}")

pt() {
	local svc=$1 user=$2 pin=$3
	shift 3
	run env "${PT_ENV[@]}" timeout 60 pamtester "$svc" "$user" "$@" <<<"$pin"
}
