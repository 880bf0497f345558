#!/bin/bash
# bench/login.sh [--quick] — how long `kubehsm login` takes (issue #14), as
# root, against a PAM login on the same token in the same run.
#
# Three ways to one kube session, timed on a pty from the PIN prompt's
# command to its exit, PIN typed by a pexpect driver
# (bench/login_time.py), interleaved in rotating rounds:
#   A  pamtester: auth + open_session + close_session through a service
#      with pam_kubehsm, the user's SoftHSM token on the host  (baseline)
#   B  kubehsm login: pkexec, polkitd, kubehsm-login, the kubehsm
#      service; the same token on the host
#   C  kubehsm login through a p11-kit server's socket (the forwarded-token
#      path without the ssh hop): the same token behind p11-kit
# Reported: medians and B/A, C/A, C/B.  Between runs `kubehsm logout` (not
# timed) ends the session so each run starts one.
#
# It reuses the test harness (tests/integration/logins/logins_common.sh: a private
# mount namespace, CA, issuer token, the PAM stacks) and tests/harness/polkit.sh
# (polkitd on the system bus).  KH_BUILDDIR: an existing build (default:
# ./build).  Results: ${BENCH_OUT:-/var/tmp/kubehsm-bench}/kubehsm-login/summary.txt,
# outside the source tree.
set -u
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export KH_SRCDIR=${KH_SRCDIR:-$(dirname "$BENCH")}
export KH_BUILDDIR=${KH_BUILDDIR:-$KH_SRCDIR/build}
ROUNDS=15
[ "${1:-}" = --quick ] && ROUNDS=3
export BENCH_ROUNDS=${BENCH_ROUNDS:-$ROUNDS}
[ -x "$KH_BUILDDIR/helper/kubehsm-login" ] ||
	{ echo "bench/login.sh: build first (KH_BUILDDIR=$KH_BUILDDIR)" >&2; exit 2; }

. "$KH_SRCDIR/tests/integration/logins/logins_common.sh"
. "$KH_SRCDIR/tests/harness/polkit.sh"
need_cmd p11-kit pkexec pamtester
polkit_start --system || _logins_bail "polkitd"

kubehsm_login_service
logins_pam kh-bench-login <<EOF
auth     required  $PAM_KUBEHSM config=$CONF
account  required  pam_permit.so
session  required  $PAM_KUBEHSM config=$CONF
EOF
token_user alice
U=$(id -u "$alice")
[ -d /run/user ] || { mkdir -m 0755 /run/user && on_exit "rmdir /run/user 2>/dev/null"; }
install -d -m 0700 -o "$alice" /run/user/"$U" /run/user/"$U"/p11-kit
on_exit "rm -rf /run/user/$U"
SOCK=/run/user/$U/p11-kit/pkcs11

# The same token behind a p11-kit server, its socket the user's.
p11-kit server -f -n "$SOCK" --provider "$SHIM" "pkcs11:token=$alice" \
	>"$KH_TMP/p11-server.out" 2>&1 &
on_exit "kill $! 2>/dev/null"
for _ in $(seq 1 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
chown "$alice" "$SOCK"

OUT=${BENCH_OUT:-/var/tmp/kubehsm-bench}/kubehsm-login
mkdir -p "$OUT"
/usr/bin/python3 "$BENCH/login_time.py" --rounds "$BENCH_ROUNDS" --pin "$PIN" \
	--user "$alice" --service kh-bench-login --socket "$SOCK" \
	--kubehsm "$KUBEHSM" --login-program "$KH_BUILDDIR/helper/kubehsm-login" |
	tee "$OUT/summary.txt"
ok "${PIPESTATUS[0]}" "the login benchmark ran"
done_testing
