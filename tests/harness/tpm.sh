# tests/harness/tpm.sh — a private software TPM 2.0 and tpm2-pkcs11 token
# store for the integration tests of real tokens (tests/integration/tokens/).
# Source it from bash, after tests/harness/tap.sh; register tpm_stop with
# on_exit (it installs no trap of its own).
#
# Everything lives under one directory and dies with it: the TPM's NVRAM,
# its sockets, a private D-Bus bus, the resource manager, the token store,
# the PIN files.  No /etc file, no system bus, no TCP port is involved
# (unless --tcp is asked for), and tpm_stop leaves no process behind.
#
# Why three daemons: this kernel has no /dev/tpmrm0, and tpm2-pkcs11 talking
# to swtpm directly runs out of TPM object slots ("0x902 out of memory for
# object contexts") when it creates tokens.  tpm2-abrmd is the user-space
# resource manager; it is reached over D-Bus, so it gets a bus of its own.
#
#   tpm_start DIR [--max-tries N] [--recovery-time S] [--lockout-recovery S]
#                 [--max-connections N] [--shared] [--tcp]
#       swtpm + dbus-daemon + tpm2-abrmd, DA policy set and cleared, store
#       initialised; exports the client variables and writes them to DIR/env.
#       --shared lets other uids use the TPM and the store (see below).
#       --max-connections: tpm2-abrmd's cap (default 27, at most 100).  Every
#       process that loads tpm2-pkcs11 holds one connection per token in the
#       store plus one, for as long as the module is loaded.
#   tpm_stop                            stop everything, check nothing is left
#   tpm_env [--libconfig]               the client variables (KEY=VALUE lines,
#                                       or a kubehsm `pkcs11.env` group)
#   tpm_add_token LABEL SOPIN PIN       new token (PINs kept in DIR/tokens, 0600)
#   tpm_add_key LABEL ID TYPE [KEYLABEL]
#                                       key pair generated in the TPM; ID is hex
#                                       and becomes CKA_ID bytes; TYPE ecc256 |
#                                       rsa2048; KEYLABEL defaults to LABEL
#   tpm_pubkey LABEL ID                 print the path of the key's public PEM
#   tpm_cert LABEL ID CA_PEM CA_KEY OUT SUBJECT [--ca] [--days N] [--eku E|none]
#                                       certificate for a TPM-resident key,
#                                       signed by a CA held in files
#   tpm_import_cert LABEL ID CERT.pem [CERTLABEL]
#   tpm_issuer_token LABEL PIN CA_PEM CA_KEY
#                                       host issuer: EC P-256 key "issuer" id 01,
#                                       CA:TRUE certificate DIR/certs/LABEL.pem,
#                                       PIN in DIR/tokens/LABEL.pin (0600)
#   tpm_user_token LABEL PIN CA_PEM CA_KEY SUBJECT [ecc256|rsa2048]
#                                       user token: key + clientAuth certificate
#                                       DIR/certs/LABEL.pem, id 01, label LABEL
#   tpm_p11tool ARGS...                 pkcs11-tool on the tpm2-pkcs11 module
#   tpm_da_counter                      TPM2_PT_LOCKOUT_COUNTER (decimal)
#   tpm_da_info                         counter, max tries, recovery, inLockout
#   tpm_da_reset                        clear the lockout (empty lockout auth)
#   tpm_da_policy MAX RECOVERY [LOCKOUT_RECOVERY]
#                                       change the DA policy of the running TPM
#   tpm_restart [--disorderly]          power-cycle the TPM (state kept)
#   tpm_abrmd_stop / tpm_abrmd_start    stop / restart the resource manager only
#   tpm_tcti_direct                     TCTI string reaching swtpm without abrmd
#   tpm_pids                            pids of our swtpm, dbus-daemon, tpm2-abrmd
#
# --shared: the TPM is used by other uids (a test user logging in, the
# kubehsm CLI).  The bus then admits any uid and DIR/run and DIR/store
# become reachable; tpm2-pkcs11 must also create a lock file next to its
# database at every C_Initialize, so DIR/store is made sticky and
# world-writable (like /tmp) — a test convenience, never a deployment
# model (see REPORT.md "permissions").  PIN files stay root-only.
#
# PINs reach pkcs11-tool through its `env:` form, never argv; tpm2_ptool
# is not used for anything that takes a PIN (it only accepts PINs in argv).

