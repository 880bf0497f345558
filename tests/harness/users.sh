# tests/harness/users.sh — real, throw-away Unix users for integration tests.
#
#   make_user VAR         create a unique user, store its name in $VAR
#   uid_of USER
#   as_user USER CMD...   run as USER with a fresh session keyring of theirs
#   as_user_inherit USER CMD...
#                         run as USER keeping the caller's session keyring
#                         (a process with no session keyring of its own)
#   as_user_su USER CMD   run through su(1), the real PAM path
# Users, their processes and their keys are removed when the test exits.

make_user() {
	local var=$1 name
	name="kh$(printf '%s' "$var" | tr -cd 'a-z' | head -c 6)$$"
	name=${name:0:31}
	useradd --create-home --shell /bin/bash "$name" >/dev/null 2>&1 ||
		{ echo "Bail out! useradd $name failed"; exit 1; }
	on_exit "drop_user $name"
	# The kernel keeps a uid's user keyring after userdel: a reused uid
	# would start with whatever an earlier (killed) test left there.
	setpriv --reuid="$(id -u "$name")" --regid="$(id -g "$name")" --clear-groups \
		keyctl clear @u >/dev/null 2>&1 || true
	printf -v "$var" '%s' "$name"
}

drop_user() {
	local name=$1 uid
	uid=$(id -u "$name" 2>/dev/null) || return 0
	pkill -KILL -u "$uid" 2>/dev/null || true
	# Drop the user's keys now rather than leaving them to the timeout.
	setpriv --reuid="$uid" --regid="$uid" --clear-groups keyctl clear @u 2>/dev/null || true
	userdel --remove "$name" 2>/dev/null || true
}

uid_of() { id -u "$1"; }

as_user() {
	local user=$1; shift
	setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --init-groups \
		--reset-env keyctl session - "$@"
}

as_user_inherit() {
	local user=$1; shift
	setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --init-groups \
		--reset-env "$@"
}

as_user_su() {
	local user=$1; shift
	su -s /bin/bash "$user" -c "$*"
}
