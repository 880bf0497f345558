# tests/harness/logins.sh — the real login programs (sshd, login, su, sudo) for
# integration tests: a private mount namespace, test PAM stacks and sudoers,
# a real OpenSSH sshd on loopback, and the pty driver tests/harness/logindrv.py.
#
# Source it after tests/harness/tap.sh, users.sh and pki.sh, before anything
# else happens: sourcing re-executes the test script once inside a private
# mount namespace (unshare -m --propagation private), so every bind mount
# below is seen by the test's own processes (sshd and its children, su,
# sudo, the users' shells) and by nobody else, and vanishes with the test.
#
#   logins_softhsm            bind $SOFTHSM2_CONF over /etc/softhsm/softhsm2.conf:
#                             sshd's keyboard-interactive auth child gets an
#                             EMPTY environment, so SOFTHSM2_CONF cannot reach it
#   logins_pam SERVICE        the stack on stdin becomes /etc/pam.d/SERVICE
#                             (a private copy of /etc/pam.d is bound over it)
#   logins_kubehsm_stack CONF [keyinit] [base=login|sudo|sudo-i]
#                             print a stack as pam/examples ships it: pam_faillock
#                             around pam_kubehsm (auth, token PIN first), the
#                             password fallback for users without a token,
#                             pam_keyinit (with "keyinit"), pam_kubehsm session,
#                             around Debian's includes (base=login: pam_env as
#                             Debian's sshd, login and su; sudo*: pam_limits)
#   logins_sudoers            the text on stdin is the only file of a private
#                             /etc/sudoers.d
#   logins_passwd USER PW     set USER's password (chpasswd)
#   logins_shim_ctl DIR       bind DIR over tests/probes/p11shim's fixed control
#                             directory (/run/kubehsm-p11shim), where the shim
#                             finds its settings and its "logins" count when
#                             the environment is empty
#   sshd_start                a real sshd whose PAM service is /etc/pam.d/kh-sshd-$$
#                             (named as its OpenSSH wants: sshd_pam_service_option) on three
#                             loopback ports: SSHD_PORT_KBD keyboard-interactive,
#                             SSHD_PORT_PASSWORD password auth only,
#                             SSHD_PORT_PUBKBD publickey,keyboard-interactive.
#                             SSHD_SERVICE, SSHD_LOG (its log).
#   ssh_user_key USER         a client key for USER (authorized_keys), $LOGINS_DIR/USER.key
#   ssh_argv USER kbd|password|pubkbd [ssh options]
#                             SSH_ARGV: the ssh client command line for one
#                             interactive login (one PAM authentication:
#                             NumberOfPasswordPrompts=1)
#   login_open NAME ARGV...   log in with ARGV on a pty and keep the login open
#                             in the background (LOGIN_PIN, LOGIN_PASSWORD,
#                             LOGIN_TRIES in the environment answer prompts);
#                             status 0 once its shell is ready
#   login_run NAME CMD        run CMD in that login, stdin /dev/null; sets $out,
#                             $err, $rc like tap.sh's run
#   login_run_tty NAME CMD    the same with the login's terminal as stdin and
#                             stderr, for a CMD that prompts: answered from
#                             LOGIN_PIN / LOGIN_PASSWORD (else as at login);
#                             $err is what the terminal showed
#   login_close NAME          log out; $rc is the login program's exit status
#   login_once ARGV...        log in, run $LOGIN_CMD (if set), log out: $out,
#                             $err, $rc (201: the login failed, 202: timeout)
#   login_transcript NAME     the terminal transcript of a login (for diag)
#   logins_asan               in a sanitizer build: the ASan runtime reaches
#                             the login programs root starts (see below)
#   logins_preload_begin / logins_preload_end
#                             in a sanitizer build: also the setuid programs
#                             users start in between (su, sudo); no-ops otherwise
#   logins_sanitizer_reports  in a sanitizer build, one assertion: no ASan or
#                             UBSan report from any of them
#   logins_syslog_begin / logins_syslog_end
#                             own /dev/log for a moment; lines in $LOGINS_SYSLOG
#
# Everything is removed when the test exits: sshd, open logins, the
# namespace's mounts.  /run/sshd and /run/kubehsm-p11shim are created empty
# when missing (mount point, sshd's privilege separation directory) and left.

