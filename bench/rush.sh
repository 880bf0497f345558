#!/bin/bash
# bench/rush.sh — the morning rush (issue #30), as root: BENCH_USERS (40)
# logins released at the same moment, BENCH_ROUNDS (3) times, against a lone
# login of the same users.
#
# Each user has a SoftHSM2 token of their own (the users' store); the
# issuer's token is in a SoftHSM2 store of its own, served by its own copy
# of the module (issuer.module and issuer.env in the policy, as an issuer
# on another HSM is).  One login is `pamtester SERVICE USER authenticate
# open_session close_session`, PIN on stdin, pam_kubehsm with polkit off.
# The rush's logins wait at a FIFO until all are started, then open it
# together; each one's wall time is taken around its pamtester.  The
# module's syslog lines are caught (tests/probes/logcap, LD_PRELOAD) so a
# lost login says where it failed.
#
#   KH_BUILDDIR=DIR    the kubehsm build (default: ./build); its
#                      tests/probes/logcap is built when missing
#   BENCH_OUT=DIR      raw data (default /var/tmp/kubehsm-bench): DIR/rush/$BENCH_LABEL/
#   BENCH_USERS / BENCH_ROUNDS / BENCH_LONE (lone logins, default 10)
set -u
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export KH_SRCDIR=${KH_SRCDIR:-$(dirname "$BENCH")}
export KH_BUILDDIR=${KH_BUILDDIR:-$KH_SRCDIR/build}
NUSERS=${BENCH_USERS:-40}
ROUNDS=${BENCH_ROUNDS:-3}
LONE=${BENCH_LONE:-10}
LABEL=${BENCH_LABEL:-run}
[ "$(id -u)" -eq 0 ] || { echo "bench: run as root" >&2; exit 2; }
for c in pamtester softhsm2-util pkcs11-tool openssl /usr/bin/python3; do
	command -v "$c" >/dev/null 2>&1 || { echo "bench: needs '$c'" >&2; exit 2; }
done
[ -f "$KH_BUILDDIR/pam/.libs/pam_kubehsm.so" ] ||
	{ echo "bench: build first (no $KH_BUILDDIR/pam/.libs/pam_kubehsm.so)" >&2; exit 2; }
make -s -C "$KH_BUILDDIR" tests/probes/logcap/libkhlogcap.la >/dev/null 2>&1 || true

. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/logins.sh"
trap 'exit 130' INT TERM HUP
log() { echo "bench: $*" >&2; }
die() { echo "bench: FAILED: $*" >&2; exit 1; }

