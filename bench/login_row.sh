#!/bin/bash
# bench/login_row.sh [--quick] — the login row (issues #8 and #24), as root.
#
# `pamtester SERVICE USER authenticate open_session close_session`, PIN on
# stdin, through four PAM modules on the same SoftHSM token of the same user,
# interleaved in one run:
#   kubehsm   pam_kubehsm, the policy as shipped (polkit.mode "if-available",
#             scope user, revoke_on_logout)
#   pam_p11   Debian's libpam-p11 (authentication only: it has no session)
#   floor     bench/floor/pam_floor.c: pam_kubehsm's whole job with raw
#             PKCS#11 and nothing else; its keyring calls as the user run in
#             a vfork child on the module's own memory
#   floorx    the same module as pam_kubehsm's design and shipped policy
#             ask: its keyring calls in a program of its own
#             (bench/floor/keyring_floor.c, spawned and waited for with a
#             deadline) and, when a system bus is there, a polkit check
#             through libpolkit-gobject-1 (bench/floor/floor_polkit.c): the
#             floor of the design
# each under two conditions of the host:
#   nopolkit  no system bus and no polkitd (/run/dbus empty: a tmpfs over
#             it in a mount namespace of the measurement's own)
#   polkit    a system bus at /run/dbus/system_bus_socket with polkitd on it
#             (tests/harness/polkit.sh), the kubehsm actions installed
# Neither condition exports DBUS_SYSTEM_BUS_ADDRESS, as on a real host.
#
# Each round runs one hyperfine invocation per condition (conditions and
# commands rotated from round to round), RUNS runs each after WARMUP
# warm-ups.  Reported: medians, kubehsm ÷ pam_p11 and kubehsm ÷ floor per
# condition (pooled, and the min-max of the per-round ratios).
#
# The breakdown comes from the modules themselves: services with the module
# option timing=FILE (bench/TIMING.md) make each entry point append one line
# of step durations; RUNS such logins per module, condition and round, apart
# from the timed runs.  pam_floor implements the hook; pam_kubehsm is asked
# whether it does (a module that refuses the option is reported as such).
# Syscalls per login: strace -c -f, STRACE_N logins per module and condition.
#
#   KH_BUILDDIR=DIR    the kubehsm build (default: ./build)
#   BENCH_OUT=DIR      raw data (default /var/tmp/kubehsm-bench); this
#                      script writes DIR/login-row/ — never the source tree
#   BENCH_ROUNDS / BENCH_RUNS / BENCH_WARMUP / BENCH_STRACE_N
#
# Output: the login section of bench/RESULTS.md (bench/login_report.py) and
# the raw data in $BENCH_OUT/login-row/.  Everything it creates (users,
# tokens, services, the bus and polkitd it started) goes at exit.
set -u
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export KH_SRCDIR=${KH_SRCDIR:-$(dirname "$BENCH")}
export KH_BUILDDIR=${KH_BUILDDIR:-$KH_SRCDIR/build}
QUICK=0
case "${1:-}" in
--quick) QUICK=1 ;;
"") ;;
*) echo "usage: $0 [--quick]" >&2; exit 2 ;;
esac
if [ $QUICK = 1 ]; then
	ROUNDS=${BENCH_ROUNDS:-3} RUNS=${BENCH_RUNS:-5} WARMUP=${BENCH_WARMUP:-2}
	STRACE_N=${BENCH_STRACE_N:-3} MODE=quick
else
	ROUNDS=${BENCH_ROUNDS:-10} RUNS=${BENCH_RUNS:-15} WARMUP=${BENCH_WARMUP:-3}
	STRACE_N=${BENCH_STRACE_N:-5} MODE=full
fi
PAM_P11=/lib/x86_64-linux-gnu/security/pam_p11.so
[ "$(id -u)" -eq 0 ] || { echo "bench: run as root (users, tokens, PAM services, polkitd)" >&2; exit 2; }
for c in hyperfine pamtester strace unshare softhsm2-util pkcs11-tool keyctl openssl \
	dbus-daemon pkcheck pkg-config cc /usr/bin/python3; do
	command -v "$c" >/dev/null 2>&1 || { echo "bench: needs '$c'" >&2; exit 2; }
done
[ -e "$PAM_P11" ] || { echo "bench: needs $PAM_P11 (apt-get install libpam-p11)" >&2; exit 2; }
[ -f "$KH_BUILDDIR/pam/.libs/pam_kubehsm.so" ] ||
	{ echo "bench: build first (no $KH_BUILDDIR/pam/.libs/pam_kubehsm.so)" >&2; exit 2; }