if [ "${KH_LOGINS_NS:-}" != 1 ]; then
	command -v unshare >/dev/null 2>&1 || skip_all "needs unshare (util-linux)"
	[ "$(id -u)" -eq 0 ] || skip_all "needs root (private mount namespace, sshd, PAM stacks)"
	# Start over inside the namespace: drop this run's temp dir and exit trap.
	trap - EXIT
	rm -rf "$KH_TMP"
	export KH_LOGINS_NS=1
	exec unshare --mount --propagation private -- "$BASH" "$0" "$@"
	echo "Bail out! cannot enter a private mount namespace"
	exit 1
fi

LOGINDRV=(/usr/bin/python3 "$KH_SRCDIR/tests/harness/logindrv.py")
LOGINS_DIR=$KH_TMP/logins
mkdir -p -m 0755 "$LOGINS_DIR"
LOGINS_PAMD=
SSHD_SERVICE=kh-sshd-$$

_logins_bail() { echo "Bail out! logins: $*"; exit 1; }

logins_softhsm() {
	[ -n "${SOFTHSM2_CONF:-}" ] || _logins_bail "logins_softhsm: call pki_init first"
	mkdir -p /etc/softhsm
	[ -e /etc/softhsm/softhsm2.conf ] || _logins_bail "no /etc/softhsm/softhsm2.conf to bind over"
	mount --bind "$SOFTHSM2_CONF" /etc/softhsm/softhsm2.conf ||
		_logins_bail "cannot bind the test softhsm2.conf"
}

_logins_pam_init() {
	[ -n "$LOGINS_PAMD" ] && return 0
	LOGINS_PAMD=$LOGINS_DIR/pam.d
	cp -a /etc/pam.d "$LOGINS_PAMD" && mount --bind "$LOGINS_PAMD" /etc/pam.d ||
		_logins_bail "cannot bind a private /etc/pam.d"
}

logins_pam() {
	_logins_pam_init
	cat >"$LOGINS_PAMD/$1" && chmod 0644 "$LOGINS_PAMD/$1"
}

# The lines pam/examples/{sshd,login} ship, around Debian's includes.  base
# sudo / sudo-i mirror Debian's own sudo stacks (no pam_keyinit there: sudo
# shares the invoking login's session keyring).
logins_kubehsm_stack() {
	local conf=$1 keyinit=0 base=login a
	shift
	for a in "$@"; do
		case $a in
		keyinit) keyinit=1 ;;
		base=*) base=${a#base=} ;;
		*) _logins_bail "logins_kubehsm_stack: unknown argument '$a'" ;;
		esac
	done
	echo "auth     requisite  pam_faillock.so preauth"
	echo "auth     [success=done authinfo_unavail=1 default=ignore] $PAM_KUBEHSM config=$conf"
	echo "auth     [default=die] pam_faillock.so authfail"
	echo "@include common-auth"
	echo "account  required   pam_faillock.so"
	echo "@include common-account"
	if [ "$base" = login ]; then echo "session  required  pam_env.so readenv=1"
	else echo "session  required  pam_limits.so"; fi
	[ $keyinit = 1 ] && echo "session  optional  pam_keyinit.so force revoke"
	if [ "$base" = sudo ]; then echo "@include common-session-noninteractive"
	else echo "@include common-session"; fi
	echo "session  optional  $PAM_KUBEHSM config=$conf"
}

logins_sudoers() {
	local d=$LOGINS_DIR/sudoers.d
	if ! mountpoint -q /etc/sudoers.d 2>/dev/null; then
		[ -d /etc/sudoers.d ] || _logins_bail "no /etc/sudoers.d (install sudo)"
		mkdir -p -m 0750 "$d" && mount --bind "$d" /etc/sudoers.d ||
			_logins_bail "cannot bind a private /etc/sudoers.d"
	fi
	{ cat
	  [ "$LOGINS_ASAN" = 0 ] || echo 'Defaults env_keep += "ASAN_OPTIONS UBSAN_OPTIONS"'
	} >"$d/kh-test" && chmod 0440 "$d/kh-test"
	visudo -c -q >/dev/null || _logins_bail "the test sudoers does not parse"
}

