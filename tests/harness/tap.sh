# tests/harness/tap.sh — TAP output for the shell integration tests.
#
# Source it, call `plan N` (or `plan_auto` and `done_testing` at the end),
# then ok/is/like/... .  Every assertion prints one TAP line; a skip always
# carries its reason.  `need_root` and `need_cmd` skip the whole script
# visibly when the machine cannot run it.
#
# Variables: KH_SRCDIR / KH_BUILDDIR (set by make check), KH_TMP (a private
# temp dir, removed on exit unless KH_KEEP_TMP=1), KH_MODLOG (what the PAM
# module logged, when the program that ran it had tests/probes/logcap: a
# failing assertion shows the lines logged since the assertion before it).
#
# kh_trusted VAR FILE sets VAR to the path of a copy of FILE that the
# policy's safety checks accept whatever the modes of the tree it was built
# in (a tarball unpacked as root keeps git's 0775 directories): name that
# copy, not the build tree's file, in a policy.

: "${KH_SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${KH_BUILDDIR:=$KH_SRCDIR}"
export KH_SRCDIR KH_BUILDDIR
KUBEHSM="$KH_BUILDDIR/helper/kubehsm"
PAM_KUBEHSM="$KH_BUILDDIR/pam/.libs/pam_kubehsm.so"

# A crashing sanitizer-built program would dump terabytes of shadow memory.
ulimit -c 0

_tap_n=0
_tap_failed=0
_tap_planned=
_tap_cleanups=()

# What a test creates for the module to trust (policies, CA files, PIN
# files) must not be group-writable because the caller's umask says so;
# files with other modes get them explicitly.
umask 022
KH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/kubehsm-test.XXXXXX")
chmod 0755 "$KH_TMP"   # test users must reach files the test hands them
KH_MODLOG=$KH_TMP/module.log
KH_LOGCAP=$KH_BUILDDIR/tests/probes/logcap/.libs/libkhlogcap.so
export KH_MODLOG
# Written by whatever uid runs the module (a pam_wrapper test runs it as a
# plain user); read only by the test.
: >"$KH_MODLOG" && chmod 0622 "$KH_MODLOG"
_tap_modlog_mark=0

