# tests/harness/pcsc.sh — a private PC/SC stack with emulated PIV cards, for
# the integration tests of real tokens (tests/integration/tokens/).
#
# Source it (bash), as root.  It runs a pcscd of its own, in a private mount
# namespace (its /run is DIR/run, so the host's /run/pcscd is never touched)
# and a private network namespace (vpcd listens on 0.0.0.0:PORT; in a fresh
# netns that is reachable from nowhere but the emulators we start inside it).
# Clients find it through PCSCLITE_CSOCK_NAME, which pcsc_start exports.
# piv_card.py (next to this file) plays the cards; pcsc_client.py is a tiny
# PC/SC client (hold a connection, send raw APDUs).
#
#   pcsc_start DIR                  pcscd + one vpcd reader pair (index 0, 1)
#   pcsc_stop                       stop cards and pcscd; nothing is left running
#   pcsc_has_polkit                 true when this pcscd asks polkit about its
#                                   clients (pcscd 2.x, Debian 13)
#   pcsc_polkit_allow USER...       let USERs through pcscd's polkit check from
#                                   any session, with the rule kubehsm ships
#                                   (conf/50-kubehsm-pcscd.rules.example) for a
#                                   group of this test's own; no-op when
#                                   pcscd has no polkit
#   pcsc_opensc_conf DIR [OPTION...]
#                                   private opensc.conf, exported as OPENSC_CONF.
#                                   reset: disconnect_action = reset
#                                   unblock-unlogged|unblock-context|unblock-so:
#                                   user_pin_unblock_style (how C_SetPIN/InitPIN
#                                   reach RESET RETRY COUNTER)
#   piv_make_ca CADIR               test CA (EC P-256): CADIR/ca.crt, ca.key
#   piv_make_card CARDDIR CN UID [ec|rsa]
#                                   keys + CA-signed certs (subject
#                                   "UID=UID, CN=CN") for the slots in
#                                   $PIV_SLOTS (default "9a 9c"), card.json.
#                                   Env: PIV_PIN (123456) PIV_PUK (12345678)
#                                   PIV_TRIES (3) PIV_PUK_TRIES (3)
#                                   PIV_SERIAL (derived from UID)
#                                   PIV_CA_DIR (default CARDDIR/../ca)
#                                   PIV_ALG_9A, PIV_ALG_9C... per-slot ec|rsa
#                                   PIV_EKU_9C... per-slot extendedKeyUsage
#                                   (9A: clientAuth, 9C/9D: emailProtection)
#                                   PIV_SUBJECT: the whole subject instead
#                                   of /UID=UID/CN=CN (e.g. with an email)
#                                   PIV_SAN: a subjectAltName (email:...)
#   piv_card_start DIR INDEX CARDDIR [piv_card.py options, e.g. --yubikey]
#                                   insert CARDDIR into reader INDEX (0 or 1)
#                                   and wait until pcscd has powered it up
#   piv_card_stop [CARDDIR]         remove one card (default: all cards)
#   piv_reader_name INDEX           the PC/SC name of reader INDEX
#   pcsc_hold INDEX                 keep a PC/SC connection to reader INDEX
#                                   open (shared) until pcsc_release: pcscd
#                                   powers a card off ~0.5-1 s after its last
#                                   client leaves, which wipes PIN state; a
#                                   holder plays "another application"
#   pcsc_release [INDEX]            drop the holder(s)
#   pcsc_apdu INDEX HEX...          raw APDUs to reader INDEX in one PC/SC
#                                   transaction, no OpenSC in between; one
#                                   "DATA SW" line per answer
#   piv_tries CARDDIR               PIN tries left as the card reports them
#                                   (opensc-tool: SELECT + empty VERIFY):
#                                   a number, 0 when blocked, or "verified"
#   piv_count CARDDIR EVENT [FROM]  how many events.log lines are EVENT or
#                                   start with "EVENT " (from line FROM+1)
#   piv_events_mark CARDDIR         current events.log length, for FROM
#
# Env: PIV_CARD_ARGS (extra piv_card.py options for every card),
#      PCSC_READER_NAME (reader FRIENDLYNAME; starts with "Yubico" because
#      ykcs11 ignores every reader whose name does not), PCSC_VPCD_PORT.
#
# With tests/harness/tap.sh sourced first, pcsc_start registers pcsc_stop
# with on_exit; otherwise it installs an EXIT trap if there is none.
#
# pcscd 2.x asks polkit (org.debian.pcsc-lite.access_pcsc, access_card)
# before it serves a client, and with no polkitd refuses every one
# ("Rejected unauthorized PC/SC client").  Its check stays on here, as on a
# real host: pcsc_start runs it beside a system bus and polkitd
# (tests/harness/polkit.sh, which then needs tap.sh) — the ones polkit.sh
# already runs for the test, else a private pair — and pcscd, which looks
# for the bus at its standard path, finds it at /run/dbus of its own /run.
# Root is always authorised; other users only with a rule
# (pcsc_polkit_allow).  pcscd 1.9.9 (Debian 12) has no polkit and rejects
# --disable-polkit.

