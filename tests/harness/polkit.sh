# tests/harness/polkit.sh — a real polkitd on a bus of the test's own (source after tap.sh).
#
#   polkit_need                 skip_all unless root, dbus-daemon, polkitd, pkcheck
#   polkit_start [--system]     bus + polkitd + kubehsm actions, ready to answer
#   polkit_add_rule NAME JS     install a rules file; returns once polkitd uses it
#   polkit_del_rule NAME        remove it again; returns once polkitd dropped it
#   polkit_stop_daemon          stop polkitd only (the bus stays up)
#   polkit_stop                 stop polkitd and the bus (only what we started)
#   polkit_start_time PID       field 22 of /proc/PID/stat
#
# Default (private) mode: a dbus-daemon with its own config listening on a
# socket under $KH_TMP, and DBUS_SYSTEM_BUS_ADDRESS exported so that this
# script's children (polkitd, pkcheck, the code under test) use it.  An
# already running system bus and polkitd are never touched, and tests
# running in parallel each have their own.  GLib ignores
# DBUS_SYSTEM_BUS_ADDRESS in setuid programs, so code run through su/sudo
# would not see this bus: such a test passes --system, which uses the real
# system bus socket — reused if one answers, else started with
# `dbus-daemon --system` — and reuses a polkitd already owning the name, else
# starts one.  Either way only processes this script started are stopped.
#
# Files shared with the machine (unless KH_POLKIT_ACTIONS=installed, when
# the installed kubehsm package's actions are used): the action file is installed into
# /usr/share/polkit-1/actions (the only place polkitd reads) under a name
# unique to this test, and rules into /etc/polkit-1/rules.d under unique
# names; all are removed at exit.  Every polkitd on the machine reads those
# directories, so rules should be scoped to the test's own user.
#
# Variables after polkit_start: POLKIT_BUS_ADDRESS, POLKITD_PID (the daemon
# answering, ours or not), POLKITD_OURS (1 if we started it).

: "${KH_POLKITD:=/usr/lib/polkit-1/polkitd}"
KH_POLKIT_ACTIONS_DIR=/usr/share/polkit-1/actions
KH_POLKIT_RULES_DIR=/etc/polkit-1/rules.d
KH_POLKIT_SYSTEM_SOCKET=/run/dbus/system_bus_socket

POLKIT_BUS_ADDRESS=
POLKITD_PID=
POLKITD_OURS=0
_pk_bus_pid=
_pk_dir=
_pk_action_file=
_pk_seq=0
declare -A _pk_rule_files=()

polkit_need() {
	need_root
	need_cmd dbus-daemon dbus-send pkcheck
	[ -x "$KH_POLKITD" ] || skip_all "needs polkitd at $KH_POLKITD (apt-get install polkitd)"
}

