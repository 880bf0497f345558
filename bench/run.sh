#!/bin/bash
# bench/run.sh [--quick] — the kubehsm benchmarks of issue #8, as root.
# bench/run.sh --relay [--quick] — kubehsm-relayd's (bench/relay.sh).
#
# Every figure is a ratio against a baseline measured in the same
# invocation, interleaved: each comparison runs in ROUNDS rounds; a round is
# one hyperfine invocation holding all the commands of the comparison, their
# order rotated from round to round (A B, B A, ...), RUNS runs each after
# WARMUP warm-ups.  The report pools all runs (medians, min-max) and also
# gives the ratio of medians of every round, so a noisy round shows.
#
# The login row (target 4: pam_kubehsm against pam_p11 and a floor module,
# with and without polkitd, its breakdown from the modules themselves) is
# bench/login_row.sh, run last, in its own mount namespace.
#
#   KH_BUILDDIR=DIR   use an existing kubehsm build (helper/kubehsm,
#                     pam/.libs/pam_kubehsm.so, tests/probes/cache_probe,
#                     which is built if missing)
#                     default: an out-of-tree build in /var/tmp/kubehsm-bench-build
#   BENCH_ROUNDS / BENCH_RUNS / BENCH_WARMUP / BENCH_LOAD_N   override the mode
#   BENCH_OUT=DIR     raw data (default /var/tmp/kubehsm-bench): DIR/main/
#   BENCH_ONLY="exec sign ..."   run only these groups of rows: exec (and its
#                     RSS), kubectl, sign (and signtoken), load, login;
#                     RESULTS.md then says "not measured" for the rest
#
# Results: bench/RESULTS.md and bench/latency.png (committed); the raw data
# (hyperfine JSON, CSV, summary.json, latency.dat) in $BENCH_OUT/main/,
# outside the source tree.  Everything the run creates
# (users, tokens, nginx, /etc/pam.d files, keys) is removed on exit.
set -u
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(dirname "$BENCH")
QUICK=0
# kubehsm-relayd's benchmarks (issue #15) run on their own: bench/relay.sh.
if [ "${1:-}" = --relay ]; then
	shift
	exec bash "$BENCH/relay.sh" "$@"
fi
case "${1:-}" in
--quick) QUICK=1 ;;
"") ;;
*) echo "usage: $0 [--quick] | --relay [--quick]" >&2; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "bench: run as root (creates users, tokens, PAM services)" >&2; exit 2; }
for c in hyperfine gnuplot pamtester nginx softhsm2-util pkcs11-tool keyctl setpriv useradd \
	openssl /usr/bin/time /usr/bin/python3 pkg-config cc; do
	command -v "$c" >/dev/null 2>&1 || { echo "bench: needs '$c'" >&2; exit 2; }
done
KUBECTL=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
GKE=/usr/lib/google-cloud-sdk/bin/gke-gcloud-auth-plugin
PAM_P11=/lib/x86_64-linux-gnu/security/pam_p11.so
for f in "$KUBECTL" "$GKE" "$PAM_P11"; do
	[ -e "$f" ] || { echo "bench: needs $f" >&2; exit 2; }
done

# RUNS: runs per round of every comparison; FAST_RUNS for the millisecond
# commands (exec, sign), whose medians need more samples on a noisy machine.
# (kubectl's plugin millisecond hides in 60-90 ms of jittery Go start-up and
# TLS, and SoftHSM logins jitter by a third: 5 runs a round were too few.)
if [ $QUICK = 1 ]; then
	ROUNDS=${BENCH_ROUNDS:-3} RUNS=${BENCH_RUNS:-4} WARMUP=${BENCH_WARMUP:-2} LOAD_N=${BENCH_LOAD_N:-25}
	FAST_RUNS=${BENCH_FAST_RUNS:-10}
	MODE=quick
else
	ROUNDS=${BENCH_ROUNDS:-10} RUNS=${BENCH_RUNS:-15} WARMUP=${BENCH_WARMUP:-3} LOAD_N=${BENCH_LOAD_N:-150}
	FAST_RUNS=${BENCH_FAST_RUNS:-30}
	MODE=full
fi
LOAD_USERS=20 LOAD_P=50
LOAD_ROUNDS=$([ $QUICK = 1 ] && echo 2 || echo 5)