PIV_HARNESS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PIV_CARD_PY=${PIV_CARD_PY:-$PIV_HARNESS_DIR/piv_card.py}
PIV_CLIENT_PY=${PIV_CLIENT_PY:-$PIV_HARNESS_DIR/pcsc_client.py}
PIV_PYTHON=${PIV_PYTHON:-/usr/bin/python3}
PCSC_READER_NAME=${PCSC_READER_NAME:-Yubico Virtual PIV}
# Any port will do: nothing else lives in pcscd's network namespace.
PCSC_VPCD_PORT=${PCSC_VPCD_PORT:-35963}
PCSC_VPCD_DRIVER=${PCSC_VPCD_DRIVER:-/usr/lib/pcsc/drivers/serial/libifdvpcd.so}

# Sourced here, not where it is first needed: inside a function its
# declarations would be that function's locals.
declare -F polkit_start >/dev/null || . "$PIV_HARNESS_DIR/polkit.sh"

PCSC_PID=
PCSC_DIR=
PIV_CARD_DIRS=()
PCSC_HOLD_PIDS=()

_pcsc_die() { echo "pcsc.sh: $*" >&2; return 1; }

# _pcsc_wait SECONDS CMD...: poll CMD every 50 ms until it succeeds.
_pcsc_wait() {
	local deadline=$((SECONDS + $1)); shift
	until "$@"; do
		[ $SECONDS -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# _pcsc_kill PID: TERM, wait up to 5 s, then KILL.  Only ever our own PIDs.
_pcsc_kill() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

_pcsc_readers_up() {
	[ -S "$PCSC_DIR/run/pcscd/pcscd.comm" ] || return 1
	local out
	out=$(opensc-tool -l 2>/dev/null) || return 1
	grep -qF "$PCSC_READER_NAME 00 00" <<<"$out" &&
		grep -qF "$PCSC_READER_NAME 00 01" <<<"$out"
}

pcsc_has_polkit() {
	if [ -z "${_PCSC_POLKIT:-}" ]; then
		_PCSC_POLKIT=0
		# Built with polkit: the option exists, and so do its actions.
		if pcscd --help 2>&1 | grep -q -- '--disable-polkit' &&
		   [ -f /usr/share/polkit-1/actions/org.debian.pcsc-lite.policy ]; then
			_PCSC_POLKIT=1
		fi
	fi
	[ "$_PCSC_POLKIT" = 1 ]
}

# _PCSC_BUSDIR: the directory of the system bus socket pcscd is to use (bus
# and polkitd started if the test has none yet).  Not in a subshell: the
# daemons polkit_start starts are stopped at exit through its variables.
_pcsc_polkit_up() {
	if ! declare -F on_exit >/dev/null; then
		_pcsc_die "pcscd asks polkit: source tests/harness/tap.sh first"
		return 1
	fi
	polkit_need
	if [ -z "${POLKIT_BUS_ADDRESS:-}" ]; then
		polkit_start || { _pcsc_die "no polkitd for pcscd"; return 1; }
	fi
	case $POLKIT_BUS_ADDRESS in
	unix:path=*/system_bus_socket) ;;
	*) _pcsc_die "bus $POLKIT_BUS_ADDRESS: not a system_bus_socket path"; return 1 ;;
	esac
	local sock=${POLKIT_BUS_ADDRESS#unix:path=}
	_PCSC_BUSDIR=${sock%/system_bus_socket}
}

pcsc_polkit_allow() {
	pcsc_has_polkit || return 0
	local group=khpcsc$$ user rule
	if ! getent group "$group" >/dev/null; then
		groupadd "$group" || return 1
		on_exit "groupdel '$group'"
	fi
	for user in "$@"; do
		usermod -a -G "$group" "$user" || return 1
	done
	[ -z "${_PCSC_RULE:-}" ] || return 0
	# The shipped example, scoped to this test's group (polkitd reads every
	# rules file on the machine).
	rule=$(sed -e "s/\"kubehsm-card\"/\"$group\"/g" \
		"$KH_SRCDIR/conf/50-kubehsm-pcscd.rules.example") || return 1
	grep -qF "\"$group\"" <<<"$rule" ||
		{ _pcsc_die "the example rule names no group \"kubehsm-card\""; return 1; }
	polkit_add_rule kubehsm-pcscd "$rule" || return 1
	_PCSC_RULE=1
}

pcsc_start() {
	local dir=$1 busdir=
	[ -n "$dir" ] || { _pcsc_die "usage: pcsc_start DIR"; return 1; }
	[ -z "$PCSC_PID" ] || { _pcsc_die "pcscd already running ($PCSC_PID)"; return 1; }
	[ "$(id -u)" -eq 0 ] || { _pcsc_die "needs root (namespaces)"; return 1; }
	mkdir -p "$dir/run" "$dir/readers" || return 1
	PCSC_DIR=$(cd "$dir" && pwd)
	# Listen mode ("/dev/null:PORT"): vpcd waits for the emulators on PORT
	# (slot 0) and PORT+1 (slot 1).  Reversed mode crashes pcscd.
	cat >"$PCSC_DIR/readers/vpcd" <<-EOF
	FRIENDLYNAME "$PCSC_READER_NAME"
	DEVICENAME   /dev/null:$PCSC_VPCD_PORT
	LIBPATH      $PCSC_VPCD_DRIVER
	EOF
	if pcsc_has_polkit; then
		_pcsc_polkit_up || return 1
		busdir=$_PCSC_BUSDIR
	fi
	# pcscd ignores PCSCLITE_CSOCK_NAME and always serves /run/pcscd, so it
	# gets a /run of its own, with the bus's directory as its /run/dbus
	# when it asks polkit.  unshare, sh and env exec, so $! is pcscd.
	# shellcheck disable=SC2016  # $1 and $2 are expanded by the inner sh
	unshare -m -n --propagation private -- /bin/sh -c \
		'ip link set lo up &&
		 if [ -n "$2" ]; then
			mkdir -p "$1/run/dbus" && mount --bind "$2" "$1/run/dbus" || exit 1
		 fi &&
		 mount --rbind "$1/run" /run &&
		 exec env DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/dbus/system_bus_socket \
			pcscd --foreground --info --config "$1/readers"' \
		sh "$PCSC_DIR" "$busdir" >"$PCSC_DIR/pcscd.log" 2>&1 &
	PCSC_PID=$!
	echo "$PCSC_PID" >"$PCSC_DIR/pcscd.pid"
	export PCSCLITE_CSOCK_NAME=$PCSC_DIR/run/pcscd/pcscd.comm
	export PCSC_DIR PCSC_PID PCSC_VPCD_PORT
	if declare -F on_exit >/dev/null; then
		on_exit pcsc_stop
	elif [ -z "$(trap -p EXIT)" ]; then
		trap pcsc_stop EXIT
	fi
	if ! _pcsc_wait 10 _pcsc_readers_up; then
		_pcsc_die "pcscd did not come up; log:"
		cat "$PCSC_DIR/pcscd.log" >&2
		pcsc_stop
		return 1
	fi
}

pcsc_stop() {
	pcsc_release
	piv_card_stop
	if [ -n "$PCSC_PID" ]; then
		_pcsc_kill "$PCSC_PID"
		rm -f "$PCSC_DIR/pcscd.pid"
	fi
	PCSC_PID=
	return 0
}

pcsc_opensc_conf() {
	local dir=$1 opt style=
	shift
	local reset=0
	for opt in "$@"; do
		case $opt in
		reset)            reset=1 ;;
		unblock-unlogged) style=set_pin_in_unlogged_session ;;
		unblock-context)  style=set_pin_in_specific_context ;;
		unblock-so)       style=init_pin_in_so_session ;;
		*) _pcsc_die "pcsc_opensc_conf: unknown option '$opt'"; return 1 ;;
		esac
	done
	mkdir -p "$dir" || return 1
	{
		echo "app default {"
		# No on-disk cache: every run must talk to the card.
		echo "	framework pkcs15 { use_file_caching = no; }"
		if [ $reset = 1 ]; then
			# OpenSC 0.23 sends nothing on C_Logout; only a reset at
			# disconnect drops the card's PIN state.
			echo "	reader_driver pcsc { disconnect_action = reset; }"
		fi
		if [ -n "$style" ]; then
			# Without it OpenSC's C_SetPIN never sends RESET RETRY COUNTER.
			echo "	pkcs11 { user_pin_unblock_style = $style; }"
		fi
		echo "}"
	} >"$dir/opensc.conf"
	export OPENSC_CONF=$dir/opensc.conf
}

