#!/bin/bash
# The long proofs, run on demand (CI runs a shorter version of each, see
# scripts/test.sh):
#   - pam_kubehsm.so loaded, used and unloaded 1000 times in one process
#     under valgrind: zero memory errors, zero definite leaks (~30 minutes
#     on a 2-core machine; CI runs 100 cycles);
#   - every libFuzzer target for FUZZ_SECONDS each (default 600; CI: 15);
#   - 20000 generated request streams through kubehsm-relayd to Go's
#     net/http, from a new seed each run: what the relay audited is what
#     the server served (tests/integration/relay/relay_diff.sh; CI: 240).
# Run as root on Debian 12; installs what it needs first.
#
#   scripts/long-proofs.sh [--cycles N] [--fuzz SECONDS] [--streams N] [--no-fuzz]
#                          [--no-valgrind] [--no-diff]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
cycles=1000 fuzz=600 streams=20000 do_fuzz=1 do_valgrind=1 do_diff=1
while [ $# -gt 0 ]; do
	case $1 in
	--cycles) cycles=$2; shift 2 ;;
	--fuzz) fuzz=$2; shift 2 ;;
	--streams) streams=$2; shift 2 ;;
	--no-diff) do_diff=0; shift ;;
	--no-fuzz) do_fuzz=0; shift ;;
	--no-valgrind) do_valgrind=0; shift ;;
	-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "long-proofs: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case $cycles$fuzz$streams in *[!0-9]*) echo "long-proofs: --cycles, --fuzz and --streams take numbers" >&2; exit 2 ;; esac

step() { printf '\n==> %s\n' "$*"; }
rc=0

step "installing Debian packages"
bash scripts/install-deps.sh

if [ $do_valgrind = 1 ]; then
	step "build, then $cycles PAM module cycles under valgrind (tests/integration/pam/pam_valgrind.sh)"
	autoreconf -fi >/dev/null
	dir=$top/build-proofs
	rm -rf "$dir"; mkdir -p "$dir"
	(cd "$dir" && "$top/configure" -q --enable-werror && make -s -j"$(nproc)") >"$dir.build.log" 2>&1 ||
		{ tail -30 "$dir.build.log"; echo "build failed (log: $dir.build.log)"; exit 1; }
	start=$(date +%s)
	(cd "$dir" && KH_PAM_MEMCHECK_CYCLES="$cycles" \
		make -s check TESTS=tests/integration/pam/pam_valgrind.sh) || rc=1
	grep -E '^(ok|not ok)' "$dir/tests/integration/pam/pam_valgrind.log" || true
	echo "valgrind cycles: $(( $(date +%s) - start )) s"
fi

if [ $do_fuzz = 1 ]; then
	step "fuzz each target for $fuzz s (scripts/fuzz.sh)"
	bash scripts/fuzz.sh "$fuzz" || rc=1
fi
if [ $do_diff = 1 ]; then
	seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
	step "$streams request streams (seed $seed) through the relay against Go's net/http (tests/integration/relay/relay_diff.sh)"
	dir=$top/build-proofs
	if ! [ -x "$dir/relay/kubehsm-relayd" ]; then
		autoreconf -fi >/dev/null
		mkdir -p "$dir"
		(cd "$dir" && "$top/configure" -q --enable-werror && make -s -j"$(nproc)") >"$dir.build.log" 2>&1 ||
			{ tail -30 "$dir.build.log"; echo "build failed (log: $dir.build.log)"; exit 1; }
	fi
	(cd "$dir" && KH_DIFF_STREAMS="$streams" KH_DIFF_SEED="$seed" \
		make -s check TESTS=tests/integration/relay/relay_diff.sh) || rc=1
	grep -E '^(ok|not ok|# streams|# stream )' "$dir/tests/integration/relay/relay_diff.log" || true
fi
exit $rc