TPM_MODULE=${TPM_MODULE:-/usr/lib/x86_64-linux-gnu/pkcs11/libtpm2_pkcs11.so}

# The variables a tpm2-pkcs11 client needs; tpm_start exports them and
# tpm_stop puts back what was there before.
_TPM_CLIENT_VARS=(TPM2_PKCS11_STORE TPM2_PKCS11_TCTI DBUS_SESSION_BUS_ADDRESS
	TSS2_LOG TPM2_PKCS11_LOG_LEVEL)
_TPM_ALL_VARS=("${_TPM_CLIENT_VARS[@]}" TPM2TOOLS_TCTI)

_tpm_die() { echo "tpm.sh: $*" >&2; return 1; }

# _tpm_q CMD...: run quietly, show the output only when it fails.
_tpm_q() {
	local o
	if ! o=$("$@" 2>&1); then
		echo "tpm.sh: failed: $*" >&2
		echo "$o" >&2
		return 1
	fi
}

# _tpm_wait SECONDS CMD...: poll CMD until it succeeds.
_tpm_wait() {
	local limit=$1 i
	shift
	for ((i = 0; i < limit * 20; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

# A pid is ours only if it is alive and its command line names our
# directory: a stale pid file must never make us signal a recycled pid.
_tpm_is_ours() {
	local pid=$1
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] &&
		{ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF -- "$TPM_DIR/"
}

# Our daemons: the three programs, by name, whose command line names DIR.
# (By name, so that a test process that merely mentions DIR in its
# arguments is never taken for one of ours.)
tpm_pids() {
	local name pid
	[ -n "${TPM_DIR:-}" ] || return 1
	for name in swtpm dbus-daemon tpm2-abrmd; do
		for pid in $(pgrep -x "$name"); do
			_tpm_is_ours "$pid" && echo "$pid"
		done
	done
	return 0
}

_tpm_need() {
	local c
	for c in swtpm dbus-daemon tpm2-abrmd tpm2_getcap tpm2_dictionarylockout \
		tpm2_ptool pkcs11-tool openssl pgrep; do
		command -v "$c" >/dev/null 2>&1 || _tpm_die "needs '$c'" || return 1
	done
	[ -r "$TPM_MODULE" ] || _tpm_die "no tpm2-pkcs11 module at $TPM_MODULE" || return 1
	# tpm2-abrmd ships without its client side: the TCTI is its own package.
	ldconfig -p | grep -q 'libtss2-tcti-tabrmd\.so\.0' ||
		_tpm_die "needs libtss2-tcti-tabrmd0 (the tabrmd TCTI)"
}

# Two consecutive free localhost ports (swtpm's control port is server + 1).
_tpm_free_ports() {
	local p i
	for ((i = 0; i < 50; i++)); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null &&
			! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1))") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# _tpm_spawn NAME CMD...: start a daemon detached from the calling shell.
# It is not our child (the subshell that started it is gone), so a test's
# bare `wait` cannot hang on it and no job-control notice mentions it;
# tpm_stop finds it by its pid file and its command line.
_tpm_spawn() {
	local name=$1
	shift
	( "$@" </dev/null >>"$TPM_DIR/run/$name.log" 2>&1 &
	  echo $! >"$TPM_DIR/run/$name.pid" )
}

# Start swtpm on DIR/state, listening where DIR/run/swtpm.tcti says.
# not-need-init + startup-clear: swtpm powers on and sends TPM2_Startup(CLEAR)
# itself, as firmware would.
_tpm_swtpm_start() {
	local run=$TPM_DIR/run tcti port sock
	tcti=$(cat "$run/swtpm.tcti")
	case $tcti in
	swtpm:path=*)
		sock=(--server "type=unixio,path=$run/swtpm.sock,mode=0600"
			--ctrl "type=unixio,path=$run/swtpm.sock.ctrl,mode=0600") ;;
	*)
		port=${tcti##*port=}
		sock=(--server "type=tcp,port=$port,bindaddr=127.0.0.1"
			--ctrl "type=tcp,port=$((port + 1)),bindaddr=127.0.0.1") ;;
	esac
	rm -f "$run/swtpm.ready"
	# swtpm writes its own pid file once its sockets listen: that is the
	# readiness signal.
	_tpm_spawn swtpm swtpm socket --tpm2 --tpmstate "dir=$TPM_DIR/state,mode=0600" \
		"${sock[@]}" --flags not-need-init,startup-clear \
		--pid "file=$run/swtpm.ready" --log "file=$run/swtpm.log,level=1"
	_tpm_wait 10 test -s "$run/swtpm.ready" ||
		_tpm_die "swtpm did not start: $(tail -5 "$run/swtpm.log" 2>/dev/null)"
}

_tpm_tools_ready() { tpm2_getcap properties-fixed >/dev/null 2>&1; }

tpm_start() {
	local dir=$1 tries=3 recovery=600 lrecovery=10 shared=0 tcp=0 maxconn=27
	local swtpm_tcti run port v i
	[ -n "$dir" ] || _tpm_die "usage: tpm_start DIR [options]" || return 1
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--max-tries)        tries=$2; shift ;;
		--recovery-time)    recovery=$2; shift ;;
		--lockout-recovery) lrecovery=$2; shift ;;
		--max-connections)  maxconn=$2; shift ;;
		--shared)           shared=1 ;;
		--tcp)              tcp=1 ;;
		*) _tpm_die "tpm_start: unknown option '$1'"; return 1 ;;
		esac
		shift
	done
	_tpm_need || return 1
	if [ -n "${TPM_DIR:-}" ] && [ -n "$(tpm_pids)" ]; then
		_tpm_die "a TPM is already running in $TPM_DIR (tpm_stop first)"
		return 1
	fi
	mkdir -p "$dir" && dir=$(cd "$dir" && pwd) || return 1
	# A TPM's NVRAM and a store belong together; never mix a new one with
	# an old one.
	[ ! -e "$dir/state/tpm2-00.permall" ] && [ ! -e "$dir/store/tpm2_pkcs11.sqlite3" ] ||
		_tpm_die "$dir already holds a TPM; give tpm_start a new directory" || return 1
	TPM_DIR=$dir
	run=$dir/run
	mkdir -p "$dir/state" "$run" "$dir/store" "$dir/tokens" "$dir/keys" "$dir/certs" || return 1
	echo "$maxconn" >"$run/abrmd.maxconn"
	# NVRAM and PINs are secrets of the test; sockets and the store are
	# opened up only when other uids must use them.
	chmod 0700 "$dir/state" "$dir/tokens"
	if [ $shared = 1 ]; then
		chmod 0711 "$dir" "$run"
		chmod 1777 "$dir/store"
		chmod 0755 "$dir/keys" "$dir/certs"
	else
		chmod 0700 "$run" "$dir/store"
	fi

	# Save what the caller had, to restore it at tpm_stop.
	: >"$run/saved-env"
	for v in "${_TPM_ALL_VARS[@]}"; do
		if [ -n "${!v+x}" ]; then
			printf 'export %s=%q\n' "$v" "${!v}" >>"$run/saved-env"
		else
			printf 'unset %s\n' "$v" >>"$run/saved-env"
		fi
	done

	# --- 1. swtpm: a TPM 2.0 whose state is DIR/state ---------------------
	# Unix sockets inside a 0700 directory: no other local user can send
	# TPM commands or reset the TPM through the control channel, which any
	# local user could do on a localhost TCP port.  The swtpm TCTI derives
	# the control socket's name as PATH.ctrl.
	swtpm_tcti="swtpm:path=$run/swtpm.sock"
	if [ $tcp = 1 ]; then
		port=$(_tpm_free_ports) || _tpm_die "no free port pair" || return 1
		swtpm_tcti="swtpm:host=127.0.0.1,port=$port"
	fi
	echo "$swtpm_tcti" >"$run/swtpm.tcti"
	_tpm_swtpm_start || { tpm_stop; return 1; }

	# --- 2. a private D-Bus bus for the resource manager -------------------
	# Its own configuration file: the machine's session.conf would pull in
	# service activation and the user's own settings.  EXTERNAL auth means
	# the kernel-reported uid of each client is known to the bus.
	{
		echo '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"'
		echo ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">'
		echo '<busconfig>'
		echo '  <type>session</type>'
		echo "  <listen>unix:path=$run/bus.sock</listen>"
		echo '  <auth>EXTERNAL</auth>'
		echo '  <policy context="default">'
		echo '    <allow send_destination="*" eavesdrop="true"/>'
		echo '    <allow eavesdrop="true"/>'
		echo '    <allow own="*"/>'
		# A session bus admits only its owner's uid unless told otherwise.
		[ $shared = 1 ] && echo '    <allow user="*"/>'
		echo '  </policy>'
		echo '</busconfig>'
	} >"$run/bus.conf"
	_tpm_spawn dbus dbus-daemon --config-file="$run/bus.conf" --nofork --nopidfile
	if ! _tpm_wait 10 test -S "$run/bus.sock"; then
		_tpm_die "dbus-daemon did not start: $(cat "$run/dbus.log")"
		tpm_stop
		return 1
	fi
	# No guid: a plain path is what a policy file will carry, and clients
	# do not need it.
	export DBUS_SESSION_BUS_ADDRESS="unix:path=$run/bus.sock"

	# --- 3. tpm2-abrmd on that bus, in front of swtpm ---------------------
	export TPM2_PKCS11_STORE=$dir/store
	export TPM2_PKCS11_TCTI=tabrmd:bus_type=session
	export TPM2TOOLS_TCTI=tabrmd:bus_type=session
	# tpm2-tss logs warnings (WARNING:esys:...) on stderr; tpm2-pkcs11
	# its own at level 1.  Errors still print at these levels.
	export TSS2_LOG=all+NONE
	export TPM2_PKCS11_LOG_LEVEL=0
	tpm_abrmd_start || { tpm_stop; return 1; }

	# --- 4. dictionary-attack policy, then a clean slate -------------------
	# The lockout hierarchy's auth is empty, so tests can always reset.
	_tpm_q tpm2_dictionarylockout --setup-parameters --max-tries="$tries" \
		--recovery-time="$recovery" --lockout-recovery-time="$lrecovery" || { tpm_stop; return 1; }
	_tpm_q tpm2_dictionarylockout --clear-lockout || { tpm_stop; return 1; }

	# --- 5. the token store: a persistent primary key, pid 1 --------------
	_tpm_q tpm2_ptool init --path "$dir/store" || { tpm_stop; return 1; }
	[ $shared = 1 ] && chmod 0644 "$dir/store/tpm2_pkcs11.sqlite3"

	tpm_env >"$dir/env"
	chmod 0644 "$dir/env"
	return 0
}

