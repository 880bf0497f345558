#!/bin/bash
# bench/issuer.sh [--quick] — the issuer on a crowded, distant HSM (issue #30),
# as root.
#
# One login is `pamtester SERVICE USER authenticate open_session close_session`,
# PIN on stdin, polkit off, through pam_kubehsm (the shipped policy's exec
# delivery) and through bench/floor/pam_floor.c doing the same job in raw
# PKCS#11 (find by label, sign), on the same user token, interleaved.
# Every PKCS#11 module of a login is bench/floor/p11pass.c, a pass-through
# that counts and times every call per function and may delay each one:
#   users    p11pass -> SoftHSM2 (the users' store)
#   issuer   p11pass -> a copy of SoftHSM2 on a store of its own whose only
#            token holds the issuer key and N other objects (N/2 EC P-256 key
#            pairs, bench/floor/p11fill.c), as a partition of a shared HSM
# Sizes N (BENCH_SIZES, default "10 1000 10000"), delays per call 0 and
# 1000 µs (BENCH_DELAYS).  Measured:
#   counts   PKCS#11 calls per login to each module, per function (3 logins)
#   timing   hyperfine, pam_kubehsm and the floor in one invocation per
#            round, order rotated; a login that would take longer than
#            BENCH_CAP_S (default 4 s: its fastest counted login at delay 0
#            plus its calls × the delay) is not timed, and the estimate is
#            reported instead
#   network  the issuer's token (the smallest size) served by `p11-kit server`;
#            the issuer module is p11pass -> p11-kit-client.so; between them
#            bench/floor/hsm_link.c carries the RPC over TCP between two
#            network namespaces of this script's own (veth, private
#            addresses), 500 µs each way (a 1 ms round trip: the kernel here
#            has no sch_netem, so the delay is the relay's); p11pass's
#            per-function times split the issuer's share of a login into
#            set-up, lookup and signature
#
#   KH_BUILDDIR=DIR    the kubehsm build (default: ./build)
#   BENCH_OUT=DIR      raw data (default /var/tmp/kubehsm-bench); this script
#                      writes DIR/issuer/$BENCH_LABEL/ (BENCH_LABEL default
#                      "run") — never the source tree
#   BENCH_ROUNDS / BENCH_RUNS / BENCH_WARMUP / BENCH_SIZES / BENCH_DELAYS /
#   BENCH_CAP_S / BENCH_NET (0: no network part)
#
# Token stores live on a tmpfs of the script's own mount namespace: SoftHSM2
# writes one file per object, and on this machine's disk filling 10,000
# objects takes a quarter of an hour instead of seconds.  Output: the
# summary in $OUT (bench/issuer_report.py makes the RESULTS.md section).
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
	ROUNDS=${BENCH_ROUNDS:-2} RUNS=${BENCH_RUNS:-3} WARMUP=${BENCH_WARMUP:-1}
else
	ROUNDS=${BENCH_ROUNDS:-3} RUNS=${BENCH_RUNS:-5} WARMUP=${BENCH_WARMUP:-1}
fi
SIZES=${BENCH_SIZES:-10 1000 10000}
DELAYS=${BENCH_DELAYS:-0 1000}
CAP_S=${BENCH_CAP_S:-4}
NET=${BENCH_NET:-1}
LABEL=${BENCH_LABEL:-run}
[ "$(id -u)" -eq 0 ] || { echo "bench: run as root (users, tokens, PAM services, namespaces)" >&2; exit 2; }
for c in hyperfine pamtester softhsm2-util pkcs11-tool openssl p11-kit ip unshare \
	pkg-config cc /usr/bin/python3; do
	command -v "$c" >/dev/null 2>&1 || { echo "bench: needs '$c'" >&2; exit 2; }
done
P11KIT_CLIENT=$(pkg-config --variable=p11_module_path p11-kit-1 2>/dev/null)/p11-kit-client.so
[ -f "$KH_BUILDDIR/pam/.libs/pam_kubehsm.so" ] ||
	{ echo "bench: build first (no $KH_BUILDDIR/pam/.libs/pam_kubehsm.so)" >&2; exit 2; }

# The harness; logins.sh re-executes this script in a private mount namespace.
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/logins.sh"
trap 'exit 130' INT TERM HUP
log() { echo "bench: $*" >&2; }
die() { echo "bench: FAILED: $*" >&2; exit 1; }