OUT=${BENCH_OUT:-/var/tmp/kubehsm-bench}/rush/$LABEL
case "$OUT/" in "$KH_SRCDIR"/*) die "BENCH_OUT inside the source tree ($OUT)" ;; esac
rm -rf "$OUT" && mkdir -p "$OUT" || die "cannot create $OUT"
{
	echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "users=$NUSERS"
	echo "rounds=$ROUNDS"
	echo "nproc=$(nproc)"
	echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "kubehsm_commit=$(git -C "$KH_SRCDIR" rev-parse --short HEAD 2>/dev/null)"
	echo "kubehsm_build=$KH_BUILDDIR"
	echo "kubehsm_build_srcdir=$(sed -n 's/^abs_top_srcdir = //p' "$KH_BUILDDIR/Makefile")"
} >"$OUT/machine.txt"

# --- PKI, the issuer's store and module copy, the users and their tokens -----------------------
PIN=4711 ISSUER_PIN=987654 HOST=khrushhost$$
pki_init && pki_ca users "kh bench users CA" && pki_ca issuerca "kh bench issuer CA" &&
	pki_user_cert issuer issuerca --ca-cert --cn "kubehsm issuer $HOST" || die "PKI"
(umask 077; printf '%s\n' "$ISSUER_PIN" >"$PKI_DIR/issuer.pin")
ISTORE=$KH_TMP/issuer-store
mkdir -p "$ISTORE/tokens" &&
	printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' \
		"$ISTORE/tokens" >"$ISTORE/softhsm2.conf" || die "issuer store"
SOFTHSM2_CONF=$ISTORE/softhsm2.conf pki_token_init "$HOST" "$ISSUER_PIN" &&
	SOFTHSM2_CONF=$ISTORE/softhsm2.conf pki_token_import "$HOST" "$ISSUER_PIN" issuer issuer 01 ||
	die "issuer token"
MODS=$KH_TMP/modules
mkdir -p -m 0755 "$MODS" && install -m 0644 "$PKI_MODULE" "$MODS/softhsm-issuer.so" ||
	die "issuer module copy"
CONF=$KH_TMP/etc/kubehsm.conf
pki_policy "$CONF" "$HOST" issuer_module="$MODS/softhsm-issuer.so" \
	issuer_env="SOFTHSM2_CONF = \"$ISTORE/softhsm2.conf\";" polkit=off || die "policy"
logins_pam kh-rush <<EOF
auth     required  $PAM_KUBEHSM config=$CONF
account  required  pam_permit.so
session  required  $PAM_KUBEHSM config=$CONF
EOF
printf '%s\n' "$PIN" >"$KH_TMP/pin"; chmod 0600 "$KH_TMP/pin"
USERS=()
letters=abcdefghijklmnopqrstuvwxyz
log "$NUSERS users with a token each"
for ((i = 0; i < NUSERS; i++)); do
	v=rush${letters:$((i / 26)):1}${letters:$((i % 26)):1}
	make_user "$v"
	u=${!v}
	pki_user_cert "$u" users --cn "$u" --o dev && pki_token_init "$u" "$PIN" &&
		pki_token_import "$u" "$PIN" "$u" kube 01 || die "token of $u"
	USERS+=("$u")
done

CAP=()
[ -f "$KH_LOGCAP" ] && CAP=(env LD_PRELOAD="$KH_LOGCAP" KH_LOGCAP_FILE="$OUT/module.log")
one_login() {   # one_login USER OUTFILE: "user rc ms" on stdout
	local t0 t1 rc
	t0=$(date +%s%N)
	"${CAP[@]}" pamtester kh-rush "$1" authenticate open_session close_session \
		<"$KH_TMP/pin" >"$2" 2>&1
	rc=$?
	t1=$(date +%s%N)
	echo "$1 $rc $(( (t1 - t0) / 1000 ))"
}

# Every user logs in once alone (checks the set-up), then LONE lone logins.
for u in "${USERS[@]}"; do
	one_login "$u" "$KH_TMP/check.out" | awk '$2 != 0 { exit 1 }' ||
		die "lone login of $u: $(cat "$KH_TMP/check.out")"
done
: >"$OUT/lone.txt"
for ((i = 0; i < LONE; i++)); do
	one_login "${USERS[$((i % NUSERS))]}" "$KH_TMP/lone.out" >>"$OUT/lone.txt"
done

# --- the rush ---------------------------------------------------------------------------------------
: >"$OUT/rush.txt"
for ((r = 0; r < ROUNDS; r++)); do
	fifo=$KH_TMP/go.$r
	mkfifo "$fifo" || die "mkfifo"
	pids=()
	for u in "${USERS[@]}"; do
		(read -r _ <"$fifo"; one_login "$u" "$OUT/r$r-$u.out" >"$KH_TMP/r$r-$u.res") &
		pids+=($!)
	done
	sleep 2   # every login waiting at the FIFO
	log "round $r: releasing $NUSERS logins"
	t0=$(date +%s%N)
	echo go >"$fifo"   # one writer: every reader's open returns, the first read gets it, the rest EOF
	wait "${pids[@]}"
	echo "round=$r wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))" >>"$OUT/machine.txt"
	for u in "${USERS[@]}"; do sed "s/^/round=$r /" "$KH_TMP/r$r-$u.res" >>"$OUT/rush.txt"; done
	rm -f "$fifo"
done
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
/usr/bin/python3 - "$OUT" <<'PY'
import os, statistics, sys
out = sys.argv[1]
def rows(path):
    return [line.split() for line in open(os.path.join(out, path)) if line.strip()]
lone = [int(r[2]) / 1000 for r in rows("lone.txt") if r[1] == "0"]
rush = rows("rush.txt")
ok = sorted(int(r[3]) / 1000 for r in rush if r[2] == "0")
lost = [r for r in rush if r[2] != "0"]
# Where a lost login stopped: pamtester names the failing step.
where = {"auth": 0, "open_session": 0, "other": 0}
for r in lost:
    text = open(os.path.join(out, "%s-%s.out" % (r[0].replace("round=", "r"), r[1]))).read()
    if "successfully authenticated" not in text:
        where["auth"] += 1
    elif "successfully opened a session" not in text:
        where["open_session"] += 1
    else:
        where["other"] += 1
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, round(p / 100 * len(v) + 0.5) - 1))]
with open(os.path.join(out, "summary.txt"), "w") as f:
    f.write("lone_n=%d lone_p50_ms=%.1f\n" % (len(lone), statistics.median(lone)))
    f.write("rush_n=%d rush_ok=%d rush_lost=%d lost_auth=%d lost_open_session=%d lost_other=%d\n" %
            (len(rush), len(ok), len(lost), where["auth"], where["open_session"], where["other"]))
    if ok:
        f.write("rush_p50_ms=%.1f rush_p99_ms=%.1f rush_max_ms=%.1f\n" %
                (statistics.median(ok), pct(ok, 99), ok[-1]))
print(open(os.path.join(out, "summary.txt")).read(), end="")
PY
log "done: $OUT/summary.txt"