# The resource manager alone can be stopped and started again, to test
# what clients do when it is gone.  --flush-all: a TPM left with loaded
# objects (by an earlier abrmd or a direct client) would start short of
# slots.  --allow-root only because tests run as root.
tpm_abrmd_start() {
	local run=$TPM_DIR/run asroot=()
	[ "$(id -u)" = 0 ] && asroot=(--allow-root)
	# Started through a link inside DIR so that its command line names DIR
	# (with --tcp nothing else in it would): that is how tpm_pids and
	# tpm_stop recognise it.
	ln -sf "$(command -v tpm2-abrmd)" "$run/tpm2-abrmd" || return 1
	_tpm_spawn abrmd env DBUS_SESSION_BUS_ADDRESS="unix:path=$run/bus.sock" \
		"$run/tpm2-abrmd" --session "${asroot[@]}" --flush-all \
		--max-connections="$(cat "$run/abrmd.maxconn")" --tcti="$(cat "$run/swtpm.tcti")"
	if ! _tpm_wait 15 _tpm_tools_ready; then
		_tpm_die "tpm2-abrmd did not come up: $(cat "$run/abrmd.log")"
		return 1
	fi
}

tpm_abrmd_stop() { _tpm_kill abrmd; }

# The TCTI string that reaches swtpm directly, bypassing tpm2-abrmd.
tpm_tcti_direct() { cat "$TPM_DIR/run/swtpm.tcti"; }

