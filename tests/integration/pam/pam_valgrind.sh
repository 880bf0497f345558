#!/bin/bash
# pam_valgrind: pam_kubehsm.so loaded, used and unloaded many times in one
# process (tests/probes/pam_driver: pam_start, authenticate, open_session,
# close_session, pam_end per cycle; libpam dlopens the module at pam_start
# and dlcloses it at pam_end), under pam_wrapper with real SoftHSM2 tokens.
#
# Under valgrind one cycle costs ~2 s here (SoftHSM load, C_Login, mint),
# so 1000 valgrind cycles would take over half an hour.  Instead:
#   - 1000 cycles natively: all succeed, and VmRSS grows by less than
#     2 MiB between cycle 100 and cycle 1000 (in a sanitizer build, where
#     ASan's bookkeeping grows with each load, LeakSanitizer must instead
#     find no leak at exit);
#   - KH_PAM_MEMCHECK_CYCLES (default 100) cycles under `memcheck`
#     (tests/harness/tap.sh): valgrind in a normal build — zero errors, zero
#     definitely lost blocks; natively with ASan/LeakSanitizer in a
#     sanitizer build — no error report, no leak.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/integration/pam/pam_common.sh"

need_root
need_cmd softhsm2-util pkcs11-tool openssl keyctl jq setpriv timeout
DRIVER=$KH_BUILDDIR/tests/probes/pam_driver
[ -x "$DRIVER" ] && [ -f "$PAM_KUBEHSM" ] || skip_all "module or tests/probes/pam_driver not built"
WRAPPER=$(ldconfig -p | awk '/libpam_wrapper.so / { print $NF; exit }')
[ -n "$WRAPPER" ] || skip_all "needs libpam_wrapper.so (libpam-wrapper)"
[ "${KH_SANITIZERS:-0}" = 1 ] || need_cmd valgrind
PRELOAD=$WRAPPER
if nm -D "$PAM_KUBEHSM" 2>/dev/null | grep -q __asan_init; then
	PRELOAD="$(gcc -print-file-name=libasan.so) $WRAPPER"   # ASan must come first
fi
CYCLES=1000
RSS_AT=100
MEMCHECK_CYCLES=${KH_PAM_MEMCHECK_CYCLES:-100}
# In a sanitizer build libasan is preloaded ahead of pam_wrapper;
# the native run keeps ASan's quarantine small so VmRSS means something.
NATIVE_ASAN=quarantine_size_mb=1:detect_leaks=0
SAN=0
if [ "${KH_SANITIZERS:-0}" = 1 ] || nm -D "$PAM_KUBEHSM" 2>/dev/null | grep -q __asan_init; then
	# VmRSS is no measure under ASan (its stack depot grows with every new
	# load address of the module); LeakSanitizer at exit is.
	SAN=1
	NATIVE_ASAN=detect_leaks=1:exitcode=99
fi

pam_common_setup || { echo "Bail out! set-up"; exit 1; }
SVCDIR=$KH_TMP/pam.d
mkdir "$SVCDIR"
pam_service "$SVCDIR/kubehsm"
echo "auth required pam_deny.so" >"$SVCDIR/other"

# drive N: N login cycles in one driver process (under the caller's wrapper).
drive() {
	LD_PRELOAD="$PRELOAD" PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$SVCDIR" KH_PIN="$PIN" \
		"$@"
}
native_cycles() {
	KH_RSS_AT=$RSS_AT ASAN_OPTIONS=$NATIVE_ASAN drive timeout 600 \
		"$DRIVER" kubehsm "$ALICE" "$1" authenticate open_session close_session
}
memcheck_cycles() {
	# ~1.7 s a cycle under valgrind: allow 4 s a cycle, at least 15 minutes.
	KH_MEMCHECK_LOG=$KH_TMP/memcheck.log \
	KH_MEMCHECK_TIMEOUT=$(( $1 * 4 > 900 ? $1 * 4 : 900 )) drive memcheck \
		"$DRIVER" kubehsm "$ALICE" "$1" authenticate open_session close_session
}

plan 6

t0=$(date +%s)
run native_cycles $CYCLES
t1=$(date +%s)
is "$rc" 0 "$CYCLES native load/use/unload cycles all succeed ($((t1 - t0)) s)"
[ $rc -eq 0 ] || diag "$out" "$err"
read -r _ a kb_a n kb_n <<<"$out"
diag "VmRSS: ${kb_a:-?} kB after cycle ${a:-?}, ${kb_n:-?} kB after cycle ${n:-?}"
if [ $SAN = 1 ]; then
	[ "$rc" = 0 ] && ! grep -Eq "LeakSanitizer|==[0-9]+==ERROR" <<<"$err"
	ok $? "sanitizer build: LeakSanitizer finds no leak after $CYCLES cycles (VmRSS not meaningful under ASan)"
else
	[ "${n:-}" = "$CYCLES" ] && [ "${kb_a:--1}" -gt 0 ] && [ "${kb_n:--1}" -gt 0 ] &&
		[ $((kb_n - kb_a)) -lt 2048 ]
	ok $? "VmRSS grows by less than 2 MiB from cycle $RSS_AT to cycle $CYCLES"
fi
is "$(pam_record "$ALICE")" "" "after the last close_session no record is left"

t0=$(date +%s)
run memcheck_cycles "$MEMCHECK_CYCLES"
t1=$(date +%s)
MC_ERR=$err$(cat "$KH_TMP"/memcheck.log* 2>/dev/null)
is "$rc" 0 "$MEMCHECK_CYCLES cycles under memcheck: all succeed, no memory error, no definite leak ($((t1 - t0)) s)"
# On failure: the driver's failing step (stdout) and the checker's report.
[ $rc -eq 0 ] || diag "driver: $out" "$(grep -v PWRAP <<<"$MC_ERR" | tail -80)"
unlike "$MC_ERR" "definitely lost|ERROR SUMMARY: [1-9]|==[0-9]+==ERROR|LeakSanitizer|AddressSanitizer|ASan" \
	"memcheck reports nothing"
is "$(pam_record "$ALICE")" "" "after the memcheck cycles no record is left"