logins_passwd() {
	printf '%s:%s\n' "$1" "$2" | chpasswd || _logins_bail "chpasswd $1"
}

logins_shim_ctl() {
	mkdir -p -m 0755 /run/kubehsm-p11shim &&
		mount --bind "$1" /run/kubehsm-p11shim ||
		_logins_bail "cannot bind the p11shim control directory"
}

_logins_free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# In a sanitizer build pam_kubehsm.so (and the p11shim) are ASan-instrumented
# and load only into a process whose first library is the ASan runtime:
#  - programs root starts (sshd, login, su by root) get it through
#    LD_PRELOAD: sshd_start and the driver set it for them ($LOGINS_ASAN_RT);
#  - a setuid program a user starts (su, sudo) ignores LD_PRELOAD: between
#    logins_preload_begin and logins_preload_end this namespace's own
#    /etc/ld.so.preload lists the runtime, so every program started then
#    has it.  Keep those windows short: procps (ps, pkill) deadlocks at
#    start-up with the ASan runtime preloaded.
# Uninstrumented programs leak by ASan's standards, so ASAN_OPTIONS (leak
# checking off, reports to $LOGINS_ASAN_DIR) must reach every process that
# has the runtime: exported here, for the logins through pam_env (the stacks
# read /etc/environment, bound over with these options) and env_keep in the
# test sudoers.  logins_sanitizer_reports asserts that no report was written.
# The host's /etc/ld.so.preload is created empty when missing (the mount
# point) and left so: another test may have it mounted at that moment.
LOGINS_ASAN=0
LOGINS_ASAN_RT=
# What the login programs root starts (sshd, and login or su through the
# driver) preload: the ASan runtime in a sanitizer build (logins_asan), and
# tests/probes/logcap, so that the module's syslog lines reach $KH_MODLOG
# and a failing assertion shows them (tests/harness/tap.sh).  sshd's auth
# child runs PAM with an empty environment: logcap read its file's name
# when sshd started.
LOGINS_PRELOAD=
if [ -f "$KH_LOGCAP" ]; then
	LOGINS_PRELOAD=$KH_LOGCAP
	export KH_LOGCAP_FILE=$KH_MODLOG
fi
LOGINS_ASAN_ENVCMD=()   # `env ASAN_OPTIONS=...`, to put them back after setpriv --reset-env
logins_asan() {
	local d=$LOGINS_DIR/asan
	nm -D "$PAM_KUBEHSM" 2>/dev/null | grep -q __asan_init || return 0
	local asan crypt
	asan=$(readlink -f "$(gcc -print-file-name=libasan.so)")
	crypt=$(readlink -f "$(gcc -print-file-name=libcrypt.so.1)")
	[ -f "$asan" ] && [ -f "$crypt" ] || _logins_bail "libasan.so or libcrypt.so.1 not found"
	# libcrypt too: ASan resolves its crypt() interceptor when it starts, and
	# pam_unix loads libcrypt only later (su would then call a NULL crypt).
	LOGINS_ASAN_RT="$asan $crypt"
	LOGINS_PRELOAD="$LOGINS_ASAN_RT${LOGINS_PRELOAD:+ $LOGINS_PRELOAD}"
	LOGINS_ASAN=1
	LOGINS_ASAN_DIR=$d
	mkdir -p "$d" && chmod 1777 "$d"
	export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$d/report"
	export UBSAN_OPTIONS="print_stacktrace=1:log_path=$d/report"
	{ cat /etc/environment 2>/dev/null
	  echo "ASAN_OPTIONS=$ASAN_OPTIONS"
	  echo "UBSAN_OPTIONS=$UBSAN_OPTIONS"; } >"$LOGINS_DIR/environment"
	{ echo "$asan"; echo "$crypt"; cat /etc/ld.so.preload 2>/dev/null; } >"$LOGINS_DIR/ld.so.preload"
	chmod 0644 "$LOGINS_DIR/ld.so.preload" "$LOGINS_DIR/environment"
	[ -e /etc/environment ] || : >>/etc/environment
	mount --bind "$LOGINS_DIR/environment" /etc/environment ||
		_logins_bail "cannot bind /etc/environment"
	LOGINS_ASAN_ENVCMD=(env "ASAN_OPTIONS=$ASAN_OPTIONS" "UBSAN_OPTIONS=$UBSAN_OPTIONS")
}

