#!/bin/bash
# Install the Debian packages kubehsm needs to build, test and demo, on
# Debian 12 (bookworm), 13 (trixie) or testing.  Idempotent: does nothing
# (and needs no network) when all are present.
#
# Where the releases name a package differently, its entry lists the names
# as "new|old" and apt chooses: an entry is present when any of its names is
# installed, and otherwise the first name apt has a candidate for is
# installed.  This list is the only place such names are chosen (scripts/fuzz.sh
# and debian/control name nothing release-specific).  An entry ending in "?"
# is only for the benchmarks: a release without it gets a note, not a failure.
set -euo pipefail

PACKAGES=(
	# build
	build-essential autoconf automake libtool pkg-config
	# Debian 13's pam.pc has "Requires.private: audit", which libpam0g-dev
	# does not pull in; systemd.pc (the unit directory) is in systemd-dev
	# from Debian 13 on, in systemd itself before
	libpam0g-dev libaudit-dev 'systemd-dev|systemd' libp11-dev libssl-dev libconfig-dev
	libpolkit-gobject-1-dev libkeyutils-dev libjansson-dev libcmocka-dev
	libp11-kit-dev libyaml-dev
	# kubehsm-relayd: event loop, privilege drop, HTTP/1.1 heads
	libevent-dev libcap-ng-dev libhttp-parser-dev
	# real parts the tests and the demo run against
	softhsm2 opensc libengine-pkcs11-openssl keyutils
	pamtester libpam-wrapper libnss-wrapper libpamtest0-dev
	polkitd dbus nginx-light python3-kubernetes golang-go
	# the Python client's exec (WebSocket), through kubehsm-relayd
	python3-websocket
	# hardening and benchmarks
	clang libclang-rt-dev valgrind strace hyperfine? gnuplot-nox libpam-p11
	# the proxy bench/relay.sh measures kubehsm-relayd against
	haproxy
	xz-utils git procps passwd libcap2-bin
	# tools the integration tests drive
	jq curl openssl python3 util-linux coreutils login logrotate iproute2
	# more kube clients (tests/integration/clients/clients.sh); the test installs
	# @kubernetes/client-node itself, from npm into the build tree
	ruby-kubeclient nodejs
	# the real login programs and a pty driver (tests/integration/logins/)
	openssh-server openssh-client sudo tmux python3-pexpect
	# kubehsm login: pkexec, and a token forwarded with p11-kit (server and
	# client module) in tests/integration/logins/login_forward.sh
	pkexec p11-kit p11-kit-modules
	# real token stacks: a PIV card emulated at the APDU level behind a
	# private pcscd (vsmartcard's vpcd), read by OpenSC and Yubico's ykcs11
	# (tests/harness/pcsc.sh, piv_card.py); a TPM 2.0 (swtpm, tpm2-abrmd and
	# its TCTI, tpm2-pkcs11) (tests/harness/tpm.sh)
	pcscd vsmartcard-vpcd python3-cryptography ykcs11 yubico-piv-tool
	swtpm swtpm-tools tpm2-tools tpm2-abrmd libtss2-tcti-tabrmd0
	libtpm2-pkcs11-1 libtpm2-pkcs11-tools
	# Debian packages: build, lint, compare (scripts/deb-check.sh)
	debhelper dpkg-dev fakeroot lintian diffoscope-minimal
	# the other release's root the whole run ends in (scripts/debian-root.sh)
	debootstrap
)
# Debian's nodejs ships npm as a package of its own; NodeSource's nodejs
# bundles it (and conflicts with Debian's npm).
command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)

# (Output captured first: grep -q ending a pipe early fails it under pipefail.)
installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }
has_candidate() {
	local c
	c=$(apt-cache policy "$1" 2>/dev/null | awk '/^  Candidate:/ { print $2 }')
	[ -n "$c" ] && [ "$c" != "(none)" ]
}

missing=()
for entry in "${PACKAGES[@]}"; do
	IFS='|' read -r -a names <<<"${entry%\?}"
	present=0
	for p in "${names[@]}"; do installed "$p" && { present=1; break; }; done
	[ $present = 1 ] || missing+=("$entry")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#PACKAGES[@]} packages present"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root: bash scripts/install-deps.sh" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q </dev/null
chosen=() unknown=()
for entry in "${missing[@]}"; do
	IFS='|' read -r -a names <<<"${entry%\?}"
	pick=
	for p in "${names[@]}"; do has_candidate "$p" && { pick=$p; break; }; done
	if [ -n "$pick" ]; then chosen+=("$pick")
	elif [ "${entry%\?}" != "$entry" ]; then
		echo "install-deps: note: apt has no ${entry%\?} here; the benchmarks that use it cannot run"
	else unknown+=("$entry"); fi
done
if [ ${#unknown[@]} -gt 0 ]; then
	. /etc/os-release 2>/dev/null || true
	echo "install-deps: apt has no package named ${unknown[*]} on ${PRETTY_NAME:-this system}" >&2
	exit 1
fi
[ ${#chosen[@]} -gt 0 ] || exit 0
echo "install-deps: installing ${chosen[*]}"
apt-get install -y -q --no-install-recommends "${chosen[@]}" </dev/null
