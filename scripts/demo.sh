#!/bin/bash
# kubehsm's main job, shown end to end on this machine (run as root).
#
# Installs the Debian packages it needs, builds kubehsm, and then works in a
# throw-away directory that it removes on exit.  Each step says what it does,
# what happened and how long it took.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build="$top/build-demo"
work=$(mktemp -d /tmp/kubehsm-demo.XXXXXX)
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT

n=0
ms() { date +%s%3N; }
step() {   # step "what" command...: run, report outcome and time
	local what=$1 t0 t1 rc=0; shift
	n=$((n + 1))
	printf '\n[%d] %s\n' "$n" "$what"
	t0=$(ms)
	"$@" || rc=$?
	t1=$(ms)
	if [ $rc -eq 0 ]; then printf '    -> ok (%d ms)\n' $((t1 - t0))
	else printf '    -> FAILED with status %d (%d ms)\n' $rc $((t1 - t0)); exit $rc; fi
}
expect_fail() {   # the command must fail; show its one-line error
	local out rc=0
	out=$("$@" 2>&1) || rc=$?
	printf '    %s\n' "$out"
	[ $rc -ne 0 ]
}

[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (it creates users, tokens and a PAM service)" >&2; exit 1; }

step "install the Debian packages kubehsm needs" bash scripts/install-deps.sh
step "bootstrap the build system (autoreconf)" autoreconf -fi
build_kubehsm() {
	mkdir -p "$build" && cd "$build" &&
	"$top/configure" -q --prefix=/usr --sysconfdir=/etc --enable-werror >/dev/null &&
	make -s -j"$(nproc)" >/dev/null && cd "$top"
}
step "build kubehsm (configure && make)" build_kubehsm
KUBEHSM="$build/helper/kubehsm"

# A policy like an admin would write, pointing at files in the work dir.
make_policy() {
	local etc="$work/etc/kubehsm"
	mkdir -p "$etc" && chmod 0755 "$work/etc" "$etc"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$work/users-ca.key" -out "$etc/users-ca.pem" -days 1 \
		-subj "/CN=kubehsm demo users CA" 2>/dev/null
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$work/issuer.key" -out "$etc/issuer.pem" -days 1 \
		-subj "/CN=kubehsm demo issuer CA" 2>/dev/null
	printf 'demo-issuer-pin\n' >"$etc/issuer.pin"
	chmod 0600 "$etc/issuer.pin"; chmod 0644 "$etc/users-ca.pem" "$etc/issuer.pem"
	sed -e "s|/etc/kubehsm/|$etc/|g" "$top/conf/kubehsm.conf" >"$etc/kubehsm.conf"
	chmod 0644 "$etc/kubehsm.conf"
}
step "write a policy from the shipped sample into $work/etc/kubehsm" make_policy
CONF="$work/etc/kubehsm/kubehsm.conf"

step "check it: kubehsm config check (prints the effective policy)" "$KUBEHSM" config check "$CONF"

typo() { sed -e 's/^\(\s*\)ttl = /\1ttll = /' "$CONF" >"$work/etc/kubehsm/typo.conf"
	chmod 0644 "$work/etc/kubehsm/typo.conf"
	expect_fail "$KUBEHSM" config check "$work/etc/kubehsm/typo.conf"; }
step "a misspelled key is rejected, naming the line" typo

loose_pin() { chmod 0644 "$work/etc/kubehsm/issuer.pin"
	expect_fail "$KUBEHSM" config check "$CONF"; chmod 0600 "$work/etc/kubehsm/issuer.pin"; }
step "an issuer PIN file readable by others is rejected, naming the file" loose_pin

printf '\ndemo: done. Policy checked; see README.md for the login -> keyring -> kubectl flow.\n'
