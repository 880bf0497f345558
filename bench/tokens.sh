#!/bin/bash
# bench/tokens.sh [--quick] — login time per real token stack (issue #22), as root.
#
# `pamtester SERVICE USER authenticate open_session close_session`, PIN on
# stdin, through pam_kubehsm and Debian's pam_p11 on each token stack the
# integration tests drive (tests/integration/tokens/), in ONE run:
#   softhsm  SoftHSM2 (the baseline every ratio is taken against)
#   opensc   an emulated PIV card (tests/harness/piv_card.py) on a private
#            pcscd + vsmartcard vpcd, through OpenSC's opensc-pkcs11.so
#   ykcs11   the same card through Yubico's libykcs11
#   tpm      swtpm + tpm2-abrmd + tpm2-pkcs11 (tests/harness/tpm.sh)
# The setup is the harnesses' (tests/harness/pcsc.sh, tpm.sh, pki.sh,
# users.sh, tests/integration/tokens/tokens_common.sh's policy writer).
#
# Same user, same PIN, EC P-256 user keys everywhere; the headline rows use
# the PIV card's 9A key (a cheap extra row: pam_kubehsm with the 9C key,
# CKA_ALWAYS_AUTHENTICATE, a second VERIFY per login).  The host issuer is
# the same SoftHSM token for every stack, so only the user's token differs.
# polkit.mode = "off" (no bus involved).  pam_p11 0.3 has no session work:
# its service has pam_permit for the session (as bench/login_row.sh).
#
# Every pamtester runs with an environment of its own (env -i): PATH plus
# what the stack's PKCS#11 module reads (SOFTHSM2_CONF; PCSCLITE_CSOCK_NAME,
# OPENSC_CONF; TPM2_PKCS11_STORE, TPM2_PKCS11_TCTI, DBUS_SESSION_BUS_ADDRESS,
# TSS2_LOG, TPM2_PKCS11_LOG_LEVEL), the same for both modules of a stack:
# pam_p11 has no other way to hand them to the module; pam_kubehsm has them
# in pkcs11.env as well.  No controlling terminal (setsid).
#
# The card: another PC/SC client holds reader 0 for the whole measurement
# (pcsc_hold), so pcscd never powers the card down between logins, and
# OpenSC resets it at disconnect (opensc.conf disconnect_action = reset, as
# kubehsm recommends): every login starts from the same unverified card.
#
# Each round is one hyperfine invocation over every command, the order
# rotated from round to round; RUNS runs each after WARMUP warm-ups.  Before
# measuring, each command logs in once and what the card saw is checked (one
# successful VERIFY per C_Login, one signature with the expected slot).
#
#   KH_BUILDDIR=DIR    the kubehsm build (default: ./build)
#   BENCH_OUT=DIR      raw data (default /var/tmp/kubehsm-bench); this
#                      script writes DIR/tokens/ — never the source tree
#   BENCH_ROUNDS / BENCH_RUNS / BENCH_WARMUP
#   BENCH_CHECK_ONLY=1 set up and check one login per command, time nothing
#
# Output: the tokens section of bench/RESULTS.md (bench/tokens_report.py)
# and the raw data in $BENCH_OUT/tokens/.  Everything it creates (users,
# tokens, pcscd and the card emulator, swtpm, its bus and tpm2-abrmd, the
# PAM services of a private /etc/pam.d) goes at exit.
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
	ROUNDS=${BENCH_ROUNDS:-2} RUNS=${BENCH_RUNS:-3} WARMUP=${BENCH_WARMUP:-1} MODE=quick
else
	ROUNDS=${BENCH_ROUNDS:-5} RUNS=${BENCH_RUNS:-10} WARMUP=${BENCH_WARMUP:-2} MODE=full
fi
PAM_P11=/lib/x86_64-linux-gnu/security/pam_p11.so
OPENSC=/usr/lib/x86_64-linux-gnu/opensc-pkcs11.so
YKCS11=/usr/lib/x86_64-linux-gnu/libykcs11.so
[ "$(id -u)" -eq 0 ] || { echo "bench: run as root (users, pcscd, swtpm, PAM services)" >&2; exit 2; }
for c in hyperfine pamtester unshare nsenter ip setsid softhsm2-util pkcs11-tool openssl \
	pcscd opensc-tool swtpm tpm2-abrmd tpm2_ptool dbus-daemon /usr/bin/python3; do
	command -v "$c" >/dev/null 2>&1 || { echo "bench: needs '$c'" >&2; exit 2; }