# The harness; logins.sh re-executes this script in a private mount namespace.
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/logins.sh"
. "$KH_SRCDIR/tests/harness/polkit.sh"
trap 'exit 130' INT TERM HUP
log() { echo "bench: $*" >&2; }
die() { echo "bench: FAILED: $*" >&2; exit 1; }

OUT=${BENCH_OUT:-/var/tmp/kubehsm-bench}/login-row
case "$OUT/" in "$KH_SRCDIR"/bench/results/*) ;; "$KH_SRCDIR"/*)
	die "BENCH_OUT inside the source tree ($OUT): raw data stays out of the repository" ;;
esac
RAW=$OUT/raw
rm -rf "$OUT" && mkdir -p "$RAW" "$OUT/strace" || die "cannot create $OUT"
{
	echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf "mode=%s\nrounds=%s\nruns_per_round=%s\nwarmup=%s\nstrace_logins=%s\n" \
		"$MODE" "$ROUNDS" "$RUNS" "$WARMUP" "$STRACE_N"
	echo "nproc=$(nproc)"
	echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "kernel=$(uname -srm)"
	echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "hyperfine=$(hyperfine --version | cut -d' ' -f2)"
	echo "pam_p11=$(dpkg-query -W -f '${Version}' libpam-p11 2>/dev/null)"
	echo "softhsm=$(dpkg-query -W -f '${Version}' softhsm2 2>/dev/null)"
	echo "kubehsm_commit=$(git -C "$KH_SRCDIR" rev-parse --short HEAD 2>/dev/null)"
	echo "kubehsm_build=$KH_BUILDDIR"
} >"$OUT/machine.txt"

# --- the floor module ---------------------------------------------------------------
FLOOR_DIR=$KH_TMP/floor
mkdir -p -m 0755 "$FLOOR_DIR"
make -s -C "$BENCH" -f floor.mk OUT="$FLOOR_DIR" "$FLOOR_DIR/pam_floor.so" \
	"$FLOOR_DIR/keyring_floor" "$FLOOR_DIR/floor_polkit.so" >/dev/null ||
	die "building bench/floor/pam_floor.c, keyring_floor.c, floor_polkit.c"
PAM_FLOOR=$FLOOR_DIR/pam_floor.so

# --- PKI, tokens, the user, the policy as shipped --------------------------------------------
PIN=4711 ISSUER_PIN=987654 HOST=khrowhost$$
pki_init && pki_ca users "kh bench users CA" && pki_ca issuerca "kh bench issuer CA" &&
	pki_issuer_token "$HOST" "$ISSUER_PIN" issuerca || die "PKI / issuer token"
chmod 0600 "$PKI_DIR/issuer.pin"
make_user bench
U=$bench
UHOME=$(getent passwd "$U" | cut -d: -f6)
pki_user_cert "$U" users --cn "$U" --o dev --o ops && pki_token_init "$U" "$PIN" &&
	pki_token_import "$U" "$PIN" "$U" kube 01 || die "user token"
# SoftHSM's slot order follows its token directories' random names: pam_p11
# looks at every token in slot order until it finds the user's certificate,
# so it does more when the issuer's token comes first.  Recorded, not fixed.
first=$(pki_p11tool -L 2>/dev/null | sed -n 's/^ *token label *: *//p' | head -n 1)
echo "first_slot=$([ "$first" = "$U" ] && echo user || echo issuer)" >>"$OUT/machine.txt"
CONF=$KH_TMP/etc/kubehsm.conf
pki_policy "$CONF" "$HOST" polkit=if-available || die "policy"
printf '%s\n' "$PIN" >"$KH_TMP/pin"; chmod 0600 "$KH_TMP/pin"
# pam_p11 (0.3): the certificates the user may log in with, in ~/.eid.
install -d -o "$U" -m 0755 "$UHOME/.eid"
install -o "$U" -m 0644 "$PKI_DIR/$U.pem" "$UHOME/.eid/authorized_certificates"