OUT=${BENCH_OUT:-/var/tmp/kubehsm-bench}/issuer/$LABEL
case "$OUT/" in "$KH_SRCDIR"/*) die "BENCH_OUT inside the source tree ($OUT)" ;; esac
rm -rf "$OUT" && mkdir -p "$OUT/raw" "$OUT/counts" || die "cannot create $OUT"
{
	echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf "rounds=%s\nruns_per_round=%s\nwarmup=%s\nsizes=%s\ndelays=%s\ncap_s=%s\n" \
		"$ROUNDS" "$RUNS" "$WARMUP" "$SIZES" "$DELAYS" "$CAP_S"
	echo "nproc=$(nproc)"
	echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "kernel=$(uname -srm)"
	echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "softhsm=$(dpkg-query -W -f '${Version}' softhsm2 2>/dev/null)"
	echo "p11kit=$(dpkg-query -W -f '${Version}' p11-kit 2>/dev/null)"
	echo "libp11=$(dpkg-query -W -f '${Version}' libp11-3 libp11-3t64 2>/dev/null)"
	echo "kubehsm_commit=$(git -C "$KH_SRCDIR" rev-parse --short HEAD 2>/dev/null)"
	echo "kubehsm_build=$KH_BUILDDIR"
	echo "kubehsm_build_srcdir=$(sed -n 's/^abs_top_srcdir = //p' "$KH_BUILDDIR/Makefile")"
} >"$OUT/machine.txt"

# --- the bench's programs, the stores' tmpfs ---------------------------------------------
STORE=$KH_TMP/store
mkdir -p -m 0755 "$STORE" && mount -t tmpfs -o mode=0755,size=2g kh-bench-store "$STORE" ||
	die "cannot mount a tmpfs for the token stores"
on_exit "umount -l $STORE"
TOOLS=$STORE/tools
mkdir -p -m 0755 "$TOOLS"
make -s -C "$BENCH" -f floor.mk OUT="$TOOLS" "$TOOLS/pam_floor.so" "$TOOLS/p11pass.so" \
	"$TOOLS/p11fill" "$TOOLS/hsm_link" >/dev/null || die "building bench/floor"

# --- PKI, the user's token, the issuer's stores ----------------------------------------------
PIN=4711 ISSUER_PIN=987654 HOST=khisshost$$
pki_init "$STORE/pki" && pki_ca users "kh bench users CA" && pki_ca issuerca "kh bench issuer CA" &&
	pki_user_cert issuer issuerca --ca-cert --cn "kubehsm issuer $HOST" || die "PKI"
(umask 077; printf '%s\n' "$ISSUER_PIN" >"$PKI_DIR/issuer.pin")
make_user bench
U=$bench
pki_user_cert "$U" users --cn "$U" --o dev --o ops && pki_token_init "$U" "$PIN" &&
	pki_token_import "$U" "$PIN" "$U" kube 01 || die "user token"
printf '%s\n' "$PIN" >"$KH_TMP/pin"; chmod 0600 "$KH_TMP/pin"
USERS_CONF=$SOFTHSM2_CONF

issuer_store() {   # issuer_store N: a store whose one token holds the issuer and N others
	local n=$1 d=$STORE/issuer-$1 t0
	mkdir -p "$d/tokens" &&
		printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' \
			"$d/tokens" >"$d/softhsm2.conf" || return 1
	SOFTHSM2_CONF=$d/softhsm2.conf pki_token_init "$HOST" "$ISSUER_PIN" &&
		SOFTHSM2_CONF=$d/softhsm2.conf pki_token_import "$HOST" "$ISSUER_PIN" issuer issuer 01 ||
		return 1
	t0=$(date +%s.%N)
	SOFTHSM2_CONF=$d/softhsm2.conf "$TOOLS/p11fill" "$PKI_MODULE" "$HOST" "$PKI_DIR/issuer.pin" "$n" ||
		return 1
	echo "fill_${n}_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" >>"$OUT/machine.txt"
}
for n in $SIZES; do
	log "issuer store with $n other objects"
	issuer_store "$n" || die "issuer store $n"
done

# --- module copies (each with its .conf), policies, services ---------------------------------
MODS=$STORE/modules
mkdir -p -m 0755 "$MODS"
install -m 0644 "$PKI_MODULE" "$MODS/softhsm-issuer.so"
pass_module() {   # pass_module NAME REAL LABEL DELAY_US COUNTS [ENV...]
	local name=$1 real=$2 label=$3 delay=$4 counts=$5 e
	shift 5
	install -m 0644 "$TOOLS/p11pass.so" "$MODS/$name.so" || return 1
	{
		echo "module = $real"
		echo "label = $label"
		echo "delay_us = $delay"
		echo "counts = $counts"
		for e in "$@"; do echo "env = $e"; done
	} >"$MODS/$name.so.conf"
}
FLOOR_BASE="ca=$PKI_DIR/users.pem key_label=kube issuer_token=$HOST issuer_key=issuer \
issuer_cert=$PKI_DIR/issuer.pem issuer_pin_file=$PKI_DIR/issuer.pin ttl=3600"
service() {   # service NAME MODULE-AND-ARGS (auth and session)
	logins_pam "$1" <<-EOF
	auth     required $2
	account  required pam_permit.so
	session  required $2
	EOF
}
# setup COND USERS_MODULE ISSUER_MODULE: a policy and the two services
setup() {
	local cond=$1 um=$2 im=$3
	pki_policy "$KH_TMP/etc/$cond.conf" "$HOST" module="$um" issuer_module="$im" polkit=off ||
		return 1
	service "kh-iss-kubehsm-$cond" "$PAM_KUBEHSM config=$KH_TMP/etc/$cond.conf"
	service "kh-iss-floor-$cond" "$TOOLS/pam_floor.so module=$um issuer_module=$im $FLOOR_BASE"
}
CONDS=()
for d in $DELAYS; do
	pass_module "users-d$d" "$PKI_MODULE" users "$d" "$OUT/counts/users-d$d.log" \
		"SOFTHSM2_CONF=$USERS_CONF" || die "module copies"
	for n in $SIZES; do
		c=n$n-d$d
		pass_module "issuer-$c" "$MODS/softhsm-issuer.so" issuer "$d" "$OUT/counts/$c.log" \
			"SOFTHSM2_CONF=$STORE/issuer-$n/softhsm2.conf" || die "module copies"
		setup "$c" "$MODS/users-d$d.so" "$MODS/issuer-$c.so" || die "policy $c"
		CONDS+=("$c")
	done
done
login_cmd() {   # login_cmd MODULE COND
	echo "pamtester kh-iss-$1-$2 $U authenticate open_session close_session <$KH_TMP/pin"
}
check_login() {   # check_login MODULE COND
	sh -c "$(login_cmd "$1" "$2")" >"$KH_TMP/check.out" 2>&1 ||
		die "$1 login ($2): $(cat "$KH_TMP/check.out")"
}

# --- counts: PKCS#11 calls per login at delay 0 ---------------------------------------------------
d0=${DELAYS%% *}
for n in $SIZES; do
	c=n$n-d$d0
	for m in kubehsm floor; do
		: >"$OUT/counts/users-d$d0.log"
		: >"$OUT/counts/$c.log"
		log "counting: $m, $n other objects"
		for i in 1 2 3; do
			t0=$(date +%s%N)
			check_login "$m" "$c"
			echo "$m $n $(( ($(date +%s%N) - t0) / 1000000 ))" >>"$OUT/count-logins-ms.txt"
		done
		{ cat "$OUT/counts/users-d$d0.log"; cat "$OUT/counts/$c.log"; } |
			sed "s/^/module=$m size=$n /" >>"$OUT/calls.txt"
	done
done
for f in "$OUT"/counts/*.log; do : >"$f"; done

# --- timing -----------------------------------------------------------------------------------------
# The kubehsm login's calls at delay d, from the counts: too slow to time?
calls_of() {   # calls_of MODULE SIZE: the most calls of one login (users + issuer)
	/usr/bin/python3 - "$OUT/calls.txt" "$1" "$2" <<-'PY'
	import re, sys, collections
	per = collections.Counter()
	for line in open(sys.argv[1]):
	    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
	    if f.get("module") == sys.argv[2] and f.get("size") == sys.argv[3]:
	        per[f["pid"]] += int(f["calls"])
	print(max(per.values()) if per else 0)
	PY
}
for ((r = 0; r < ROUNDS; r++)); do
	for c in "${CONDS[@]}"; do
		n=${c#n}; n=${n%-d*}; d=${c##*-d}
		args=()
		mods=(kubehsm floor)
		((r % 2)) && mods=(floor kubehsm)
		for m in "${mods[@]}"; do
			calls=$(calls_of "$m" "$n")
			ms0=$(awk -v m="$m" -v n="$n" '$1 == m && $2 == n { print $3 }' \
				"$OUT/count-logins-ms.txt" | sort -n | head -n 1)
			if [ $((ms0 + calls * d / 1000)) -gt $((CAP_S * 1000)) ]; then
				[ $r = 0 ] && echo "$m $c $calls $ms0" >>"$OUT/untimed.txt"
				continue
			fi
			args+=(-n "$m" "$(login_cmd "$m" "$c")")
		done
		[ ${#args[@]} = 0 ] && continue
		log "round $r, $c: $(( ${#args[@]} / 3 )) modules x $RUNS logins"
		hyperfine --style none --warmup "$WARMUP" --runs "$RUNS" \
			--export-json "$OUT/raw/$c.r$r.json" "${args[@]}" >/dev/null ||
			die "hyperfine, round $r, $c"
	done
done
for c in "${CONDS[@]}"; do
	cp "$OUT/counts/$c.log" "$OUT/raw/timed-calls-$c.log" 2>/dev/null
done
for d in $DELAYS; do
	cp "$OUT/counts/users-d$d.log" "$OUT/raw/timed-calls-users-d$d.log" 2>/dev/null
done

# --- the network HSM ----------------------------------------------------------------------------------
net_hsm() {
	local sizes=($SIZES) n ns_c=khbc$$ ns_h=khbh$$ srv=$STORE/net/server.sock
	local cli=$STORE/net/client.sock delay=500 c
	# The smallest store: p11-kit server initialises the module for each
	# client, and SoftHSM2 reads every object file of its store then — a
	# cost of this stand-in, not of a network HSM.
	n=${sizes[0]}
	mkdir -p -m 0755 "$STORE/net"
	ip netns add "$ns_c" && on_exit "ip netns del $ns_c" &&
		ip netns add "$ns_h" && on_exit "ip netns del $ns_h" || return 1
	ip link add khb$$a netns "$ns_c" type veth peer name khb$$b netns "$ns_h" &&
		ip -n "$ns_c" addr add 10.251.30.1/30 dev khb$$a &&
		ip -n "$ns_h" addr add 10.251.30.2/30 dev khb$$b &&
		ip -n "$ns_c" link set khb$$a up && ip -n "$ns_h" link set khb$$b up &&
		ip -n "$ns_c" link set lo up && ip -n "$ns_h" link set lo up || return 1
	SOFTHSM2_CONF=$STORE/issuer-$n/softhsm2.conf p11-kit server -f -n "$srv" \
		--provider "$PKI_MODULE" "pkcs11:token=$HOST" >"$OUT/p11-kit-server.out" 2>&1 &
	on_exit "kill $! 2>/dev/null"
	ip netns exec "$ns_h" "$TOOLS/hsm_link" server 10.251.30.2 7030 "$srv" &
	on_exit "kill $! 2>/dev/null"
	ip netns exec "$ns_c" "$TOOLS/hsm_link" client "$cli" 10.251.30.2 7030 "$delay" &
	on_exit "kill $! 2>/dev/null"
	for _ in $(seq 1 100); do [ -S "$srv" ] && [ -S "$cli" ] && break; sleep 0.05; done
	[ -S "$srv" ] && [ -S "$cli" ] || return 1
	echo "net_size=$n" >>"$OUT/machine.txt"
	echo "net_oneway_us=$delay" >>"$OUT/machine.txt"
	c=net
	pass_module "issuer-net" "$P11KIT_CLIENT" issuer 0 "$OUT/counts/net.log" \
		"P11_KIT_SERVER_ADDRESS=unix:path=$cli" || return 1
	setup net "$MODS/users-d0.so" "$MODS/issuer-net.so" || return 1
	check_login kubehsm net && check_login floor net || return 1
	: >"$OUT/counts/net.log"
	for ((r = 0; r < ROUNDS; r++)); do
		args=()
		mods=(kubehsm floor)
		((r % 2)) && mods=(floor kubehsm)
		for m in "${mods[@]}"; do
			args+=(-n "$m" "$(login_cmd "$m" net)")
		done
		log "round $r, network HSM"
		hyperfine --style none --warmup "$WARMUP" --runs "$RUNS" \
			--export-json "$OUT/raw/net.r$r.json" "${args[@]}" >/dev/null || return 1
	done
	# The per-function times of logins of each module alone.
	for m in kubehsm floor; do
		: >"$OUT/counts/net.log"
		for ((i = 0; i < RUNS; i++)); do check_login "$m" net; done
		sed "s/^/module=$m /" "$OUT/counts/net.log" >>"$OUT/net-calls.txt"
	done
}
if [ "$NET" = 1 ]; then
	net_hsm || die "the network HSM part"
fi

echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
log "done: raw data in $OUT/ (bench/issuer_report.py for the RESULTS.md section)"