polkit_start_time() { awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$1/stat"; }

# _pk_wait_for SECONDS CMD...: run CMD every 50 ms until it succeeds.
_pk_wait_for() {
	local n=$(($1 * 20)); shift
	while [ $n -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.05; n=$((n - 1))
	done
	return 1
}

# _pk_kill PID: TERM (and CONT, in case a test stopped it), wait until gone.
_pk_kill() {
	local pid=$1
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	kill -CONT "$pid" 2>/dev/null || true
	_pk_wait_for 5 _pk_gone "$pid" || kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
_pk_gone() { ! kill -0 "$1" 2>/dev/null; }

_pk_bus_answers() {
	dbus-send --bus="$POLKIT_BUS_ADDRESS" --print-reply --dest=org.freedesktop.DBus \
		/org/freedesktop/DBus org.freedesktop.DBus.GetId
}

# Asking for the owner does not D-Bus-activate polkitd.
_pk_polkitd_owner_pid() {
	dbus-send --bus="$POLKIT_BUS_ADDRESS" --print-reply --dest=org.freedesktop.DBus \
		/org/freedesktop/DBus org.freedesktop.DBus.GetConnectionUnixProcessID \
		string:org.freedesktop.PolicyKit1 2>/dev/null | awk '/uint32/ { print $2 }'
}

_pk_private_bus() {
	_pk_dir=$KH_TMP/polkit-bus
	mkdir -p "$_pk_dir"
	chmod 0755 "$_pk_dir"
	POLKIT_BUS_ADDRESS=unix:path=$_pk_dir/system_bus_socket
	cat >"$_pk_dir/bus.conf" <<-EOF
	<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
	 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
	<busconfig>
	  <type>system</type>
	  <listen>$POLKIT_BUS_ADDRESS</listen>
	  <auth>EXTERNAL</auth>
	  <policy context="default">
	    <allow user="*"/>
	    <allow own="*"/>
	    <allow send_destination="*"/>
	    <allow receive_sender="*"/>
	  </policy>
	</busconfig>
	EOF
	dbus-daemon --config-file="$_pk_dir/bus.conf" --nofork --nopidfile --nosyslog \
		>"$_pk_dir/dbus.log" 2>&1 &
	_pk_bus_pid=$!
	on_exit "_pk_stop_bus"
}

# The machine has one system bus: tests that use it (--system) take turns.
# Otherwise one that started it stops it at its end while another, which
# found it answering and reused it, still talks through it (make check -j
# ran login_forward.sh beside piv_logins.sh: "Could not connect: Connection
# refused").  The lock is held on an open file description, which the
# daemons this script starts do not inherit; it is given up explicitly
# last at exit, after the bus and polkitd are stopped.
KH_POLKIT_SYSTEM_LOCK=/run/lock/kubehsm-tests-system-bus.lock
_pk_lock_fd=

_pk_system_lock() {
	mkdir -p "$(dirname "$KH_POLKIT_SYSTEM_LOCK")"
	exec {_pk_lock_fd}>>"$KH_POLKIT_SYSTEM_LOCK" || return 1
	on_exit "flock -u $_pk_lock_fd; exec $_pk_lock_fd>&-"
	flock -w 900 "$_pk_lock_fd" ||
		diag "polkit: another test held the system bus for 15 minutes; going on without the lock"
	return 0
}

# CMD... run without the lock's descriptor (a daemon must not hold it);
# in the foreground only ($! would name a subshell).
_pk_unlocked() {
	if [ -n "$_pk_lock_fd" ]; then "$@" {_pk_lock_fd}>&-; else "$@"; fi
}

_pk_system_bus() {
	POLKIT_BUS_ADDRESS=unix:path=$KH_POLKIT_SYSTEM_SOCKET
	_pk_system_lock || return 1
	_pk_bus_answers >/dev/null 2>&1 && return 0
	mkdir -p /run/dbus
	# A bus that no longer answers and whose daemon is gone (killed with
	# the test that started it) leaves its pid file and socket behind, and
	# dbus-daemon will not start while the pid file exists.
	local stale
	stale=$(cat /run/dbus/pid 2>/dev/null)
	if [ -n "$stale" ] && [ "$(ps -o comm= -p "$stale" 2>/dev/null)" != dbus-daemon ]; then
		rm -f /run/dbus/pid "$KH_POLKIT_SYSTEM_SOCKET"
	fi
	_pk_bus_pid=$(_pk_unlocked dbus-daemon --system --fork --print-pid) || return 1
	on_exit "_pk_stop_bus"
}

# dbus-daemon --system leaves its pid file behind, and the next one refuses
# to start while it exists: remove it (and the socket) if they are ours.
_pk_stop_bus() {
	local pid=$_pk_bus_pid
	[ -n "$pid" ] || return 0
	_pk_kill "$pid"
	_pk_bus_pid=
	if [ "$POLKIT_BUS_ADDRESS" = "unix:path=$KH_POLKIT_SYSTEM_SOCKET" ] &&
	   [ "$(cat /run/dbus/pid 2>/dev/null)" = "$pid" ]; then
		rm -f /run/dbus/pid "$KH_POLKIT_SYSTEM_SOCKET"
	fi
}

_pk_install_actions() {
	# KH_POLKIT_ACTIONS=installed: use the actions a package installed.
	[ "${KH_POLKIT_ACTIONS:-}" = installed ] && return 0
	_pk_action_file=$KH_POLKIT_ACTIONS_DIR/org.kubehsm.khtest-$$.policy
	mkdir -p "$KH_POLKIT_ACTIONS_DIR"
	# org.kubehsm.login names the build tree's kubehsm-login for pkexec.
	sed -e "s|@KH_LOGIN_PROGRAM@|$KH_BUILDDIR/helper/kubehsm-login|g" \
		"$KH_SRCDIR/conf/org.kubehsm.policy.in" >"$_pk_action_file" || return 1
	chmod 0644 "$_pk_action_file"
	on_exit "rm -f '$_pk_action_file'"
}

# Ready = polkitd answers for our action: a root subject is authorized.
_pk_ready() {
	pkcheck --action-id org.kubehsm.cache-credentials --process "$$,$(polkit_start_time $$),0"
}

_pk_start_polkitd() {
	local owner
	owner=$(_pk_polkitd_owner_pid)
	if [ -n "$owner" ]; then
		POLKITD_PID=$owner; POLKITD_OURS=0
		return 0
	fi
	if [ -n "$_pk_lock_fd" ]; then
		"$KH_POLKITD" --no-debug >"$KH_TMP/polkitd-$$.log" 2>&1 {_pk_lock_fd}>&- &
	else
		"$KH_POLKITD" --no-debug >"$KH_TMP/polkitd-$$.log" 2>&1 &
	fi
	POLKITD_PID=$!; POLKITD_OURS=1
	on_exit "_pk_kill $POLKITD_PID"
}

polkit_start() {
	local mode=private
	[ "${1:-}" = --system ] && mode=system
	if [ $mode = private ]; then _pk_private_bus; else _pk_system_bus; fi ||
		{ diag "polkit: cannot start a bus"; return 1; }
	export DBUS_SYSTEM_BUS_ADDRESS=$POLKIT_BUS_ADDRESS
	_pk_wait_for 10 _pk_bus_answers ||
		{ diag "polkit: bus at $POLKIT_BUS_ADDRESS does not answer"; return 1; }
	_pk_install_actions || { diag "polkit: cannot install the action file"; return 1; }
	_pk_start_polkitd
	_pk_wait_for 10 _pk_ready ||
		{ diag "polkit: polkitd does not answer"; diag "$(cat "$KH_TMP/polkitd-$$.log" 2>/dev/null)"; return 1; }
}

# Restart polkitd on the same bus (after polkit_stop_daemon).
polkit_restart_daemon() {
	_pk_start_polkitd
	_pk_wait_for 10 _pk_ready
}

polkit_stop_daemon() {
	[ "$POLKITD_OURS" = 1 ] || { diag "polkit: polkitd is not ours; left running"; return 1; }
	_pk_kill "$POLKITD_PID"
	POLKITD_PID=; POLKITD_OURS=0
}

polkit_stop() {
	[ "$POLKITD_OURS" = 1 ] && polkit_stop_daemon
	_pk_stop_bus
}

# polkitd's own process (uid polkitd, never root) with a marker detail:
# the marker rule at the top of each file says NO to exactly that, so the
# answer flips when polkitd has (re)loaded the file.
_pk_marker_check() {
	local pid
	pid=$(_pk_polkitd_owner_pid)
	[ -n "$pid" ] || return 127
	pkcheck --action-id org.kubehsm.cache-credentials \
		--process "$pid,$(polkit_start_time "$pid"),$(stat -c %u "/proc/$pid")" \
		--detail kh_rules_marker "$1"
}
_pk_marker_denied() { _pk_marker_check "$1"; [ $? -eq 1 ]; }
_pk_marker_allowed() { _pk_marker_check "$1"; [ $? -eq 0 ]; }

polkit_add_rule() {
	local name=$1 js=$2 file tmp marker
	_pk_seq=$((_pk_seq + 1))
	marker=khtest-$$-$_pk_seq
	file=$KH_POLKIT_RULES_DIR/$name-$marker.rules
	tmp=$KH_POLKIT_RULES_DIR/.$marker.tmp
	mkdir -p "$KH_POLKIT_RULES_DIR"
	on_exit "rm -f '$file' '$tmp'"
	{
		printf 'polkit.addRule(function(action, subject) {\n'
		printf '\tif (action.id == "org.kubehsm.cache-credentials" &&\n'
		printf '\t    action.lookup("kh_rules_marker") == "%s")\n' "$marker"
		printf '\t\treturn polkit.Result.NO;\n});\n'
		printf '%s\n' "$js"
	} >"$tmp" && chmod 0644 "$tmp" && mv -f "$tmp" "$file" || return 1
	_pk_rule_files[$name]="$file $marker"
	_pk_wait_for 10 _pk_marker_denied "$marker" ||
		{ diag "polkit: rules file $file not picked up"; return 1; }
}

polkit_del_rule() {
	local name=$1 file marker
	read -r file marker <<<"${_pk_rule_files[$name]:-}"
	[ -n "$file" ] || return 1
	rm -f "$file"
	unset "_pk_rule_files[$name]"
	_pk_wait_for 10 _pk_marker_allowed "$marker"
}