# --- the PAM services (a private /etc/pam.d) -----------------------------------------------------
TIMING=$OUT/timing.log
FLOOR_OPTS="module=$PKI_MODULE ca=$PKI_DIR/users.pem key_label=kube issuer_token=$HOST \
issuer_key=issuer issuer_cert=$PKI_DIR/issuer.pem issuer_pin_file=$PKI_DIR/issuer.pin ttl=3600"
service() {   # service NAME AUTH-LINE-MODULE-AND-ARGS [SESSION-MODULE-AND-ARGS]
	logins_pam "$1" <<-EOF
	auth     required $2
	account  required pam_permit.so
	session  required ${3:-pam_permit.so}
	EOF
}
service kh-row-kubehsm "$PAM_KUBEHSM config=$CONF" "$PAM_KUBEHSM config=$CONF"
service kh-row-p11 "$PAM_P11 $PKI_MODULE"   # pam_p11 0.3 has no session work (its hooks fail)
service kh-row-floor "$PAM_FLOOR $FLOOR_OPTS" "$PAM_FLOOR $FLOOR_OPTS"
FLOORX_OPTS="$FLOOR_OPTS keyring_helper=$FLOOR_DIR/keyring_floor polkit=$FLOOR_DIR/floor_polkit.so"
service kh-row-floorx "$PAM_FLOOR $FLOORX_OPTS" "$PAM_FLOOR $FLOORX_OPTS"
service kh-row-kubehsm-t "$PAM_KUBEHSM config=$CONF timing=$TIMING" \
	"$PAM_KUBEHSM config=$CONF timing=$TIMING"
service kh-row-floor-t "$PAM_FLOOR $FLOOR_OPTS timing=$TIMING" "$PAM_FLOOR $FLOOR_OPTS timing=$TIMING"
service kh-row-floorx-t "$PAM_FLOOR $FLOORX_OPTS timing=$TIMING" \
	"$PAM_FLOOR $FLOORX_OPTS timing=$TIMING"
declare -A SVC=([kubehsm]=kh-row-kubehsm [pam_p11]=kh-row-p11 [floor]=kh-row-floor
	[floorx]=kh-row-floorx)
MODULES=(kubehsm pam_p11 floor floorx)
login_cmd() { echo "pamtester ${SVC[$1]} $U authenticate open_session close_session <$KH_TMP/pin"; }

# --- the two conditions ------------------------------------------------------------------------
# This namespace gets a /run/dbus of its own, where the polkit condition's bus
# lives; `in_cond nopolkit` hides it under another empty tmpfs in a nested
# namespace.  Real buses and polkitds of the machine are never seen or touched.
mkdir -p /run/dbus && mount -t tmpfs -o mode=0755,size=1m kh-row-dbus /run/dbus ||
	die "cannot mount a private /run/dbus"
polkit_start --system || die "cannot start a system bus and polkitd"
[ "$POLKITD_OURS" = 1 ] || die "a polkitd this script did not start answers on the private bus"
unset DBUS_SYSTEM_BUS_ADDRESS
in_cond() {   # in_cond nopolkit|polkit CMD...
	local cond=$1; shift
	if [ "$cond" = polkit ]; then
		"$@"
	else
		unshare --mount --propagation private -- /bin/sh -c \
			'mount -t tmpfs -o mode=0755,size=1m kh-row-nobus /run/dbus && exec "$@"' - "$@"
	fi
}
CONDS=(nopolkit polkit)

# Each module logs in under each condition, and the three that mint store a
# record (add_key, then the user's KEYCTL_LINK) and end it at close_session
# (KEYCTL_INVALIDATE or REVOKE), as strace sees them: pam_kubehsm and floorx
# through the helper program they execute, floor in a vfork child without
# one.  pam_kubehsm's and floorx's polkit clients find no bus, or connect to
# it, as the condition says.  (A login left open here would leave
# pam_kubehsm's login count up, and every login measured after it would keep
# the record at close instead of revoking it.)
check_login() {   # check_login COND MODULE
	local cond=$1 m=$2 f=$OUT/strace/check-$2-$1.txt desc serial helper n
	in_cond "$cond" strace -f -qq -e trace=add_key,keyctl,connect,execve -o "$f" \
		sh -c "$(login_cmd "$m")" >"$KH_TMP/check.out" 2>&1 ||
		die "$m login under $cond: $(cat "$KH_TMP/check.out")"
	case $m in
	kubehsm) desc=kubehsm:session:v1 helper=kubehsm-keyops ;;
	floor) desc=kubehsm-floor:session:v1 helper= ;;
	floorx) desc=kubehsm-floor:session:v1 helper=keyring_floor ;;
	*) return 0 ;;
	esac
	n=$(grep -Ec "execve\(\"[^\"]*/(${helper:-kubehsm-keyops|keyring_floor})\"" "$f")
	if [ -n "$helper" ]; then
		[ "$n" -ge 2 ] || die "$m under $cond: $helper executed $n times, not at store and close (strace: $f)"
	else
		[ "$n" = 0 ] || die "$m under $cond: a keyring helper was executed (strace: $f)"
	fi
	serial=$(sed -n "s/.*add_key(\"user\", \"$desc\".* = \([0-9][0-9]*\)\$/\1/p" "$f" | tail -n 1)
	[ -n "$serial" ] || die "$m under $cond: no add_key of $desc (strace: $f)"
	grep -Eq "keyctl\(KEYCTL_LINK, $serial, .*\) = 0\$" "$f" ||
		die "$m under $cond: record $serial not linked into the user's keyring (strace: $f)"
	grep -Eq "keyctl\(KEYCTL_(INVALIDATE|REVOKE), $serial\) = 0\$" "$f" ||
		die "$m under $cond: record $serial not ended at close_session (strace: $f)"
}
for cond in "${CONDS[@]}"; do
	for m in "${MODULES[@]}"; do check_login "$cond" "$m"; done
	for m in kubehsm floorx; do
		f=$OUT/strace/check-$m-$cond.txt
		bus=$(grep -c 'system_bus_socket.*= 0$' "$f")
		enoent=$(grep -c 'system_bus_socket.*ENOENT' "$f")
		echo "connect_bus_${m}_$cond=ok:$bus,enoent:$enoent" >>"$OUT/machine.txt"
		[ "$cond" = polkit ] && [ "$bus" = 0 ] && die "under 'polkit' $m did not reach the system bus"
		[ "$cond" = nopolkit ] && [ "$bus" != 0 ] && die "under 'nopolkit' a system bus answered $m"
	done