piv_reader_name() { printf '%s 00 %02X\n' "$PCSC_READER_NAME" "$1"; }

pcsc_hold() {
	local idx=$1 ready=$PCSC_DIR/hold.$1.ready pid
	rm -f "$ready"
	"$PIV_PYTHON" "$PIV_CLIENT_PY" hold "$(piv_reader_name "$idx")" "$ready" &
	pid=$!
	PCSC_HOLD_PIDS+=("$idx:$pid")
	if ! _pcsc_wait 10 test -e "$ready"; then
		_pcsc_die "could not hold reader $idx"
		pcsc_release "$idx"
		return 1
	fi
}

pcsc_apdu() {
	local idx=$1
	shift
	"$PIV_PYTHON" "$PIV_CLIENT_PY" apdu "$(piv_reader_name "$idx")" "$@"
}

pcsc_release() {
	local h keep=()
	for h in "${PCSC_HOLD_PIDS[@]}"; do
		if [ -n "${1:-}" ] && [ "${h%%:*}" != "$1" ]; then
			keep+=("$h")
			continue
		fi
		_pcsc_kill "${h#*:}"
		rm -f "$PCSC_DIR/hold.${h%%:*}.ready"
	done
	PCSC_HOLD_PIDS=("${keep[@]}")
	return 0
}

