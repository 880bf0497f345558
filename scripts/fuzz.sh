#!/bin/bash
# scripts/fuzz.sh [SECONDS] — build and run kubehsm's libFuzzer targets.
#
# One target per input surface (tests/fuzz/fuzz_*.c): KUBERNETES_EXEC_INFO,
# the external signer's request argument (+ kh_sign_digest), the policy
# file, the keyring record decoder, certificate identity mapping, the
# relay's request heads and its control protocol, the forwarded token's
# wire, PKCS#11 URIs, opensc.conf (against OpenSC's own parser) and the
# users' kubeconfigs `kubehsm admin scan` reads as root.  Each
# is compiled with clang -fsanitize=fuzzer,address,undefined directly
# against the library sources (no configure needed; libs from pkg-config)
# and run for SECONDS (default 60) with -max_total_time on a fresh working
# corpus seeded from tests/fuzz/corpus/<target>/ (the checked-in seeds are
# only read, never written).  Prints total execs and execs/s per target and
# exits non-zero on any crash, leak, timeout or out-of-memory.
#
#   KH_FUZZ_DIR   build + work directory (default ${TMPDIR:-/tmp}/kubehsm-fuzz)
#   KH_FUZZ_TARGETS  space-separated subset of targets (default: all,
#                    every tests/fuzz/fuzz_*.c)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
dir=${KH_FUZZ_DIR:-${TMPDIR:-/tmp}/kubehsm-fuzz}
targets=${KH_FUZZ_TARGETS:-$(cd "$top/tests/fuzz" && ls fuzz_*.c | sed 's/\.c$//')}
CC=${FUZZ_CC:-clang}

command -v "$CC" >/dev/null || { echo "fuzz.sh: needs clang and its sanitizer runtimes: bash scripts/install-deps.sh" >&2; exit 1; }
mkdir -p "$dir/obj" "$dir/bin"

# config.h: the two definitions the library sources need from configure.
cat >"$dir/obj/config.h" <<'H'
#define _GNU_SOURCE 1
#define KH_RUNDIR "/run/kubehsm"
H

san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
pkgs="libp11 libcrypto libssl libconfig libkeyutils jansson p11-kit-1 yaml-0.1"
cflags="-g -O1 -std=gnu11 -Wall -Werror $san -I$dir/obj -I$top $(pkg-config --cflags $pkgs)"
libs="$(pkg-config --libs $pkgs) -lhttp_parser -ldl"
srcs="lib/kh_error.c lib/kh_error_ssl.c lib/kh_mem.c lib/kh_json.c lib/kh_dl.c
	lib/kh_json_doc.c lib/kh_exec_proto.c lib/kh_signer_proto.c lib/kh_base64.c lib/kh_sign.c
	lib/kh_x509.c lib/kh_pkcs11.c lib/kh_challenge.c lib/kh_pin_file.c lib/kh_p11_uri.c lib/kh_p11_raw.c lib/kh_p11_raw_key.c lib/kh_pcsc.c lib/kh_p11_ui.c
	lib/kh_token.c lib/kh_env.c lib/kh_opensc_conf.c lib/kh_words.c lib/kh_duration.c lib/kh_template.c
	$(cd "$top" && echo conf/kh_policy*.c) cache/kh_record.c cache/kh_cache_common.c cache/kh_cache_find.c cache/kh_keydesc.c
	lib/kh_relay_proto.c relay/kh_rhttp.c pam/kh_pam_forward_wire.c helper/kh_scan_yaml.c"

echo "==> building the fuzz targets in $dir"
objs=() pids=()
jobs=$(nproc 2>/dev/null || echo 2)
for s in $srcs; do   # compile in parallel, $jobs at a time
	o=$dir/obj/$(basename "$s" .c).o
	$CC $cflags -fsanitize=fuzzer-no-link -include "$dir/obj/config.h" -c "$top/$s" -o "$o" &
	pids+=($!); objs+=("$o")
	if [ ${#pids[@]} -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done
pids=()
for t in $targets; do
	$CC $cflags -fsanitize=fuzzer -include "$dir/obj/config.h" \
		"$top/tests/fuzz/$t.c" "${objs[@]}" $libs -o "$dir/bin/$t" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done

# The library keeps nothing global per input: every leak is a finding,
# except libconfig 1.5's own scanner leak (tests/fuzz/lsan.supp says why).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$top/tests/fuzz/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
rc=0
total=0
printf '\n%-22s %12s %10s  %s\n' target execs exec/s result
for t in $targets; do
	seed=$top/tests/fuzz/corpus/$t
	work=$dir/work/$t
	rm -rf "$work"; mkdir -p "$work" "$dir/artifacts/$t"
	log=$dir/$t.log
	res=ok
	# tests/fuzz/<target>.options: more libFuzzer flags, one a line (# comments).
	opts=()
	[ -f "$top/tests/fuzz/$t.options" ] && mapfile -t opts < <(grep -v '^ *\(#\|$\)' "$top/tests/fuzz/$t.options")
	"$dir/bin/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
		-print_final_stats=1 -artifact_prefix="$dir/artifacts/$t/" "${opts[@]}" \
		"$work" "$seed" >"$log" 2>&1 || res="FAILED (log: $log)"
	n=$(awk '/stat::number_of_executed_units/{print $NF}' "$log" | tail -1)
	s=$(awk '/stat::average_exec_per_sec/{print $NF}' "$log" | tail -1)
	if [ "$res" != ok ]; then
		rc=1
		# (|| true: a failure without such lines must still be reported)
		{ grep -aE 'ERROR: |SUMMARY: |runtime error|^fuzz_' "$log" || tail -3 "$log"; } |
			head -5 | sed 's/^/    /' || true
		{ ls "$dir/artifacts/$t/" || true; } | head -3 | sed "s|^|    artifact: $dir/artifacts/$t/|"
	fi
	printf '%-22s %12s %10s  %s\n' "$t" "${n:-?}" "${s:-?}" "$res"
	total=$((total + ${n:-0}))
done
echo "fuzz: $total executions in total, $secs s per target"
exit $rc