# --- the build ----------------------------------------------------------------
KH_SRCDIR=$SRC
if [ -z "${KH_BUILDDIR:-}" ]; then
	KH_BUILDDIR=/var/tmp/kubehsm-bench-build
	if [ ! -x "$KH_BUILDDIR/helper/kubehsm" ] || [ ! -f "$KH_BUILDDIR/pam/.libs/pam_kubehsm.so" ]; then
		echo "bench: building kubehsm in $KH_BUILDDIR" >&2
		mkdir -p "$KH_BUILDDIR" &&
			(cd "$KH_BUILDDIR" && { [ -f Makefile ] || "$SRC/configure" >configure.log 2>&1; } &&
				make -j"$(nproc)" >make.log 2>&1) ||
			{ echo "bench: build failed, see $KH_BUILDDIR/{configure,make}.log" >&2; exit 1; }
	fi
fi
export KH_SRCDIR KH_BUILDDIR
if [ ! -x "$KH_BUILDDIR/tests/probes/cache_probe" ]; then
	(cd "$KH_BUILDDIR" && make tests/probes/cache_probe >>make.log 2>&1) ||
		{ echo "bench: cannot build tests/probes/cache_probe in $KH_BUILDDIR" >&2; exit 1; }
fi

# tap.sh: KH_TMP, on_exit (cleanups run in reverse at exit, even on failure).
. "$SRC/tests/harness/tap.sh"
. "$SRC/tests/harness/users.sh"
. "$SRC/tests/harness/pki.sh"
. "$SRC/tests/harness/kubeapi.sh"
trap 'exit 130' INT TERM HUP
PROBE=$KH_BUILDDIR/tests/probes/cache_probe
chmod 0755 "$KH_BUILDDIR" "$KH_BUILDDIR/helper" "$KH_BUILDDIR/tests" 2>/dev/null || true

RES=${BENCH_OUT:-/var/tmp/kubehsm-bench}/main
RAW=$RES/raw
rm -rf "$RES"; mkdir -p "$RAW" || { echo "bench: cannot create $RAW" >&2; exit 1; }
ONLY=${BENCH_ONLY:-}
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }
log() { echo "bench: $*" >&2; }
die() { echo "bench: FAILED: $*" >&2; exit 1; }

# Machine description, before we add load.
{
	echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf "mode=%s\nrounds=%s\nruns_per_round=%s\nfast_runs_per_round=%s\nwarmup=%s\n" \
		"$MODE" "$ROUNDS" "$RUNS" "$FAST_RUNS" "$WARMUP"
	echo "nproc=$(nproc)"
	echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "kernel=$(uname -srm)"
	echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "memory=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
	echo "os=$(. /etc/os-release; echo "$PRETTY_NAME")"
	echo "hyperfine=$(hyperfine --version | cut -d' ' -f2)"
	echo "kubehsm_build=$KH_BUILDDIR"
	echo "kubehsm_commit=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null)"
	# The shared objects `kubehsm exec` maps (the front end; its libc and
	# loader are the floor's too): none when it is static-pie.
	if readelf -lW "$KH_BUILDDIR/helper/kubehsm" 2>/dev/null | grep -q INTERP; then
		echo "kubehsm_libs=$(ldd "$KH_BUILDDIR/helper/kubehsm" 2>/dev/null |
			awk '$1 !~ /^linux-vdso/ {print $1}' | sort -u | tr '\n' ' ')"
	else
		echo "kubehsm_libs=none (static-pie)"
	fi
} >"$RES/machine.txt"

# --- floor programs -------------------------------------------------------------
FLOOR=$KH_TMP/floor
mkdir -p "$FLOOR" && chmod 0755 "$FLOOR"
make -s -C "$BENCH" -f floor.mk OUT="$FLOOR" >/dev/null || die "building bench/floor"

# --- PKI, tokens, the user, the policy ----------------------------------------------
PIN=4711 ISSUER_PIN=987654 HOST=khbhost$$
pki_init && pki_ca users "kh bench users CA" && pki_ca issuerca "kh bench issuer CA" &&
	pki_issuer_token "$HOST" "$ISSUER_PIN" issuerca || die "PKI / issuer token"
chmod 0600 "$PKI_DIR/issuer.pin"
make_user bench
U=$bench
pki_user_cert "$U" users --cn "$U" --o dev --o ops && pki_token_init "$U" "$PIN" &&
	pki_token_import "$U" "$PIN" "$U" kube 01 || die "user token"
pki_token_give "$U" "$U"   # signer.key = token signs on it as the user
CONF=$KH_TMP/etc/kubehsm.conf
pki_policy "$CONF" "$HOST" cache_pin=true || die "policy"   # for signer.key = token
export KUBEHSM_CONFIG=$CONF
printf '%s\n' "$PIN" >"$KH_TMP/pin"; chmod 0600 "$KH_TMP/pin"