# ------------------------------------------------------------------ cards

piv_make_ca() {
	local ca=$1
	[ -f "$ca/ca.crt" ] && return 0
	mkdir -p "$ca" || return 1
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
		-out "$ca/ca.key" 2>/dev/null || return 1
	openssl req -new -x509 -key "$ca/ca.key" -subj "/CN=kubehsm PIV test CA" \
		-days 3650 -sha256 -out "$ca/ca.crt" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" || return 1
}

# _piv_key FILE ec|rsa
_piv_key() {
	case $2 in
	ec)  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" ;;
	rsa) openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" ;;
	*)   _pcsc_die "key type must be ec or rsa, not '$2'" ;;
	esac 2>/dev/null
}

piv_make_card() {
	local card=$1 cn=$2 uid=$3 alg=${4:-ec}
	if [ -z "$card" ] || [ -z "$cn" ] || [ -z "$uid" ]; then
		_pcsc_die "usage: piv_make_card CARDDIR CN UID [ec|rsa]"
		return 1
	fi
	local ca=${PIV_CA_DIR:-$card/../ca}
	piv_make_ca "$ca" || return 1
	mkdir -p "$card" || return 1
	chmod 0700 "$card"
	local serial=${PIV_SERIAL:-$((10000000 + $(printf %s "$uid" | cksum | cut -d' ' -f1) % 90000000))}
	local slot var slot_alg ku eku ext
	for slot in ${PIV_SLOTS:-9a 9c}; do
		var=PIV_ALG_${slot^^}
		slot_alg=${!var:-$alg}
		_piv_key "$card/$slot.key" "$slot_alg" || return 1
		case $slot in
		9a) ku=digitalSignature; eku=clientAuth ;;
		9c) ku=digitalSignature,nonRepudiation; eku=emailProtection ;;
		9d) ku=keyEncipherment,keyAgreement; eku=emailProtection ;;
		*)  ku=digitalSignature; eku=clientAuth ;;
		esac
		var=PIV_EKU_${slot^^}
		eku=${!var:-$eku}
		[ "$slot_alg" = ec ] && [ "$slot" = 9d ] && ku=keyAgreement
		ext=$card/$slot.ext
		printf '%s\n' "basicConstraints=critical,CA:FALSE" \
			"keyUsage=critical,$ku" "extendedKeyUsage=$eku" \
			"subjectKeyIdentifier=hash" "authorityKeyIdentifier=keyid" >"$ext"
		[ -n "${PIV_SAN:-}" ] && echo "subjectAltName=$PIV_SAN" >>"$ext"
		openssl req -new -key "$card/$slot.key" -subj "${PIV_SUBJECT:-/UID=$uid/CN=$cn}" \
			-out "$card/$slot.csr" 2>/dev/null &&
		openssl x509 -req -in "$card/$slot.csr" -CA "$ca/ca.crt" -CAkey "$ca/ca.key" \
			-CAcreateserial -days 365 -sha256 -extfile "$ext" \
			-out "$card/$slot.crt" 2>/dev/null || return 1
		rm -f "$card/$slot.csr" "$ext"
	done
	cat >"$card/card.json" <<-EOF
	{"pin": "${PIV_PIN:-123456}", "puk": "${PIV_PUK:-12345678}",
	 "serial": $serial, "tries": ${PIV_TRIES:-3}, "puk_tries": ${PIV_PUK_TRIES:-3}}
	EOF
	rm -f "$card/state.json" "$card/events.log"
	: >"$card/events.log"
}

