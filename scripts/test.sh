#!/bin/bash
# Build kubehsm and run every test: the -Werror build's `make check` (unit +
# integration against real parts), the same suite built with ASan+UBSan,
# `make distcheck`, the fuzz targets, and last the Debian packages built,
# linted, installed, used and purged (scripts/deb-check.sh).  Run as root on
# Debian 12; installs what it needs first.
#
#   scripts/test.sh            everything
#   scripts/test.sh --fast     the -Werror build's `make check` only
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
fast=0
[ "${1:-}" = "--fast" ] && fast=1
jobs=$(nproc 2>/dev/null || echo 2)

# Each step's wall time, printed as a table at the end: CI has a budget.
step_name= step_t0=0 step_times=()
step_end() {
	[ -n "$step_name" ] || return 0
	local d=$(($(date +%s) - step_t0))
	step_times+=("$(printf '%3d:%02d  %s' $((d / 60)) $((d % 60)) "$step_name")")
	step_name=
}
step() {
	step_end
	step_name=$1 step_t0=$(date +%s)
	printf '\n==> %s\n' "$*"
}
run_t0=$(date +%s)

# Mount points the login-program tests create on the host when missing
# (tests/harness/logins.sh); removed at the end, when no test can hold them.
preload_was_there=0; [ -e /etc/ld.so.preload ] && preload_was_there=1
shimdir_was_there=0; [ -e /run/kubehsm-p11shim ] && shimdir_was_there=1
remove_test_mountpoints() {
	if [ $preload_was_there = 0 ] && [ -f /etc/ld.so.preload ] && [ ! -s /etc/ld.so.preload ]; then
		rm -f /etc/ld.so.preload
	fi
	[ $shimdir_was_there = 1 ] || rmdir /run/kubehsm-p11shim 2>/dev/null || true
}
leftovers_before=
at_exit() {
	remove_test_mountpoints
	[ -z "$leftovers_before" ] || rm -f "$leftovers_before"
}
trap at_exit EXIT

step "installing Debian packages"
bash scripts/install-deps.sh

step "bootstrapping (autoreconf)"
autoreconf -fi >/dev/null

total_pass=0 total_fail=0 total_skip=0
tally() {   # add one build's test-suite.log to the totals, print its skips
	local log=$1 p f e s x
	p=$(awk '/^# PASS:/{print $3}' "$log"); f=$(awk '/^# FAIL:/{print $3}' "$log")
	e=$(awk '/^# ERROR:/{print $3}' "$log"); s=$(awk '/^# SKIP:/{print $3}' "$log")
	x=$(awk '/^# XPASS:/{print $3}' "$log")
	total_pass=$((total_pass + ${p:-0})); total_fail=$((total_fail + ${f:-0} + ${e:-0} + ${x:-0}))
	total_skip=$((total_skip + ${s:-0}))
	if [ "${s:-0}" -gt 0 ]; then
		echo "skipped tests in $log, with their reasons:"
		find "$(dirname "$log")" -name '*.log' -exec grep -h '# SKIP' {} + | sed 's/^/  /' || true
	fi
}

# Tests leave nothing running.  What runs now is recorded, and every
# process started from here on carries this run's id in its environment
# (scripts/leftovers.sh says why the id and not the process names): after
# each build's make check and once at the end, any process of the run still
# alive is named, ended, and fails the run.
KH_TEST_RUN=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
leftovers_before=$(mktemp "${TMPDIR:-/tmp}/kubehsm-leftovers.XXXXXX")
bash "$top/scripts/leftovers.sh" snapshot "$leftovers_before"
export KH_TEST_RUN
leftovers() {   # leftovers WHAT: fail the run on processes WHAT left running
	if ! env -u KH_TEST_RUN bash "$top/scripts/leftovers.sh" check --end \
		"$KH_TEST_RUN" "$leftovers_before" "$1"; then
		total_fail=$((total_fail + 1))
		return 1
	fi
}

run_check() {   # run_check DIR CONFIGURE-ARGS...: out-of-tree build + make check
	local dir=$1; shift
	rm -rf "$dir"; mkdir -p "$dir"
	(cd "$dir" && "$top/configure" -q "$@" && make -s -j"$jobs") >"$dir.build.log" 2>&1 ||
		{ tail -50 "$dir.build.log"; echo "build in $dir failed (log: $dir.build.log)"; return 1; }
	local rc=0
	(cd "$dir" && make -s check -j"$jobs" VERBOSE=1) || rc=$?
	[ -f "$dir/test-suite.log" ] && tally "$dir/test-suite.log"
	leftovers "make check in $dir" || rc=1
	return $rc
}

# The PAM module's load/use/unload cycles under valgrind take ~1.7 s each:
# every build here runs 100 of them.  The full 1000-cycle proof (~30
# minutes) and long fuzzing are on demand: scripts/long-proofs.sh.
export KH_PAM_MEMCHECK_CYCLES=${KH_PAM_MEMCHECK_CYCLES:-100}

rc=0
step "build with -Werror and run make check (unit + integration; $KH_PAM_MEMCHECK_CYCLES PAM cycles under valgrind)"
run_check "$top/build" --enable-werror || rc=1

step "install into a staging root and check it (make installcheck)"
rm -rf "$top/build/stage"
if (cd "$top/build" && make -s install DESTDIR="$top/build/stage" >/dev/null 2>&1 &&
	make -s installcheck DESTDIR="$top/build/stage") >"$top/build/installcheck.log" 2>&1; then
	:
else
	rc=1
fi
grep -E '^(ok|not ok)' "$top/build/installcheck.log" || true
p=$(grep -c '^ok' "$top/build/installcheck.log" || true); f=$(grep -c '^not ok' "$top/build/installcheck.log" || true)
total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
[ "$p" -gt 0 ] || { echo "installcheck ran no check (log: $top/build/installcheck.log)"; rc=1; }