done
for f in "$PAM_P11" "$OPENSC" "$YKCS11"; do
	[ -e "$f" ] || { echo "bench: needs $f (libpam-p11, opensc-pkcs11, ykcs11)" >&2; exit 2; }
done
[ -f "$KH_BUILDDIR/pam/.libs/pam_kubehsm.so" ] ||
	{ echo "bench: build first (no $KH_BUILDDIR/pam/.libs/pam_kubehsm.so)" >&2; exit 2; }

# The harness; logins.sh re-executes this script in a private mount namespace
# (its /etc/pam.d is a private copy: the services never reach the host's).
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/logins.sh"
. "$KH_SRCDIR/tests/harness/pcsc.sh"
. "$KH_SRCDIR/tests/harness/tpm.sh"
. "$KH_SRCDIR/tests/integration/tokens/tokens_common.sh"
[ -r "$PCSC_VPCD_DRIVER" ] || { echo "bench: needs vsmartcard-vpcd" >&2; exit 2; }
trap 'exit 130' INT TERM HUP
log() { echo "bench: $*" >&2; }
die() { echo "bench: FAILED: $*" >&2; exit 1; }

OUT=${BENCH_OUT:-/var/tmp/kubehsm-bench}/tokens
case "$OUT/" in "$KH_SRCDIR"/bench/results/*) ;; "$KH_SRCDIR"/*)
	die "BENCH_OUT inside the source tree ($OUT): raw data stays out of the repository" ;;
esac
RAW=$OUT/raw
rm -rf "$OUT" && mkdir -p "$RAW" "$OUT/check" || die "cannot create $OUT"
ver() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null; }
{
	echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf "mode=%s\nrounds=%s\nruns_per_round=%s\nwarmup=%s\n" "$MODE" "$ROUNDS" "$RUNS" "$WARMUP"
	echo "nproc=$(nproc)"
	echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "kernel=$(uname -srm)"
	echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "hyperfine=$(hyperfine --version | cut -d' ' -f2)"
	echo "pam_p11=$(ver libpam-p11)"
	echo "libp11=$(ver libp11-3)"
	echo "softhsm=$(ver softhsm2)"
	echo "opensc=$(ver opensc-pkcs11)"
	echo "ykcs11=$(ver ykcs11)"
	echo "pcscd=$(ver pcscd)"
	echo "vpcd=$(ver vsmartcard-vpcd)"
	echo "tpm2_pkcs11=$(ver libtpm2-pkcs11-1)"
	echo "tpm2_abrmd=$(ver tpm2-abrmd)"
	echo "swtpm=$(ver swtpm)"
	echo "kubehsm_commit=$(git -C "$KH_SRCDIR" rev-parse --short HEAD 2>/dev/null)"
	echo "kubehsm_build=$KH_BUILDDIR"
} >"$OUT/machine.txt"
cd "$KH_TMP" || die "cd $KH_TMP"

# --- PKI, the SoftHSM issuer and user token, the users ---------------------------------
PIN=123456
ETC=$KH_TMP/etc
make_user bench       # the user of every headline row
make_user benchc      # pam_p11 with the 9C certificate (its ~/.eid names only that one)
U=$bench
ISSUER_LABEL=khtokhost$$
{
	pki_init && pki_ca users "kh bench users CA" && pki_ca issuerca "kh bench issuer CA" &&
	pki_issuer_token "$ISSUER_LABEL" 987654 issuerca && chmod 0600 "$PKI_DIR/issuer.pin" &&
	pki_user_cert "$U" users --uid "$U" --cn "Bench User" &&
	pki_token_init "$U" "$PIN" && pki_token_import "$U" "$PIN" "$U" kube 01 &&
	# The card's certificates come from the same users CA; 9C certifies
	# client authentication too, so pam_kubehsm may log in with it.
	export PIV_CA_DIR=$KH_TMP/pivca && mkdir -p "$PIV_CA_DIR" &&
	cp "$PKI_DIR/users.pem" "$PIV_CA_DIR/ca.crt" && cp "$PKI_DIR/users.key" "$PIV_CA_DIR/ca.key" &&
	CARD=$KH_TMP/card && PIV_PIN=$PIN PIV_EKU_9C=clientAuth piv_make_card "$CARD" "Bench User" "$U" ec
} >"$KH_TMP/setup.log" 2>&1 || { cat "$KH_TMP/setup.log" >&2; die "PKI, SoftHSM tokens, card"; }
printf '%s\n' "$PIN" >"$KH_TMP/pin"; chmod 0600 "$KH_TMP/pin"

# --- the PC/SC stack and the card -------------------------------------------------------
t0=$SECONDS
pcsc_start "$KH_TMP/pcsc" && piv_card_start "$KH_TMP/pcsc" 0 "$CARD" || die "pcscd and the card"
SOCK=$PCSCLITE_CSOCK_NAME
pcsc_opensc_conf "$KH_TMP/osc" reset && OSC=$OPENSC_CONF || die "opensc.conf"
unset OPENSC_CONF
log "pcscd and the card up in $((SECONDS - t0)) s"

# --- the TPM (private swtpm, bus, tpm2-abrmd) and the user's TPM token ------------------
t0=$SECONDS
tpm_start "$KH_TMP/tpm" || die "no software TPM"
on_exit tpm_stop
tpm_user_token "$U-tpm" "$PIN" "$PKI_DIR/users.pem" "$PKI_DIR/users.key" \
	"/UID=$U/CN=Bench User" ecc256 >>"$KH_TMP/setup.log" 2>&1 ||
	{ cat "$KH_TMP/setup.log" >&2; die "TPM user token"; }
TPM_CERT=$TPM_DIR/certs/$U-tpm.pem
log "swtpm, its bus, tpm2-abrmd and the token ready in $((SECONDS - t0)) s"

# --- per stack: the environment, the policy, pam_p11's module --------------------------
declare -A ENVV MOD CERT
ENVV[softhsm]="SOFTHSM2_CONF=$SOFTHSM2_CONF"
ENVV[opensc]="PCSCLITE_CSOCK_NAME=$SOCK OPENSC_CONF=$OSC"
ENVV[ykcs11]="PCSCLITE_CSOCK_NAME=$SOCK"
ENVV[tpm]=$(tpm_env | tr '\n' ' ')
MOD[softhsm]=$PKI_MODULE MOD[opensc]=$OPENSC MOD[ykcs11]=$YKCS11 MOD[tpm]=$TPM_MODULE
CERT[softhsm]=$PKI_DIR/$U.pem CERT[opensc]=$CARD/9a.crt CERT[ykcs11]=$CARD/9a.crt CERT[tpm]=$TPM_CERT
libconfig_env() {   # KEY=VALUE... -> KEY = "VALUE"; ...
	local kv
	for kv in "$@"; do printf '%s = "%s"; ' "${kv%%=*}" "${kv#*=}"; done
}
STACKS=(softhsm opensc ykcs11 tpm)
for s in "${STACKS[@]}"; do
	# shellcheck disable=SC2086  # the values hold no blanks
	tokens_policy "$ETC/$s.conf" module="${MOD[$s]}" env="$(libconfig_env ${ENVV[$s]})" ||
		die "policy $s"
done
for s in opensc ykcs11; do
	# shellcheck disable=SC2086
	tokens_policy "$ETC/$s-9c.conf" module="${MOD[$s]}" env="$(libconfig_env ${ENVV[$s]})" \
		token='key_id = "02";' || die "policy $s 9c"
done

# pam_p11 0.3: the certificates a user may log in with, in ~/.eid.  One file
# for all stacks: each token holds one of them (pam_p11 matches by content).
eid() {   # eid USER CERT...
	local home
	home=$(getent passwd "$1" | cut -d: -f6)
	install -d -o "$1" -m 0755 "$home/.eid"
	shift
	cat "$@" >"$home/.eid/authorized_certificates.new" &&
		install -o "$(stat -c %U "$home")" -m 0644 "$home/.eid/authorized_certificates.new" \
			"$home/.eid/authorized_certificates" && rm -f "$home/.eid/authorized_certificates.new"
}
eid "$U" "$PKI_DIR/$U.pem" "$CARD/9a.crt" "$TPM_CERT"
eid "$benchc" "$CARD/9c.crt"

# --- the PAM services (private /etc/pam.d) ---------------------------------------------
service() {   # service NAME AUTH-MODULE-AND-ARGS [SESSION-MODULE-AND-ARGS]
	logins_pam "$1" <<-EOF
	auth     required $2
	account  required pam_permit.so
	session  required ${3:-pam_permit.so}
	EOF
}
# Commands: NAME -> stack, service, user; the order is the report's.
declare -A C_STACK C_SVC C_USER C_SLOT
CMDS=()
cmd() {   # cmd NAME STACK SERVICE USER SLOT
	CMDS+=("$1"); C_STACK[$1]=$2 C_SVC[$1]=$3 C_USER[$1]=$4 C_SLOT[$1]=$5
}
for s in "${STACKS[@]}"; do
	service "kh-tok-kubehsm-$s" "$PAM_KUBEHSM config=$ETC/$s.conf" "$PAM_KUBEHSM config=$ETC/$s.conf"
	service "kh-tok-p11-$s" "$PAM_P11 ${MOD[$s]}"
	cmd "$s/kubehsm" "$s" "kh-tok-kubehsm-$s" "$U" 9a
	cmd "$s/pam_p11" "$s" "kh-tok-p11-$s" "$U" 9a
	case $s in opensc|ykcs11)
		service "kh-tok-kubehsm-$s-9c" "$PAM_KUBEHSM config=$ETC/$s-9c.conf" \
			"$PAM_KUBEHSM config=$ETC/$s-9c.conf"
		cmd "$s/kubehsm-9c" "$s" "kh-tok-kubehsm-$s-9c" "$U" 9c
		cmd "$s/pam_p11-9c" "$s" "kh-tok-p11-$s" "$benchc" 9c
		;;
	esac
done
login_cmd() {   # the measured command line
	local c=$1
	echo "env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin ${ENVV[${C_STACK[$c]}]} setsid -w" \
		"pamtester ${C_SVC[$c]} ${C_USER[$c]} authenticate open_session close_session <$KH_TMP/pin"
}
{
	for c in "${CMDS[@]}"; do echo "$c: $(login_cmd "$c")"; done
	for s in "${STACKS[@]}"; do echo "== $s.conf"; cat "$ETC/$s.conf"; done
} >"$OUT/commands.txt"

# --- one login per command, checked, before anything is timed --------------------------
# Another PC/SC client holds the card's reader from here to the end.
pcsc_hold 0 || die "cannot hold the card's reader"
MEASURE=()
: >"$OUT/unsupported.txt"
why_not() {   # why_not NAME REASON: the command gets no number, the report says why
	log "$1: not measured: $2"
	printf '%s\t%s\n' "$1" "$2" >>"$OUT/unsupported.txt"
}
bt_summary() {   # bt_summary FILE: "; gdb: f1 (lib) <- f2 (lib) ..." down to pam_sm_authenticate
	[ -s "$1" ] || return 0
	awk '/^Thread|^$/ { if (!hit) n = 0 }
		/^#[0-9]/ { f[n++] = $0 }
		/pam_sm_authenticate/ { hit = 1; exit }
		END { if (!hit) exit; out = ""
		      for (i = 0; i < n - 1; i++) {
			fn = f[i]; sub(/^#[0-9]+ +(0x[0-9a-f]+ in )?/, "", fn)
			lib = ""; if (match(fn, / (from|at) [^ ]*$/)) { lib = substr(fn, RSTART); sub(/.*\//, "", lib) }
			sub(/ \(.*$/, "", fn)
			if (fn == "??" || fn == "") fn = "?"
			e = fn (lib == "" ? "" : " (" lib ")")
			if (e == prev) continue
			out = out (out == "" ? "" : " <- ") e; prev = e
		      }
		      printf "; gdb: %s <- pam_sm_authenticate", out }' "$1"
}
for c in "${CMDS[@]}"; do
	s=${C_STACK[$c]} slot=${C_SLOT[$c]} f=$OUT/check/${c//\//_}
	mark=$(piv_events_mark "$CARD")
	# In the background, so that a login that never ends can be looked at
	# (gdb: where it hangs) before it is killed.
	eval "$(login_cmd "$c") >'$f.out' 2>'$f.err' &"
	pid=$!
	for ((i = 0; i < 600; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	hung=
	if kill -0 "$pid" 2>/dev/null; then
		ptpid=$pid
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = pamtester ] || ptpid=$(pgrep -x -P "$pid" pamtester)
		# user + system CPU seconds so far: spinning, or waiting?
		hung=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$ptpid/stat")
		command -v gdb >/dev/null && gdb -p "$ptpid" -batch -ex 'thread apply all bt' >"$f.bt" 2>&1
		kill -KILL "$pid" "$ptpid" 2>/dev/null
	fi
	wait "$pid"
	rc=$?
	if [ "$rc" -gt 128 ] && [ -z "$hung" ] && command -v gdb >/dev/null; then
		# Killed by a signal: once more under gdb, for where.
		hung=
		eval "$(login_cmd "$c" | sed 's/ pamtester / gdb -batch -ex run -ex bt --args pamtester /') \
			>'$f.bt' 2>&1"
	fi
	{ echo "rc=$rc"; tail -n +"$((mark + 1))" "$CARD/events.log"; } >"$f.card"
	verify=$(piv_count "$CARD" "verify ok" "$mark")
	bad=$(piv_count "$CARD" "verify fail" "$mark")
	sig=$(piv_count "$CARD" sign "$mark")
	sigslot=$(piv_count "$CARD" "sign $slot" "$mark")
	errline=$(grep -v '^$' "$f.err" | tr '\n' ' ' | sed 's/  */ /g' | cut -c1-300)
	if [ "$rc" != 0 ]; then
		case $c in
		*/pam_p11*)
			# What the module shows before C_Login (pam_p11 looks for the
			# user's key before it logs in), and where pam_p11 was.
			# shellcheck disable=SC2086
			env -i PATH=/usr/bin:/bin ${ENVV[$s]} pkcs11-tool --module "${MOD[$s]}" -O \
				>"$f.objects" 2>&1
			what="pamtester rc $rc"
			[ "$rc" = 139 ] && what="pamtester killed by SIGSEGV"
			if [ -n "$hung" ]; then
				what="pamtester did not exit within 30 s ($hung s of CPU time by then: $(awk -v t="$hung" \
					'BEGIN { print (t >= 15 ? "spinning" : "mostly waiting") }'); killed)"
			fi
			why_not "$c" "$what; the card saw $verify VERIFY and $sig signatures (no PIN was ever sent)$(
				[ -n "$errline" ] && echo "; stderr: $errline")$(bt_summary "$f.bt"); before C_Login the module shows $(grep -c 'Private Key Object' "$f.objects") private key(s) and $(grep -c 'Public Key Object' "$f.objects") public key(s) (pkcs11-tool -O: check/${f##*/}.objects)"
			continue ;;
		esac
		die "$c: the login failed (rc $rc): $(cat "$f.out" "$f.err" | tr '\n' ' ')"
	fi
	[ "$bad" = 0 ] || die "$c: $bad wrong PIN(s) at the card"
	case $s in
	opensc|ykcs11)
		want=1
		[ "$slot" = 9c ] && want=2   # C_Login + the context-specific login
		[ "$verify" = "$want" ] && [ "$sig" = 1 ] && [ "$sigslot" = 1 ] ||
			die "$c: the card saw $verify good VERIFY(s) (want $want), $sig signature(s), $sigslot with $slot (want 1): $f.card"
		;;
	*)
		[ "$verify$sig" = 00 ] || die "$c touched the card"
		;;
	esac
	MEASURE+=("$c")