done

# Does pam_kubehsm take the timing option?  (bench/TIMING.md; until it does,
# it refuses the unknown option and only the floor has a breakdown.)
: >"$TIMING"
if sh -c "pamtester kh-row-kubehsm-t $U authenticate open_session close_session <$KH_TMP/pin" \
	>/dev/null 2>&1 && grep -q 'module=pam_kubehsm' "$TIMING"; then
	KH_TIMING=1
else
	KH_TIMING=0
	log "pam_kubehsm has no timing hook yet (bench/TIMING.md): breakdown for the floor only"
fi
echo "kubehsm_timing=$KH_TIMING" >>"$OUT/machine.txt"
: >"$TIMING"

# --- measuring ------------------------------------------------------------------------------------
for ((r = 0; r < ROUNDS; r++)); do
	for ((c = 0; c < ${#CONDS[@]}; c++)); do
		cond=${CONDS[$(((c + r) % ${#CONDS[@]}))]}
		args=()
		for ((i = 0; i < ${#MODULES[@]}; i++)); do
			m=${MODULES[$(((i + r) % ${#MODULES[@]}))]}
			args+=(-n "$m" "$(login_cmd "$m")")
		done
		log "round $r, $cond: ${#MODULES[@]} modules x $RUNS logins"
		in_cond "$cond" hyperfine --style none --warmup "$WARMUP" --runs "$RUNS" \
			--export-json "$RAW/login-$cond.r$r.json" "${args[@]}" >/dev/null ||
			die "hyperfine, round $r, $cond"
		# The modules' own step timings, apart from the timed runs.
		tm=(floor floorx)
		[ $KH_TIMING = 1 ] && tm=(kubehsm floor floorx)
		for ((i = 0; i < RUNS; i++)); do
			for m in "${tm[@]}"; do
				echo "# cond=$cond round=$r" >>"$TIMING"
				in_cond "$cond" sh -c "pamtester ${SVC[$m]}-t $U authenticate open_session close_session <$KH_TMP/pin" \
					>/dev/null 2>&1 || die "timed login through $m under $cond"
			done
		done
	done
done

# System calls per login: strace -c -f (every process of the login).
log "syscalls: $STRACE_N logins per module and condition"
for ((i = 0; i < STRACE_N; i++)); do
	for cond in "${CONDS[@]}"; do
		for m in "${MODULES[@]}"; do
			in_cond "$cond" strace -c -f -o "$OUT/strace/$m-$cond.$i.txt" \
				sh -c "$(login_cmd "$m")" >/dev/null 2>&1 || die "strace -c of $m under $cond"
		done
	done
done
# The shell strace starts (sh -c, for the redirection) is not the login's.
for ((i = 0; i < STRACE_N; i++)); do
	strace -c -f -o "$OUT/strace/shell.$i.txt" sh -c "true <$KH_TMP/pin" >/dev/null 2>&1
done

echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
/usr/bin/python3 "$BENCH/login_report.py" "$BENCH" "$OUT" || die "report"
log "done: the login section of $BENCH/RESULTS.md; raw data in $OUT/"