if [ $fast -eq 0 ]; then
	step "build with ASan + UBSan and run make check again"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		run_check "$top/build-asan" --enable-werror --enable-sanitizers || rc=1

	# The tarball is built, unpacked read-only, configured, built with
	# -Werror, unit-tested, installed and cleaned; its distcheck-hook fails
	# on any tracked file it does not ship.  The integration suite has just
	# run twice from this tree and needs none of that repeated (it doubled
	# this step's time).
	step "make distcheck (the tarball builds and passes the unit tests; it ships every tracked file)"
	(cd "$top/build" && make -s distcheck -j"$jobs" \
		'TEST_LOGS=$(filter tests/unit/%,$(am__test_logs2:.sh.log=.log))' \
		>"$top/build/distcheck.log" 2>&1) &&
		grep -A3 'archives ready for distribution' "$top/build/distcheck.log" ||
		{ tail -60 "$top/build/distcheck.log"; echo "make distcheck failed"; rc=1; }
fi

if [ $fast -eq 0 ]; then
	nfuzz=$(ls "$top"/tests/fuzz/fuzz_*.c | wc -l)   # the targets scripts/fuzz.sh runs
	step "fuzz each of the $nfuzz targets for 15 s (scripts/fuzz.sh: libFuzzer + ASan + UBSan)"
	bash scripts/fuzz.sh 15 >"$top/build/fuzz.log" 2>&1 || rc=1
	sed -n '/^target /,$p' "$top/build/fuzz.log"
	p=$(grep -cE '^fuzz_[a-z0-9_]+ +[0-9]+ +[0-9]+ +ok$' "$top/build/fuzz.log" || true)
	f=$(grep -cE '^fuzz_[a-z0-9_]+ .*FAILED' "$top/build/fuzz.log" || true)
	total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
	[ "$p" -eq "$nfuzz" ] || { tail -30 "$top/build/fuzz.log"; echo "fuzz step: $p of $nfuzz targets ran clean (log: $top/build/fuzz.log)"; rc=1; }
fi

if [ $fast -eq 0 ]; then
	# Last: it installs the packages on this machine (for some ten seconds;
	# purged on exit, also on failure), so nothing above may run against them.
	step "Debian packages: build twice, lintian, install, enable, log in, purge (scripts/deb-check.sh)"
	if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
		bash scripts/deb-check.sh >"$top/build/deb-check.log" 2>&1 || rc=1
		grep -E '^(ok|not ok|#|Bail out)' "$top/build/deb-check.log" || true
		p=$(grep -c '^ok' "$top/build/deb-check.log" || true)
		f=$(grep -c '^not ok' "$top/build/deb-check.log" || true)
		sk=$(grep -c '^1\.\.0 # SKIP' "$top/build/deb-check.log" || true)
		total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_skip=$((total_skip + sk))
		[ "$p" -gt 0 ] || [ "$sk" -gt 0 ] ||
			{ tail -30 "$top/build/deb-check.log"; echo "deb-check ran no check (log: $top/build/deb-check.log)"; rc=1; }
	else
		echo "not a git checkout: the packages are built from git's view of the tree; skipped"
		total_skip=$((total_skip + 1))
	fi
fi

# The other Debian release this project supports (Debian 12 and 13): the
# README's two commands' work again in a root of that release made on this
# machine (scripts/debian-root.sh, scripts/test-release.sh): the demo, the
# -Werror build's whole make check and installcheck, the package check.
# Sanitizers, fuzzing and distcheck run on the host's release only.
# KH_OTHER_RELEASE=SUITE picks another suite (testing, say); =none leaves
# it out, which counts as a skip.
other_release() {
	local v
	v=$(. /etc/os-release 2>/dev/null && echo "${VERSION_ID:-}")
	case $v in
	12) echo trixie ;;
	13) echo bookworm ;;
	*) echo none ;;
	esac
}
if [ $fast -eq 0 ]; then
	suite=${KH_OTHER_RELEASE:-$(other_release)}
	if [ "$suite" = none ]; then
		step "the other Debian release"
		echo "no other release to test beside this host's ($(. /etc/os-release && echo "$PRETTY_NAME")); skipped"
		total_skip=$((total_skip + 1))
	else
		step "Debian $suite in a root of its own: demo, make check, installcheck, packages (scripts/test-release.sh)"
		rel_log=$top/build/release-$suite.log
		rel_rc=0
		KH_RELEASE_LOGS=$top/build/release-$suite bash scripts/test-release.sh "$suite" \
			>"$rel_log" 2>&1 </dev/null || rel_rc=$?
		sed -n '/^test-release /,$p' "$rel_log"
		line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$rel_log" | tail -1 || true)
		if [ -n "$line" ]; then
			read -r p _ f _ sk _ <<<"$line"
			total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_skip=$((total_skip + sk))
		else
			tail -40 "$rel_log"
			echo "test-release $suite gave no tally (log: $rel_log)"
			total_fail=$((total_fail + 1))
		fi
		[ $rel_rc = 0 ] || { grep -E '^(FAIL|ERROR):|^not ok|Bail out' "$rel_log" | head -40 || true; rc=1; }
	fi
fi

step "processes the whole run left running"
leftovers "the whole run" || rc=1
step_end

echo
echo "time per step (total $(( ($(date +%s) - run_t0) / 60 )) min):"
printf '  %s\n' "${step_times[@]}"

echo
echo "tests: $total_pass passed, $total_fail failed, $total_skip skipped"
if [ "$total_skip" -gt 0 ] && [ "${CI:-}" = "true" ]; then
	echo "CI: no test may skip on this machine kind; failing" >&2
	rc=1
fi
exit $rc