SVC=kubehsm-bench-$$
on_exit "rm -f /etc/pam.d/$SVC"
{
	echo "auth     required $PAM_KUBEHSM config=$CONF"
	echo "account  required pam_permit.so"
	echo "session  required $PAM_KUBEHSM config=$CONF"
	echo "session  required pam_permit.so"
} >"/etc/pam.d/$SVC"

# --- a real login seeds the session everything below uses ---------------------------
pamtester "$SVC" "$U" authenticate open_session <"$KH_TMP/pin" >"$KH_TMP/login.out" 2>&1 ||
	die "pamtester login through pam_kubehsm: $(cat "$KH_TMP/login.out")"

# runu USER CMD...: as USER, in a session keyring of theirs, with the env the
# plugin sees under kubectl.
EXEC_INFO='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}'
runu() {
	local user=$1; shift
	as_user "$user" env KUBERNETES_EXEC_INFO="$EXEC_INFO" KUBEHSM_CONFIG="$CONF" \
		SOFTHSM2_CONF="$SOFTHSM2_CONF" KUBECONFIG="$GKEDIR/kubeconfig" "$@" 2> >(grep -v '^Joined session keyring' >&2)
}
GKEDIR=$KH_TMP/gke
mkdir -m 0755 "$GKEDIR"
runu "$U" "$KUBEHSM" exec >"$KH_TMP/execcred.json" </dev/null || die "kubehsm exec after login"
chmod 0644 "$KH_TMP/execcred.json"
EXEC_BYTES=$(wc -c <"$KH_TMP/execcred.json")
# The session's certificate chain and key, for the static-certificate
# kubeconfig, the signature floor and the 20 load users.
SESS=$KH_TMP/session
mkdir -m 0755 "$SESS"
/usr/bin/python3 - "$KH_TMP/execcred.json" "$SESS" <<'EOF' || die "cannot parse the ExecCredential"
import json, sys
s = json.load(open(sys.argv[1]))["status"]
open(sys.argv[2] + "/chain.pem", "w").write(s["clientCertificateData"])
open(sys.argv[2] + "/key.pem", "w").write(s["clientKeyData"])
EOF
chown "$U" "$SESS/key.pem" "$SESS/chain.pem"; chmod 0600 "$SESS/key.pem"
csplit -s -z -f "$SESS/cert" "$SESS/chain.pem" '/-----BEGIN CERTIFICATE-----/' '{*}'
chown "$U" "$SESS"/cert*; chmod 0644 "$SESS/chain.pem" "$SESS"/cert*

# --- the API endpoint and kubeconfigs ----------------------------------------------------
kubeapi_start "$PKI_DIR/issuerca.pem" || die "nginx did not start"
kubeconfig() {   # kubeconfig FILE USER-BLOCK
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster:
    server: $KUBEAPI_URL
    certificate-authority: $KUBEAPI_CA
users:
- name: u
  user:
$2
contexts:
- name: bench
  context: {cluster: bench, user: u}
current-context: bench
EOF
	chown "$U" "$1"; chmod 0600 "$1"
}
KC_EXEC=$KH_TMP/kubeconfig-exec KC_STATIC=$KH_TMP/kubeconfig-static
kubeconfig "$KC_EXEC" "    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $KUBEHSM
      args: [exec]
      interactiveMode: Never"
kubeconfig "$KC_STATIC" "    client-certificate: $SESS/chain.pem
    client-key: $SESS/key.pem"
for kc in "$KC_EXEC" "$KC_STATIC"; do
	out=$(runu "$U" "$KUBECTL" --kubeconfig "$kc" get --raw /version </dev/null) &&
		grep -q '"gitVersion"' <<<"$out" || die "kubectl with ${kc##*/}: $out"
done

# --- the GKE plugin's cached path: a valid cache beside the kubeconfig ------------------------
cat >"$GKEDIR/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: gke
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: gke
  user: {}
contexts:
- name: gke_bench
  context: {cluster: gke, user: gke}
current-context: gke_bench
EOF
printf '{"current_context":"gke_bench","access_token":"ya29.%s","token_expiry":"%s","extra_args":""}\n' \
	"$(head -c 900 /dev/urandom | base64 -w0 | tr -d '+/=')" "$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)" \
	>"$GKEDIR/gke_gcloud_auth_plugin_cache"
chown -R "$U" "$GKEDIR"
out=$(runu "$U" unshare -r -n "$GKE" </dev/null) && grep -q '"kind": *"ExecCredential"' <<<"$out" ||
	die "gke-gcloud-auth-plugin does not answer from its cache without network: $out"