tpm_env() {
	local v
	if [ "${1:-}" = --libconfig ]; then
		# The group a kubehsm policy carries as pkcs11.env.
		printf 'env = {'
		for v in "${_TPM_CLIENT_VARS[@]}"; do
			local q=${!v//\\/\\\\}
			printf ' %s = "%s";' "$v" "${q//\"/\\\"}"
		done
		printf ' };\n'
		return 0
	fi
	for v in "${_TPM_CLIENT_VARS[@]}"; do printf '%s=%s\n' "$v" "${!v}"; done
}

# _tpm_kill NAME [KILL]: stop one daemon of ours (SIGTERM, SIGKILL after 5 s
# or at once when asked) and wait for it to be gone.
_tpm_kill() {
	local f=$TPM_DIR/run/$1.pid pid
	[ -r "$f" ] || return 0
	pid=$(cat "$f")
	_tpm_is_ours "$pid" || { rm -f "$f"; return 0; }
	if [ "${2:-}" = KILL ]; then
		kill -KILL "$pid" 2>/dev/null
	else
		kill -TERM "$pid" 2>/dev/null
	fi
	_tpm_wait 5 eval "! _tpm_is_ours $pid" || kill -KILL "$pid" 2>/dev/null
	# Once it has exited, give init a moment to reap it, so that a check
	# by process name (pgrep swtpm) does not find its zombie.
	_tpm_wait 3 eval "[ ! -e /proc/$pid ]"
	rm -f "$f"
}

tpm_stop() {
	local left
	[ -n "${TPM_DIR:-}" ] || return 0
	_tpm_kill abrmd
	# An orderly TPM2_Shutdown before swtpm goes: a TPM that loses power
	# after a DA-protected authorisation (any PIN login) counts one
	# dictionary-attack failure at its next start (measured), which would
	# surprise a test that restarts it.  Sent directly, abrmd is gone.
	[ -r "$TPM_DIR/run/swtpm.tcti" ] &&
		TPM2TOOLS_TCTI=$(tpm_tcti_direct) tpm2_shutdown >/dev/null 2>&1
	_tpm_kill dbus
	_tpm_kill swtpm
	[ -r "$TPM_DIR/run/saved-env" ] && . "$TPM_DIR/run/saved-env"
	left=$(tpm_pids | tr '\n' ' ')
	if [ -n "$left" ]; then
		_tpm_die "still running for $TPM_DIR: $left"
		return 1
	fi
	return 0
}

# tpm_restart [--disorderly]: power-cycle the TPM, keeping its state (a
# reboot of the host).  --disorderly cuts the power without TPM2_Shutdown.
tpm_restart() {
	_tpm_kill abrmd
	if [ "${1:-}" = --disorderly ]; then
		_tpm_kill swtpm KILL
	else
		TPM2TOOLS_TCTI=$(tpm_tcti_direct) _tpm_q tpm2_shutdown || return 1
		_tpm_kill swtpm
	fi
	_tpm_swtpm_start && tpm_abrmd_start
}

tpm_p11tool() { pkcs11-tool --module "$TPM_MODULE" "$@"; }

_tpm_pin() { cat "$TPM_DIR/tokens/$1.pin"; }

# Slot id of the spare, uninitialised slot tpm2-pkcs11 always offers.
_tpm_empty_slot() {
	tpm_p11tool -L 2>/dev/null | awk '
		/^Slot [0-9]+ \(0x[0-9a-f]+\):/ { id = $3; gsub(/[():]/, "", id) }
		/token state: +uninitialized/ { print id; exit }'
}

tpm_add_token() {
	local label=$1 so=$2 pin=$3 slot
	[ -n "$label" ] && [ -n "$so" ] && [ -n "$pin" ] ||
		_tpm_die "usage: tpm_add_token LABEL SOPIN PIN" || return 1
	( umask 077
	  printf '%s\n' "$pin" >"$TPM_DIR/tokens/$label.pin"
	  printf '%s\n' "$so" >"$TPM_DIR/tokens/$label.sopin" ) || return 1
	slot=$(_tpm_empty_slot)
	[ -n "$slot" ] || _tpm_die "no uninitialised slot" || return 1
	# C_InitToken + C_InitPIN through the module, the PINs in the
	# environment of one command.  (`tpm2_ptool addtoken` would take them in
	# argv; it also records "pss-sigs-good", without which the token does
	# not advertise the RSA-PSS mechanisms — see REPORT.md: libp11 signs
	# PSS through CKM_RSA_X_509 either way.)
	TPM_SO_PIN=$so _tpm_q tpm_p11tool --slot "$slot" --init-token --label "$label" \
		--so-pin env:TPM_SO_PIN || return 1
	TPM_SO_PIN=$so TPM_PIN=$pin _tpm_q tpm_p11tool --token-label "$label" --login \
		--login-type so --so-pin env:TPM_SO_PIN --init-pin --pin env:TPM_PIN
}

tpm_add_key() {
	local label=$1 id=$2 type=$3 klabel=${4:-$1} kt der
	case $type in
	ecc256|ec)   kt=EC:prime256v1 ;;
	rsa2048|rsa) kt=rsa:2048 ;;
	*) _tpm_die "tpm_add_key: key type '$type' (ecc256 | rsa2048)"; return 1 ;;
	esac
	# pkcs11-tool, not `tpm2_ptool addkey --id`: the latter stores the
	# ASCII of its argument (--id=01 gives CKA_ID 3031).
	TPM_PIN=$(_tpm_pin "$label") _tpm_q tpm_p11tool --token-label "$label" --login \
		--pin env:TPM_PIN --keypairgen --key-type "$kt" --id "$id" --label "$klabel" || return 1
	der=$TPM_DIR/keys/$label-$id.pub.der
	_tpm_q tpm_p11tool --token-label "$label" --read-object --type pubkey --id "$id" -o "$der" &&
		_tpm_q openssl pkey -pubin -inform DER -in "$der" -out "$TPM_DIR/keys/$label-$id.pub.pem"
}