logins_preload_begin() {
	[ "$LOGINS_ASAN" = 1 ] || return 0
	mountpoint -q /etc/ld.so.preload && return 0
	[ -e /etc/ld.so.preload ] || : >>/etc/ld.so.preload
	mount --bind "$LOGINS_DIR/ld.so.preload" /etc/ld.so.preload ||
		_logins_bail "cannot bind /etc/ld.so.preload"
	on_exit "logins_preload_end"
}

logins_preload_end() {
	[ "$LOGINS_ASAN" = 1 ] || return 0
	! mountpoint -q /etc/ld.so.preload || umount /etc/ld.so.preload
}

# One TAP line in a sanitizer build: no ASan/UBSan report from any program.
logins_sanitizer_reports() {
	local r
	[ "$LOGINS_ASAN" = 1 ] || return 0
	r=$(ls "$LOGINS_ASAN_DIR" 2>/dev/null)
	is "$r" "" "no sanitizer report from the login programs or the module in them" ||
		diag "$(head -n 40 "$LOGINS_ASAN_DIR"/* 2>/dev/null)"
}

# A syslog sink at /dev/log, for a moment: one test at a time may own it
# (the flock tests/integration/hardening/faults.sh takes too).  Lines go to $LOGINS_SYSLOG.
logins_syslog_begin() {
	LOGINS_SYSLOG=$LOGINS_DIR/syslog
	exec {_logins_syslog_fd}>/tmp/kubehsm-test-devlog.lock
	flock -w 900 "$_logins_syslog_fd" || _logins_bail "/dev/log sink lock"
	[ -e /dev/log ] && _logins_bail "/dev/log exists (a syslog daemon runs): this test needs to own it"
	: >"$LOGINS_SYSLOG"
	/usr/bin/python3 - "$LOGINS_SYSLOG" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
os.chmod("/dev/log", 0o666)
with open(sys.argv[1], "ab", buffering=0) as f:
    while True:
        f.write(s.recv(65536).rstrip(b"\0\n") + b"\n")
PY
	_logins_syslog_pid=$!
	on_exit "logins_syslog_end"
	for _ in $(seq 1 100); do [ -S /dev/log ] && return 0; sleep 0.05; done
	_logins_bail "the syslog sink did not start"
}

logins_syslog_end() {
	[ -n "${_logins_syslog_pid:-}" ] || return 0
	sleep 0.2   # let the last datagrams in
	kill "$_logins_syslog_pid" 2>/dev/null
	wait "$_logins_syslog_pid" 2>/dev/null
	rm -f /dev/log
	_logins_syslog_pid=
	exec {_logins_syslog_fd}>&-
}

# How this OpenSSH chooses its PAM service, decided from `sshd -V` (here
# only): up to 9.7 it is the program name (argv[0]), so sshd started through
# a symlink kh-sshd-N uses /etc/pam.d/kh-sshd-N; from 9.8 on (Debian 13 has
# 10.0) it is "sshd" unless sshd_config says PAMServiceName, an option 9.7
# and older reject.  Status 0: this sshd wants PAMServiceName.
sshd_pam_service_option() {
	local v major minor
	v=$(/usr/sbin/sshd -V 2>&1 </dev/null)
	[[ $v =~ ^OpenSSH_([0-9]+)\.([0-9]+) ]] ||
		_logins_bail "cannot read the OpenSSH version from 'sshd -V': $v"
	major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
	[ "$major" -gt 9 ] || { [ "$major" -eq 9 ] && [ "$minor" -ge 8 ]; }
}

