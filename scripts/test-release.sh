#!/bin/bash
# kubehsm on a fresh Debian release other than the host's, in a root made
# by scripts/debian-root.sh on this machine (run as root):
#
#   scripts/test-release.sh trixie       Debian 13 (what CI runs beside the host)
#   scripts/test-release.sh testing      Debian testing, on demand
#   scripts/test-release.sh SUITE DIR    the root in DIR (default:
#                                        $KH_ROOTS/SUITE, KH_ROOTS defaulting to
#                                        /var/cache/kubehsm/roots)
#
# A root made earlier for the suite is reused while intact; otherwise it is
# made (debootstrap, 1-5 minutes).  The committed HEAD of this checkout is
# cloned into it afresh (a clean copy: the root keeps only its installed
# packages from one run to the next), and there, as an admin would, as root:
#
#   demo      the README's first command, scripts/demo.sh (installs the
#             packages, builds, shows a login and kubectl)
#   suite     the README's second: the -Werror build and the whole
#             `make check`, then `make installcheck` (scripts/test.sh --fast)
#   packages  build twice, lintian, install, log in, purge (scripts/deb-check.sh)
#
# Each phase's time, then "N passed, N failed, N skipped" over all of them
# (the demo counts as one test); exits non-zero when anything failed, or,
# under CI=true, skipped.  Logs: $KH_RELEASE_LOGS (default
# ${TMPDIR:-/tmp}/kubehsm-release-SUITE), each phase's last lines shown when
# it fails.  A phase that runs longer than KH_PHASE_TIMEOUT seconds (default
# 2400) is ended and fails.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
suite=${1:-}
[ -n "$suite" ] || { echo "usage: $0 SUITE [ROOT-DIR]" >&2; exit 2; }
dir=${2:-${KH_ROOTS:-/var/cache/kubehsm/roots}/$suite}
logs=${KH_RELEASE_LOGS:-${TMPDIR:-/tmp}/kubehsm-release-$suite}
limit=${KH_PHASE_TIMEOUT:-2400}
[ "$(id -u)" -eq 0 ] || { echo "test-release: run as root" >&2; exit 1; }
git -C "$top" rev-parse --verify -q HEAD >/dev/null ||
	{ echo "test-release: $top is not a git checkout with a commit" >&2; exit 1; }
rm -rf "$logs"; mkdir -p "$logs"

pass=0 fail=0 skip=0
times=()
now() { date +%s; }
fmt() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
# phase NAME CMD...: run CMD with its output in $logs/NAME.log, timed.
phase() {
	local name=$1 t0 rc=0; shift
	printf '==> %-9s ' "$name"
	t0=$(now)
	timeout --kill-after=30 "$limit" bash -c '"$@"' phase "$@" >"$logs/$name.log" 2>&1 </dev/null || rc=$?
	local took=$(($(now) - t0))
	times+=("$(printf '%-9s %8s  %s' "$name" "$(fmt $took)" "$([ $rc = 0 ] && echo ok || echo "FAILED ($rc)")")")
	if [ $rc = 0 ]; then echo "ok ($(fmt $took))"
	else
		[ $rc = 124 ] && echo "FAILED: still running after $limit s, ended ($(fmt $took))" ||
			echo "FAILED with status $rc ($(fmt $took))"
	fi
	return $rc
}
in_root() { bash "$top/scripts/debian-root.sh" run "$dir" "$@"; }
src=/work/kubehsm   # the checkout, inside the root

clone_into_root() {
	rm -rf "$dir$src"
	mkdir -p "$dir$src"
	(umask 022 && cd "$dir$src" && git init -q && git fetch -q "$top" HEAD &&
		git -c advice.detachedHead=false checkout -q FETCH_HEAD)
	echo "$(git -C "$dir$src" log -1 --oneline) cloned into $dir$src"
}
# phase runs commands in a new bash, under timeout.
export top dir src
export -f in_root clone_into_root

summarise() {
	echo
	echo "test-release $suite ($(in_root sh -c '. /etc/os-release; echo "$PRETTY_NAME"' 2>/dev/null || echo '?')):"
	printf '  %s\n' "${times[@]}"
	echo "$pass passed, $fail failed, $skip skipped"
	if [ $fail -gt 0 ]; then exit 1; fi
	if [ $skip -gt 0 ] && [ "${CI:-}" = true ]; then
		echo "CI: no test may skip; failing" >&2
		exit 1
	fi
	exit 0
}

if ! phase root bash "$top/scripts/debian-root.sh" make "$suite" "$dir"; then
	tail -20 "$logs/root.log"; fail=$((fail + 1)); summarise
fi
if ! phase clone clone_into_root; then
	tail -20 "$logs/clone.log"; fail=$((fail + 1)); summarise
fi

if phase demo in_root bash -c "cd $src && bash scripts/demo.sh"; then pass=$((pass + 1))
else
	fail=$((fail + 1)); tail -25 "$logs/demo.log"
	# Without the demo's packages nothing else can run.
	in_root bash "$src/scripts/install-deps.sh" >>"$logs/demo.log" 2>&1 </dev/null || summarise
fi

# The suite's own tally: "tests: N passed, N failed, N skipped".
rc=0
phase suite in_root bash -c "cd $src && bash scripts/test.sh --fast" || rc=$?
line=$(grep -E '^tests: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$logs/suite.log" | tail -1 || true)
if [ -n "$line" ]; then
	read -r _ p _ f _ s _ <<<"$line"
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	[ $rc = 0 ] || [ "$f" -gt 0 ] || [ "$s" -gt 0 ] || fail=$((fail + 1))
else
	fail=$((fail + 1))
fi
if [ $rc != 0 ] || [ -z "$line" ]; then
	grep -E '^(FAIL|ERROR|XPASS):|^not ok|^Bail out|# SKIP' "$logs/suite.log" | head -60 || true
	[ -n "$line" ] || tail -25 "$logs/suite.log"
fi

rc=0
phase packages in_root bash -c "cd $src && bash scripts/deb-check.sh" || rc=$?
p=$(grep -c '^ok' "$logs/packages.log" || true)
f=$(grep -c '^not ok' "$logs/packages.log" || true)
s=$(grep -c '^1\.\.0 # SKIP' "$logs/packages.log" || true)
pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
if [ $rc != 0 ] && [ "$f" = 0 ]; then fail=$((fail + 1)); fi
if [ $rc != 0 ]; then
	grep -E '^(not ok|Bail out)|^1\.\.0 # SKIP' "$logs/packages.log" | head -30 || true
	[ "$f" != 0 ] || tail -25 "$logs/packages.log"
fi
echo "logs: $logs"
summarise