tpm_pubkey() {
	local f=$TPM_DIR/keys/$1-$2.pub.pem
	[ -r "$f" ] || _tpm_die "no public key for $1 id $2" || return 1
	echo "$f"
}

tpm_cert() {
	local label=$1 id=$2 capem=$3 cakey=$4 out=$5 subj=$6 ca=0 days=365 eku=clientAuth pub ext
	[ $# -ge 6 ] || _tpm_die "usage: tpm_cert LABEL ID CA_PEM CA_KEY OUT SUBJECT [--ca] [--days N] [--eku E|none]" || return 1
	shift 6
	while [ $# -gt 0 ]; do
		case $1 in
		--ca)   ca=1 ;;
		--days) days=$2; shift ;;
		--eku)  eku=$2; shift ;;
		*) _tpm_die "tpm_cert: unknown option '$1'"; return 1 ;;
		esac
		shift
	done
	pub=$(tpm_pubkey "$label" "$id") || return 1
	ext=$out.ext
	{
		if [ $ca = 1 ]; then
			# An issuer that signs leaf certificates and nothing below.
			echo "basicConstraints = critical,CA:TRUE,pathlen:0"
			echo "keyUsage = critical,digitalSignature,keyCertSign,cRLSign"
		else
			echo "basicConstraints = critical,CA:FALSE"
			echo "keyUsage = critical,digitalSignature"
			[ "$eku" = none ] || echo "extendedKeyUsage = $eku"
		fi
		echo "subjectKeyIdentifier = hash"
		echo "authorityKeyIdentifier = keyid"
	} >"$ext"
	# The private key never leaves the TPM: the CA certifies the public
	# key read from the token (-force_pubkey), no request is involved.
	_tpm_q openssl x509 -new -subj "$subj" -force_pubkey "$pub" \
		-CA "$capem" -CAkey "$cakey" -extfile "$ext" -days "$days" -sha256 \
		-set_serial "0x$(openssl rand -hex 16)" -out "$out" || return 1
	rm -f "$ext"
	chmod 0644 "$out"
}