sshd_start() {
	local d=$LOGINS_DIR/sshd try i cfg p pamsvc=
	mkdir -p -m 0755 /run/sshd
	mkdir -p "$d" && chmod 0755 "$d"
	[ -f "$d/host_ed25519" ] ||
		ssh-keygen -q -t ed25519 -N '' -C kh-test-host -f "$d/host_ed25519" ||
		_logins_bail "ssh-keygen"
	# The program is named after the service on every release: that names
	# the service up to OpenSSH 9.7, and the test's sshd in ps on all.
	ln -sf /usr/sbin/sshd "$d/$SSHD_SERVICE"
	sshd_pam_service_option && pamsvc="PAMServiceName $SSHD_SERVICE"
	SSHD_LOG=$d/sshd.log
	for try in 1 2 3; do
		SSHD_PORT_KBD=$(_logins_free_port)
		SSHD_PORT_PASSWORD=$(_logins_free_port)
		SSHD_PORT_PUBKBD=$(_logins_free_port)
		cfg=$d/sshd_config
		cat >"$cfg" <<EOF
ListenAddress 127.0.0.1:$SSHD_PORT_KBD
ListenAddress 127.0.0.1:$SSHD_PORT_PASSWORD
ListenAddress 127.0.0.1:$SSHD_PORT_PUBKBD
HostKey $d/host_ed25519
PidFile $d/sshd.pid
UsePAM yes
$pamsvc
PermitRootLogin no
AuthorizedKeysFile .ssh/authorized_keys
PrintMotd no
PrintLastLog no
UseDNS no
X11Forwarding no
AllowAgentForwarding no
LoginGraceTime 300
LogLevel VERBOSE
PubkeyAuthentication no
PasswordAuthentication no
KbdInteractiveAuthentication yes
AuthenticationMethods keyboard-interactive
Match LocalPort $SSHD_PORT_PASSWORD
	PasswordAuthentication yes
	KbdInteractiveAuthentication no
	AuthenticationMethods password
Match LocalPort $SSHD_PORT_PUBKBD
	PubkeyAuthentication yes
	AuthenticationMethods publickey,keyboard-interactive
EOF
		"$d/$SSHD_SERVICE" -t -f "$cfg" || _logins_bail "sshd -t refuses the test config"
		env ${LOGINS_PRELOAD:+LD_PRELOAD="$LOGINS_PRELOAD"} "$d/$SSHD_SERVICE" -D -e -f "$cfg" \
			</dev/null >>"$SSHD_LOG" 2>&1 &
		SSHD_PID=$!
		for i in $(seq 1 100); do
			kill -0 "$SSHD_PID" 2>/dev/null || break
			if (exec 3<>"/dev/tcp/127.0.0.1/$SSHD_PORT_PUBKBD") 2>/dev/null; then
				on_exit "sshd_stop"
				: >"$LOGINS_DIR/known_hosts"
				for p in $SSHD_PORT_KBD $SSHD_PORT_PASSWORD $SSHD_PORT_PUBKBD; do
					echo "[127.0.0.1]:$p $(cut -d' ' -f1-2 "$d/host_ed25519.pub")" \
						>>"$LOGINS_DIR/known_hosts"
				done
				return 0
			fi
			sleep 0.1
		done
		kill "$SSHD_PID" 2>/dev/null; wait "$SSHD_PID" 2>/dev/null
	done
	cat "$SSHD_LOG" >&2
	_logins_bail "sshd did not start"
}

sshd_stop() {
	[ -n "${SSHD_PID:-}" ] || return 0
	kill "$SSHD_PID" 2>/dev/null
	wait "$SSHD_PID" 2>/dev/null
	SSHD_PID=
}

ssh_user_key() {
	local user=$1 home
	home=$(getent passwd "$user" | cut -d: -f6)
	ssh-keygen -q -t ed25519 -N '' -C "$user" -f "$LOGINS_DIR/$user.key" || _logins_bail "ssh-keygen"
	install -d -m 0700 -o "$user" -g "$(id -g "$user")" "$home/.ssh" &&
		install -m 0600 -o "$user" -g "$(id -g "$user")" "$LOGINS_DIR/$user.key.pub" \
			"$home/.ssh/authorized_keys" || _logins_bail "authorized_keys for $user"
}