# --- the external signer ----------------------------------------------------------------
API=external-signer.authentication.k8s.io/v1alpha1
printf 'kubehsm bench data' | openssl dgst -sha256 -binary | base64 -w0 >"$KH_TMP/digest.b64"
DIGEST=$(cat "$KH_TMP/digest.b64")
SIGNREQ="{\"apiVersion\":\"$API\",\"kind\":\"SignRequest\",\"configuration\":{},\"digest\":\"$DIGEST\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":\"5\"}"
runu "$U" "$KUBEHSM" sign "$SIGNREQ" >"$KH_TMP/signresp.json" </dev/null || die "kubehsm sign (session)"
chmod 0644 "$KH_TMP/signresp.json"
runu "$U" "$KUBEHSM" sign --key token "$SIGNREQ" >/dev/null </dev/null || die "kubehsm sign --key token"
runu "$U" "$FLOOR/sign_floor" "$SESS/key.pem" "$DIGEST" >/dev/null || die "sign_floor"
runu "$U" "$FLOOR/p11_floor" "$PKI_MODULE" "$U" "$PIN" kube "$DIGEST" >/dev/null || die "p11_floor"

# --- measuring ----------------------------------------------------------------------------
# measure NAME AS NAME1 CMD1 NAME2 CMD2 [...]: ROUNDS hyperfine invocations,
# the command order rotated each round, RUNS runs each (MRUNS=N overrides).  AS is a user (commands run as that
# user with -N, no shell) or "root-shell" (as root through sh, for commands
# that need a redirection; hyperfine subtracts the shell's start-up).
measure() {
	local name=$1 as=$2 r i k n runs=${MRUNS:-$RUNS}; shift 2
	local names=() cmds=()
	while [ $# -gt 0 ]; do names+=("$1"); cmds+=("$2"); shift 2; done
	n=${#names[@]}
	log "$name: $ROUNDS rounds x $runs runs of ${names[*]}"
	for ((r = 0; r < ROUNDS; r++)); do
		local args=()
		for ((i = 0; i < n; i++)); do
			k=$(((i + r) % n))
			args+=(-n "${names[$k]}" "${cmds[$k]}")
		done
		if [ "$as" = root-shell ]; then
			hyperfine --style none --warmup "$WARMUP" --runs "$runs" \
				--export-json "$RAW/$name.r$r.json" "${args[@]}" >/dev/null ||
				die "hyperfine $name round $r"
		else
			runu "$as" hyperfine -N --style none --warmup "$WARMUP" --runs "$runs" \
				--export-json "$HF/hf.json" "${args[@]}" </dev/null >/dev/null ||
				die "hyperfine $name round $r"
			cp "$HF/hf.json" "$RAW/$name.r$r.json"
		fi
	done
}
HF=$KH_TMP/hf   # hyperfine, as the user, writes its JSON there
install -d -o "$U" -m 0700 "$HF"

# Target 1: the exec plugin's warm path.
if want exec; then
MRUNS=$FAST_RUNS measure exec "$U" \
	kubehsm "$KUBEHSM exec" \
	floor "$FLOOR/exec_floor $KH_TMP/execcred.json" \
	floor-static "$FLOOR/exec_floor_static $KH_TMP/execcred.json" \
	gke "$GKE"
# Peak RSS (/usr/bin/time -v), the largest of 10 runs.
rss() {   # rss NAME CMD...
	local name=$1 i m max=0; shift
	for i in $(seq 1 10); do
		m=$(runu "$U" /usr/bin/time -v "$@" 2>&1 >/dev/null </dev/null |
			awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}')
		[ -n "$m" ] && [ "$m" -gt "$max" ] && max=$m
	done
	echo "$name,$max" >>"$RES/rss.csv"
}
echo "command,max_rss_kib" >"$RES/rss.csv"
rss kubehsm "$KUBEHSM" exec
rss floor "$FLOOR/exec_floor" "$KH_TMP/execcred.json"
rss gke "$GKE"
rss kubehsm-sign "$KUBEHSM" sign "$SIGNREQ"
fi

# Target 2: kubectl end to end.
want kubectl && measure kubectl "$U" \
	exec-plugin "$KUBECTL --kubeconfig $KC_EXEC get --raw /version" \
	static-cert "$KUBECTL --kubeconfig $KC_STATIC get --raw /version"

# Target 3: the signer.
if want sign; then
MRUNS=$FAST_RUNS measure sign "$U" \
	kubehsm-sign "$KUBEHSM sign '$SIGNREQ'" \
	exec-floor "$FLOOR/exec_floor $KH_TMP/signresp.json" \
	ssl-floor "$FLOOR/ssl_floor $KH_TMP/signresp.json" \
	sign-floor "$FLOOR/sign_floor $SESS/key.pem $DIGEST" \
	hop-sign-floor "$FLOOR/hop_floor $FLOOR/sign_floor $SESS/key.pem $DIGEST" \
	tool-sign "$KH_BUILDDIR/helper/kubehsm-tool sign '$SIGNREQ'"
measure signtoken "$U" \
	kubehsm-sign-token "$KUBEHSM sign --key token '$SIGNREQ'" \
	p11-floor "$FLOOR/p11_floor $PKI_MODULE $U $PIN kube $DIGEST"
fi

# Target 5: shared-host load, 20 users with sessions.
if want load; then
log "load: $LOAD_USERS users"
LU=()
for i in $(seq 1 $LOAD_USERS); do
	v=load$(printf "\\$(printf %o $((96 + i)))")   # loada, loadb, ...: make_user names by letters
	make_user "$v"
	u=${!v}
	LU+=("$u")
	"$PROBE" store "$(id -u "$u")" "$u" user 3600 --chain "$SESS/chain.pem" --key "$SESS/key.pem" \
		--token-cert "$PKI_DIR/$U.pem" --groups dev,ops >/dev/null || die "storing a session for $u"
done
echo "user,qnkeys,qnbytes,record_bytes" >"$RES/keyring.csv"
for u in "${LU[@]}" "$U"; do
	q=$(awk -v uid="$(id -u "$u"):" '$1 == uid {split($4, k, "/"); split($5, b, "/"); print k[1] "," b[1]}' /proc/key-users)
	rb=$(runu "$u" sh -c 'keyctl pipe "$(keyctl search @u user kubehsm:session:v1)" | wc -c' </dev/null)
	echo "$u,${q:-0,0},$rb" >>"$RES/keyring.csv"
done
LOAD_CSV=$RES/load.csv
echo "round,which,runs,fail,wall_s,runs_per_s" >"$LOAD_CSV"
load_round() {   # load_round ROUND WHICH CMD...
	local r=$1 which=$2 u t0 t1 runs=0 fail=0 f; shift 2
	local outs=() pids=()
	t0=$(date +%s.%N)
	for u in "${LU[@]}"; do
		f=$KH_TMP/load.$u.out; outs+=("$f")
		runu "$u" "$FLOOR/loadgen" "$LOAD_P" "$LOAD_N" "$@" </dev/null >"$f" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}"   # not a bare wait: nginx is a child too
	t1=$(date +%s.%N)
	for f in "${outs[@]}"; do
		runs=$((runs + $(sed -n 's/.*runs=\([0-9]*\).*/\1/p' "$f" | tail -1)))
		fail=$((fail + $(sed -n 's/.*fail=\([0-9]*\).*/\1/p' "$f" | tail -1)))
	done
	echo "$r,$which,$runs,$fail,$(echo "$t1 - $t0" | bc -l),$(echo "$runs / ($t1 - $t0)" | bc -l)" >>"$LOAD_CSV"
}
for ((r = 0; r < LOAD_ROUNDS; r++)); do
	log "load round $r: $LOAD_USERS users x $LOAD_N runs, $LOAD_P at once per user"
	if ((r % 2 == 0)); then
		load_round "$r" kubehsm "$KUBEHSM" exec
		load_round "$r" floor "$FLOOR/exec_floor" "$KH_TMP/execcred.json"
	else
		load_round "$r" floor "$FLOOR/exec_floor" "$KH_TMP/execcred.json"
		load_round "$r" kubehsm "$KUBEHSM" exec
	fi
done
fi

echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RES/machine.txt"
echo "exec_credential_bytes=$EXEC_BYTES" >>"$RES/machine.txt"
echo "sign_response_bytes=$(wc -c <"$KH_TMP/signresp.json")" >>"$RES/machine.txt"

# --- the report ---------------------------------------------------------------------------
/usr/bin/python3 "$BENCH/report.py" "$BENCH" "$RES" || die "report"
gnuplot -e "datafile='$RES/latency.dat'; outfile='$BENCH/latency.png'" "$BENCH/latency.gp" ||
	die "gnuplot"

# Target 4: the login row, last (the logins come and go): its own script,
# namespace, users and tokens; it writes the login section of RESULTS.md.
if want login; then
	BENCH_OUT=$(dirname "$RES") bash "$BENCH/login_row.sh" $([ $QUICK = 1 ] && echo --quick) ||
		die "the login row (bench/login_row.sh)"
fi
log "done: $BENCH/RESULTS.md, $BENCH/latency.png, $RES/, $(dirname "$RES")/login-row/"