done
[ "$(tpm_da_counter)" = 0 ] || die "the TPM counted a dictionary-attack failure"
log "checked: ${MEASURE[*]}"
[ "${BENCH_CHECK_ONLY:-0}" = 1 ] && { log "BENCH_CHECK_ONLY=1: the checks only"; exit 0; }

# --- measuring ----------------------------------------------------------------------------
n=${#MEASURE[@]}
for ((r = 0; r < ROUNDS; r++)); do
	args=()
	for ((i = 0; i < n; i++)); do
		c=${MEASURE[$(((i + r) % n))]}
		args+=(-n "$c" "$(login_cmd "$c")")
	done
	log "round $((r + 1))/$ROUNDS: $n commands x $RUNS logins (+$WARMUP warm-up)"
	hyperfine --style none --warmup "$WARMUP" --runs "$RUNS" \
		--export-json "$RAW/tokens.r$r.json" "${args[@]}" >/dev/null ||
		die "hyperfine, round $r"
done
pcsc_release 0
[ "$(tpm_da_counter)" = 0 ] || die "the TPM counted a dictionary-attack failure while measuring"

echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
/usr/bin/python3 "$BENCH/tokens_report.py" "$BENCH" "$OUT" || die "report"
log "done: the tokens section of $BENCH/RESULTS.md; raw data in $OUT/"