ssh_argv() {
	local user=$1 how=$2 port
	shift 2
	SSH_ARGV=(ssh -tt -F /dev/null -o BatchMode=no -o StrictHostKeyChecking=yes
		-o UserKnownHostsFile="$LOGINS_DIR/known_hosts" -o GlobalKnownHostsFile=/dev/null
		-o IdentityAgent=none -o IdentitiesOnly=yes -o NumberOfPasswordPrompts=1
		-o ConnectTimeout=60 -o ServerAliveInterval=0 -o LogLevel=ERROR -o ControlMaster=no)
	case $how in
	kbd) port=$SSHD_PORT_KBD
		SSH_ARGV+=(-o PreferredAuthentications=keyboard-interactive -o PubkeyAuthentication=no
			-o PasswordAuthentication=no) ;;
	password) port=$SSHD_PORT_PASSWORD
		SSH_ARGV+=(-o PreferredAuthentications=password -o KbdInteractiveAuthentication=no
			-o PubkeyAuthentication=no) ;;
	pubkbd) port=$SSHD_PORT_PUBKBD
		SSH_ARGV+=(-o PreferredAuthentications=publickey,keyboard-interactive
			-o PasswordAuthentication=no -i "$LOGINS_DIR/$user.key") ;;
	*) _logins_bail "ssh_argv: unknown method '$how'" ;;
	esac
	SSH_ARGV+=("$@" -p "$port" -l "$user" 127.0.0.1)
}

_login_opts() {
	_LOGIN_OPTS=(--tries "${LOGIN_TRIES:-1}" --timeout "${LOGIN_TIMEOUT:-120}")
	[ -n "$LOGINS_PRELOAD" ] && _LOGIN_OPTS+=(--setenv LD_PRELOAD="$LOGINS_PRELOAD")
	[ -n "${LOGIN_PIN:-}" ] && _LOGIN_OPTS+=(--pin "$LOGIN_PIN")
	[ -n "${LOGIN_PASSWORD:-}" ] && _LOGIN_OPTS+=(--password "$LOGIN_PASSWORD")
	return 0
}

login_open() {
	local name=$1 d=$LOGINS_DIR/login.$1 state i
	shift
	rm -rf "$d"
	mkdir -p -m 0755 "$d"
	_login_opts
	"${LOGINDRV[@]}" "${_LOGIN_OPTS[@]}" --log "$d/transcript" open --ctl "$d" -- "$@" \
		</dev/null >"$d/driver.log" 2>&1 &
	echo $! >"$d/pid"
	on_exit "login_kill $name"
	for i in $(seq 1 $((${LOGIN_TIMEOUT:-120} * 10 + 100))); do
		state=$(cat "$d/state" 2>/dev/null)
		case $state in
		ready) return 0 ;;
		failed*|closed*) diag "login $name: $state"; return 1 ;;
		esac
		kill -0 "$(cat "$d/pid")" 2>/dev/null || { diag "login $name: driver died"; return 1; }
		sleep 0.1
	done
	diag "login $name: no answer"
	return 1
}

login_run() { _login_opts; run "${LOGINDRV[@]}" "${_LOGIN_OPTS[@]}" call "$LOGINS_DIR/login.$1" "$2"; }
login_run_tty() { _login_opts; run "${LOGINDRV[@]}" "${_LOGIN_OPTS[@]}" call --tty "$LOGINS_DIR/login.$1" "$2"; }

login_close() {
	local d=$LOGINS_DIR/login.$1
	run "${LOGINDRV[@]}" --timeout "${LOGIN_TIMEOUT:-120}" close "$d"
	wait "$(cat "$d/pid")" 2>/dev/null
	return 0
}

login_kill() {
	local d=$LOGINS_DIR/login.$1 pid
	pid=$(cat "$d/pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

login_transcript() { tr -d '\r' <"$LOGINS_DIR/login.$1/transcript" 2>/dev/null | tail -n "${2:-30}"; }

login_once() {
	local log=$LOGINS_DIR/once.$$.$RANDOM c=()
	_login_opts
	[ -n "${LOGIN_CMD:-}" ] && c=(-c "$LOGIN_CMD")
	run "${LOGINDRV[@]}" "${_LOGIN_OPTS[@]}" --log "$log" --iodir "$LOGINS_DIR" run "${c[@]}" -- "$@"
	LOGIN_ONCE_LOG=$log
}