# Run registered cleanups in reverse order, then drop the temp dir.
_tap_exit() {
	local rc=$? i
	for ((i = ${#_tap_cleanups[@]} - 1; i >= 0; i--)); do
		eval "${_tap_cleanups[$i]}" >/dev/null 2>&1 || true
	done
	[ "${KH_KEEP_TMP:-0}" = 1 ] || rm -rf "$KH_TMP"
	if [ -z "$_tap_planned" ] && [ $_tap_n -gt 0 ]; then echo "1..$_tap_n"; fi
	[ $_tap_failed -eq 0 ] || exit 1
	exit $rc
}
trap _tap_exit EXIT

# Register a command string to run at exit (LIFO).
on_exit() { _tap_cleanups+=("$1"); }

plan() { _tap_planned=$1; echo "1..$1"; }
plan_auto() { :; }
done_testing() { _tap_planned=$_tap_n; echo "1..$_tap_n"; }

# skip_all REASON: the whole script cannot run here.
skip_all() { echo "1..0 # SKIP $*"; _tap_planned=0; exit 0; }

diag() { local l; while IFS= read -r l; do echo "# $l"; done <<<"$*"; }

# On a failure, what the PAM module logged since the previous assertion
# (its own reason for refusing, say); either way the next failure starts
# from here.
_tap_modlog() {
	local size
	[ -f "$KH_MODLOG" ] || return 0
	size=$(stat -c %s "$KH_MODLOG" 2>/dev/null) || return 0
	if [ "$1" -ne 0 ] && [ "$size" -gt "$_tap_modlog_mark" ]; then
		diag "the PAM module logged (tests/probes/logcap):"
		diag "$(tail -c +$((_tap_modlog_mark + 1)) "$KH_MODLOG" | tail -n 40)"
	fi
	_tap_modlog_mark=$size
}

ok() {   # ok CONDITION-EXIT-STATUS DESCRIPTION  (use: cmd; ok $? "desc")
	local rc=$1; shift
	_tap_n=$((_tap_n + 1))
	if [ "$rc" -eq 0 ]; then
		echo "ok $_tap_n - $*"
	else
		echo "not ok $_tap_n - $*"
		_tap_failed=$((_tap_failed + 1))
	fi
	_tap_modlog "$rc"
	return "$rc"
}

pass() { ok 0 "$@"; }
fail() { ok 1 "$@"; }
skip() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n # SKIP $*"; }

is() {   # is GOT EXPECTED DESCRIPTION
	local got=$1 want=$2; shift 2
	if [ "$got" = "$want" ]; then ok 0 "$@"; else
		ok 1 "$@"; diag "got:      '$got'" ; diag "expected: '$want'"; return 1; fi
}

isnt() {
	local got=$1 want=$2; shift 2
	if [ "$got" != "$want" ]; then ok 0 "$@"; else
		ok 1 "$@"; diag "got '$got', which it must not be"; return 1; fi
}

like() {   # like GOT EXTENDED-REGEX DESCRIPTION
	local got=$1 re=$2; shift 2
	if grep -Eq -- "$re" <<<"$got"; then ok 0 "$@"; else
		ok 1 "$@"; diag "got:      '$got'"; diag "expected to match: /$re/"; return 1; fi
}

unlike() {
	local got=$1 re=$2; shift 2
	if ! grep -Eq -- "$re" <<<"$got"; then ok 0 "$@"; else
		ok 1 "$@"; diag "got:      '$got'"; diag "must not match: /$re/"; return 1; fi
}

# run CMD...: capture stdout/stderr/status into $out, $err, $rc.
run() {
	local o e
	o=$(mktemp "$KH_TMP/out.XXXXXX"); e=$(mktemp "$KH_TMP/err.XXXXXX")
	"$@" >"$o" 2>"$e"
	rc=$?
	out=$(cat "$o"); err=$(cat "$e")
	rm -f "$o" "$e"
	return 0
}

# The policy's rule for a directory above a file it names (conf/kh_policy_file.c):
# root's, and not writable by group or others unless sticky (/tmp).
_kh_dir_trusted() {
	local uid mode
	read -r uid mode < <(stat -L -c '%u %a' "$1" 2>/dev/null) || return 1
	[ "$uid" = 0 ] || return 1
	[ $((8#$mode & 8#1000)) -ne 0 ] || [ $((8#$mode & 8#022)) -eq 0 ]
}

kh_trusted() {
	local var=$1 src=$2 dir=$KH_TMP/trusted d
	[ -f "$src" ] || { echo "Bail out! kh_trusted: no file $src"; exit 1; }
	if [ ! -d "$dir" ]; then
		d=$(readlink -f "$KH_TMP")
		while :; do
			_kh_dir_trusted "$d" || {
				echo "Bail out! $d ($(stat -c 'mode %a, owner %U' "$d")) is above the" \
					"test's files, and the policy trusts nothing under a directory others" \
					"may write: set TMPDIR to a root-owned directory"
				exit 1
			}
			[ "$d" = / ] && break
			d=$(dirname "$d")
		done
		mkdir -m 0755 "$dir" || { echo "Bail out! mkdir $dir"; exit 1; }
	fi
	install -m 0644 "$src" "$dir/${src##*/}" || { echo "Bail out! cannot copy $src"; exit 1; }
	printf -v "$var" '%s' "$dir/${src##*/}"
}

need_root() { [ "$(id -u)" -eq 0 ] || skip_all "needs root (creates users, tokens and PAM services)"; }
need_cmd() { local c; for c in "$@"; do command -v "$c" >/dev/null 2>&1 || skip_all "needs '$c' (scripts/install-deps.sh installs it)"; done; }

# memcheck CMD...: run CMD checked for memory errors and definite leaks.
# A normal build runs it under valgrind; a sanitizer build (KH_SANITIZERS=1,
# set by make check) runs it natively, where ASan aborts on an error and
# LeakSanitizer fails the exit on a leak.  Either way a non-zero status
# means a finding; it gives up after KH_MEMCHECK_TIMEOUT seconds (300).
# Use with run: `run memcheck ./prog args`.
# With KH_MEMCHECK_LOG=FILE the checker's report goes to FILE instead of
# stderr (for long runs whose stderr would drown it).
memcheck() {
	local limit=${KH_MEMCHECK_TIMEOUT:-300} log=()
	if [ "${KH_SANITIZERS:-0}" = 1 ]; then
		ASAN_OPTIONS="detect_leaks=1:exitcode=99${KH_MEMCHECK_LOG:+:log_path=$KH_MEMCHECK_LOG}:${ASAN_OPTIONS:-}" \
			timeout "$limit" "$@"
	else
		[ -n "${KH_MEMCHECK_LOG:-}" ] && log=(--log-file="$KH_MEMCHECK_LOG")
		timeout "$limit" valgrind -q "${log[@]}" --leak-check=full \
			--errors-for-leak-kinds=definite --error-exitcode=99 "$@"
	fi
}