tpm_import_cert() {
	local label=$1 id=$2 pem=$3 clabel=${4:-$1} der
	[ $# -ge 3 ] || _tpm_die "usage: tpm_import_cert LABEL ID CERT.pem [CERTLABEL]" || return 1
	der=$TPM_DIR/certs/$label-$id.der
	_tpm_q openssl x509 -in "$pem" -outform DER -out "$der" || return 1
	TPM_PIN=$(_tpm_pin "$label") _tpm_q tpm_p11tool --token-label "$label" --login \
		--pin env:TPM_PIN --write-object "$der" --type cert --id "$id" --label "$clabel"
}

tpm_issuer_token() {
	local label=$1 pin=$2 capem=$3 cakey=$4
	[ $# -eq 4 ] || _tpm_die "usage: tpm_issuer_token LABEL PIN CA_PEM CA_KEY" || return 1
	tpm_add_token "$label" "$(openssl rand -hex 8)" "$pin" &&
		tpm_add_key "$label" 01 ecc256 issuer &&
		tpm_cert "$label" 01 "$capem" "$cakey" "$TPM_DIR/certs/$label.pem" \
			"/CN=$label issuer" --ca &&
		tpm_import_cert "$label" 01 "$TPM_DIR/certs/$label.pem" issuer
}

tpm_user_token() {
	local label=$1 pin=$2 capem=$3 cakey=$4 subj=$5 type=${6:-ecc256}
	[ $# -ge 5 ] || _tpm_die "usage: tpm_user_token LABEL PIN CA_PEM CA_KEY SUBJECT [TYPE]" || return 1
	tpm_add_token "$label" "$(openssl rand -hex 8)" "$pin" &&
		tpm_add_key "$label" 01 "$type" "$label" &&
		tpm_cert "$label" 01 "$capem" "$cakey" "$TPM_DIR/certs/$label.pem" "$subj" &&
		tpm_import_cert "$label" 01 "$TPM_DIR/certs/$label.pem" "$label"
}

# _tpm_prop NAME: one value of `tpm2_getcap properties-variable`, decimal.
_tpm_prop() {
	local v
	v=$(tpm2_getcap properties-variable 2>/dev/null |
		awk -v k="$1:" '$1 == k { print $2; exit }')
	[ -n "$v" ] || return 1
	printf '%d\n' "$v"
}

tpm_da_counter() { _tpm_prop TPM2_PT_LOCKOUT_COUNTER; }

tpm_da_info() {
	local caps k v
	caps=$(tpm2_getcap properties-variable 2>/dev/null) || return 1
	while read -r k v; do
		case $k in
		TPM2_PT_LOCKOUT_COUNTER:|TPM2_PT_MAX_AUTH_FAIL:|TPM2_PT_LOCKOUT_INTERVAL:|TPM2_PT_LOCKOUT_RECOVERY:|inLockout:)
			printf '%s=%d\n' "${k%:}" "$v" ;;
		esac
	done <<<"$caps"
}

tpm_da_reset() { _tpm_q tpm2_dictionarylockout --clear-lockout; }

# tpm_da_policy MAX_TRIES RECOVERY_S [LOCKOUT_RECOVERY_S]: change the policy
# of a running TPM.  A recovery time of 0 turns DA protection off entirely
# (failures are not even counted): use it only to test that case.
tpm_da_policy() {
	_tpm_q tpm2_dictionarylockout --setup-parameters --max-tries="$1" \
		--recovery-time="$2" --lockout-recovery-time="${3:-10}"
}
