#!/bin/bash
# scripts/leftovers.sh — the processes a test run left running.
#
#   scripts/leftovers.sh snapshot FILE
#       record what runs now, before the suite starts
#   scripts/leftovers.sh check RUN FILE [WHAT]
#       name every process still running that the run RUN started: one
#       line each, with its pid, user, age and command line; exit 1 if
#       there is any.  With --end (before RUN), then end them by pid, so
#       that one leak does not disturb the steps after it.
#
# Which processes are the run's: scripts/test.sh exports KH_TEST_RUN=RUN,
# a fresh random id, before it starts the builds and tests, and every
# process they start gets it in the environment it was started with
# (/proc/PID/environ): the daemons the tests run (p11-kit servers and their
# per-connection p11-kit-remote, sshd, nginx, dbus-daemon and polkitd,
# pcscd, swtpm, tpm2-abrmd, kubehsm-relayd), the pexpect drivers and what
# they spawn.  The id, not a process's name, is what tells them apart from
# the machine's own services (a system dbus-daemon that ran before the
# suite) and from the test suites of other checkouts running on the machine
# at the same time.  Processes already running at the snapshot are never
# named, whatever they carry.  Zombies are not running and are left to
# whoever reaps them.
#
# Run it with KH_TEST_RUN unset (env -u): its own processes must not carry
# the id.  Processes of the run whose environment was reset on the way
# (a user's shell behind sshd, su -l or login) do not carry the id: the
# tests end them with the users they create (tests/harness/users.sh).
set -u

# "STATE STARTTIME" of a process (fields 3 and 22 of /proc/PID/stat; the
# start time, in clock ticks since boot, with the pid names one process
# even if pids wrap), or nothing when it is gone.
stat_of() {
	local stat rest
	{ read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
	rest=${stat##*) }
	set -- $rest
	echo "$1 ${20}"
}

# "PID STARTTIME" of every process.
snapshot() {
	local p st
	for p in /proc/[0-9]*; do
		st=$(stat_of "${p#/proc/}") || continue
		echo "${p#/proc/} ${st#* }"
	done
}

# The run's processes still running, one "PID STARTTIME" a line.  One grep
# reads every environment: a process per pid is seconds on a busy machine.
left() {
	local run=$1 before=$2 f pid st
	declare -A old=()
	while read -r pid st; do old[$pid]=$st; done <"$before"
	for f in $(grep -lszxF -- "KH_TEST_RUN=$run" /proc/[0-9]*/environ); do
		pid=${f#/proc/}
		pid=${pid%/environ}
		[ "$pid" != "$$" ] || continue
		st=$(stat_of "$pid") || continue
		[ "${st% *}" != Z ] || continue
		[ "${old[$pid]:-}" != "${st#* }" ] || continue
		echo "$pid ${st#* }"
	done
}

describe() {   # one line for a process
	local pid=$1 cmd user age
	cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)
	user=$(ps -o user= -p "$pid" 2>/dev/null | tr -d ' ')
	age=$(ps -o etime= -p "$pid" 2>/dev/null | tr -d ' ')
	echo "  pid $pid, user ${user:-?}, running ${age:-?}: ${cmd:-[$(cat "/proc/$pid/comm" 2>/dev/null)]}"
}

case ${1:-} in
snapshot)
	[ $# -eq 2 ] || { echo "usage: $0 snapshot FILE" >&2; exit 2; }
	snapshot >"$2"
	;;
check)
	shift
	end=0
	[ "${1:-}" = --end ] && { end=1; shift; }
	[ $# -ge 2 ] || { echo "usage: $0 check [--end] RUN FILE [WHAT]" >&2; exit 2; }
	run=$1 before=$2 what=${3:-the tests}
	[ -n "$run" ] && [ -r "$before" ] || { echo "leftovers: no run id or no snapshot" >&2; exit 2; }
	[ "${KH_TEST_RUN:-}" != "$run" ] || { echo "leftovers: run me without KH_TEST_RUN" >&2; exit 2; }
	# A daemon a test has just stopped may take a moment to go (nginx's
	# workers finish their connections): give them ten seconds.
	for _ in $(seq 1 20); do
		found=$(left "$run" "$before")
		[ -n "$found" ] || { echo "no process of $what is left running"; exit 0; }
		sleep 0.5
	done
	echo "processes $what left running (started by the tests, still alive after they ended):"
	while read -r pid _; do describe "$pid"; done <<<"$found"
	if [ $end = 1 ]; then
		# By pid, and only while the pid is still the process found (the
		# same start time), never a new process on a reused pid.
		for sig in TERM KILL; do
			while read -r pid start; do
				st=$(stat_of "$pid") && [ "${st#* }" = "$start" ] &&
					kill "-$sig" "$pid" 2>/dev/null
			done <<<"$found"
			[ $sig = KILL ] || sleep 1
		done
		echo "(ended them)"
	fi
	exit 1
	;;
*)
	echo "usage: $0 snapshot FILE | check [--end] RUN FILE [WHAT]" >&2
	exit 2
	;;
esac