_piv_lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }

_piv_powered_since() { # CARDDIR MARK PID
	kill -0 "$3" 2>/dev/null || return 0     # died: stop waiting
	tail -n +"$(($2 + 1))" "$1/events.log" 2>/dev/null | grep -qx 'power-on'
}

piv_card_start() {
	local dir=$1 idx=$2 card=$3
	shift 3 || { _pcsc_die "usage: piv_card_start DIR INDEX CARDDIR [options]"; return 1; }
	[ -n "$PCSC_PID" ] || { _pcsc_die "pcsc_start first"; return 1; }
	case $idx in 0|1) ;; *) _pcsc_die "reader index must be 0 or 1"; return 1 ;; esac
	card=$(cd "$card" && pwd) || return 1
	local mark pid other
	# vpcd serves one connection per port; a second emulator would sit
	# unnoticed in its accept backlog.  One card per reader.
	for other in "${PIV_CARD_DIRS[@]}"; do
		if [ "$(cat "$other/reader" 2>/dev/null)" = "$idx" ]; then
			_pcsc_die "reader $idx holds $other; piv_card_stop it first"
			return 1
		fi
	done
	mark=$(_piv_lines "$card/events.log")
	# The emulator joins pcscd's network namespace only (not its mount
	# namespace), so it reads CARDDIR through the normal file system.
	# nsenter execs, so $! is the emulator.
	# shellcheck disable=SC2086
	nsenter -t "$PCSC_PID" -n -- "$PIV_PYTHON" "$PIV_CARD_PY" \
		--port $((PCSC_VPCD_PORT + idx)) --dir "$card" ${PIV_CARD_ARGS:-} "$@" \
		2>>"$card/card.log" &
	pid=$!
	echo "$pid" >"$card/card.pid"
	echo "$idx" >"$card/reader"
	PIV_CARD_DIRS+=("$card")
	# Ready when pcscd has seen the card and powered it up.
	if ! _pcsc_wait 10 _piv_powered_since "$card" "$mark" "$pid" ||
		! kill -0 "$pid" 2>/dev/null; then
		_pcsc_die "card $card did not come up; log:"
		tail -n 20 "$card/card.log" >&2
		piv_card_stop "$card"
		return 1
	fi
}

piv_card_stop() {
	local card pid keep=()
	for card in "${PIV_CARD_DIRS[@]}"; do
		if [ -n "${1:-}" ] && [ "$card" != "$(cd "$1" && pwd)" ]; then
			keep+=("$card")
			continue
		fi
		pid=$(cat "$card/card.pid" 2>/dev/null)
		_pcsc_kill "$pid"
		rm -f "$card/card.pid"
	done
	PIV_CARD_DIRS=("${keep[@]}")
	return 0
}

piv_tries() {
	local card=$1 idx out
	idx=$(cat "$card/reader") || return 1
	# opensc-tool prints "Received (SW1=0x63, SW2=0xC2)" for each APDU.
	out=$(opensc-tool -r "$idx" \
		-s '00 A4 04 00 09 A0 00 00 03 08 00 00 10 00' \
		-s '00 20 00 80' 2>&1) || { echo "$out" >&2; return 1; }
	out=$(grep -o 'SW1=0x[0-9A-Fa-f]*, SW2=0x[0-9A-Fa-f]*' <<<"$out" | tail -n 1)
	case $out in
	"SW1=0x90, SW2=0x00") echo verified ;;
	"SW1=0x69, SW2=0x83") echo 0 ;;
	"SW1=0x63, SW2=0xC"?) echo $((16#${out: -1})) ;;
	*) _pcsc_die "unexpected VERIFY answer: $out"; return 1 ;;
	esac
}

piv_events_mark() { _piv_lines "$1/events.log"; }

piv_count() {
	local card=$1 ev=$2 from=${3:-0}
	tail -n +"$((from + 1))" "$card/events.log" |
		awk -v e="$ev" '$0 == e || index($0, e " ") == 1 { n++ } END { print n + 0 }'
}
