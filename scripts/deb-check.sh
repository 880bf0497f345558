#!/bin/bash
# The Debian packages end to end on this machine (run as root; TAP output).
#
#   scripts/deb-check.sh              build, lint, install, enable, use, purge
#   scripts/deb-check.sh --installed  the packages are installed already
#                                     (autopkgtest, debian/tests/control):
#                                     enable, use, disable
#
# Build: dpkg-buildpackage -us -uc -b on a clean copy of the tree (the files
# git tracks or would track), twice, in two directories, and every .deb must
# come out bit-identical; lintian must report no error or warning; the
# packages must hold what an admin expects (paths, modes, conffile, fields,
# hardened ELF objects).  Use: apt install of both packages changes no PAM
# file; the README.Debian first steps (users CA, issuer token, PIN file)
# make the shipped policy pass `kubehsm config check` unmodified;
# `pam-auth-update --enable kubehsm` adds the expected lines; a user logs in
# with the token PIN through login(1) and through sshd (common-auth,
# common-session; driven on a pty by tests/harness/logins.sh),
# kubectl 1.33 authenticates with `kubehsm exec` from /usr/bin, and logout
# ends the session; a user without a token, and a wrong PIN, still get in
# with the password.  End: apt purge must leave /etc/pam.d/common-* as they
# were, no trace of kubehsm in /etc/pam.d, and no /etc/kubehsm.
#
# The machine is shared.  The whole check runs in a private mount namespace
# (tests/harness/logins.sh re-runs the script in one) in which /etc/pam.d,
# /var/lib/pam and /var/cache/debconf (pam-auth-update's files and its
# debconf answers), /etc/softhsm/softhsm2.conf and /run/dbus are private
# copies: enabling the profile never changes a login of anyone
# else, and nothing is left to restore.  The packages themselves are
# installed for real (dpkg has one database), for some ten seconds, and
# purged on exit, also when a step fails or the check is interrupted; should
# the namespace die first, the outer process purges them.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
mode=full
[ "${1:-}" = --installed ] && mode=installed
PKGS=(kubehsm libpam-kubehsm)

pkgs_installed() {   # any of our packages installed or half-installed
	dpkg-query -W -f='${db:Status-Abbrev}\n' "${PKGS[@]}" 2>/dev/null | grep -q '^.[^n]'
}

# --- outside the namespace: start it, then make sure nothing is left ------
if [ -z "${KH_DEB_CHECK_INNER:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (installs packages)"; exit 0; }
	rc=0
	# A signal reaches the check too, which purges on its way out; then
	# make sure of it here.
	trap 'rc=130' INT TERM HUP
	KH_DEB_CHECK_INNER=1 bash "$0" "$@" || rc=$?
	if [ $mode = full ] && pkgs_installed; then
		echo "# deb-check: ${PKGS[*]} still installed after the check; purging"
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -q -o DPkg::Lock::Timeout=600 \
			"${PKGS[@]}" >/dev/null 2>&1
		[ $rc -ne 0 ] || rc=1
	fi
	exit $rc
fi

# --- the check: logins.sh runs it in a private mount namespace ------------
. "$top/tests/harness/tap.sh"
. "$top/tests/harness/users.sh"
. "$top/tests/harness/pki.sh"
. "$top/tests/harness/kubeapi.sh"
. "$top/tests/harness/logins.sh"
. "$top/tests/harness/polkit.sh"
trap 'exit 130' INT TERM HUP   # run the cleanups (purge) when interrupted
need_root
need_cmd pam-auth-update dpkg-architecture dpkg-parsechangelog python3 nginx openssl keyctl \
	softhsm2-util pkcs11-tool chpasswd setpriv pkill
[ $mode = installed ] || need_cmd git dpkg-buildpackage lintian apt-get readelf
/usr/bin/python3 -c 'import pexpect' 2>/dev/null || skip_all "needs python3-pexpect (scripts/install-deps.sh)"
[ -x /bin/login ] || skip_all "needs login(1) (package login)"
K133=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
if [ ! -x "$K133" ]; then
	# An autopkgtest testbed has no Google Cloud SDK: skippable there.
	[ $mode = installed ] && { echo "1..0 # SKIP no kubectl 1.33 at $K133"; exit 77; }
	skip_all "needs kubectl 1.33 at $K133"
fi

export DEBIAN_FRONTEND=noninteractive
APT=(apt-get -y -q -o DPkg::Lock::Timeout=600)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
VERSION=$(cd "$top" && dpkg-parsechangelog -S Version)
ARCH=$(dpkg --print-architecture)
WORK=$KH_TMP/deb
mkdir -p "$WORK"
t0=$(date +%s)
took() { echo "$(($(date +%s) - $1)) s"; }

# --- private copies of what pam-auth-update and login read -----------------
privatize() {   # privatize DIR: bind a copy of it over itself
	local src=$1 copy=$WORK/private$1
	mkdir -p "$(dirname "$copy")" && cp -a "$src" "$copy" && mount --bind "$copy" "$src"
}
for p in /etc/pam.d /var/lib/pam /var/cache/debconf; do
	privatize "$p" || { echo "Bail out! cannot make a private copy of $p"; exit 1; }
done
# No system bus in here: the module's polkit check (policy: "if-available")
# finds polkitd unreachable, logs it and allows, whatever runs outside.
mkdir -p /run/dbus "$WORK/private/run/dbus"
mount --bind "$WORK/private/run/dbus" /run/dbus || { echo "Bail out! cannot hide /run/dbus"; exit 1; }
cp -a /etc/pam.d "$WORK/pam.d.before"

# --- build -----------------------------------------------------------------
build() {   # build DIR [ENV...]: clean copy of the tree into DIR, dpkg-buildpackage
	local dir=$1 src; shift
	src=$dir/kubehsm-$VERSION
	mkdir -p "$src"
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		tar --null -T - -cf -) | tar -C "$src" -xf - || return 1
	(cd "$src" && env "$@" nice dpkg-buildpackage -us -uc -b -j"$(nproc)") >"$dir/build.log" 2>&1
}
DEBS=$WORK/a
if [ $mode = full ]; then
	# Where this release wants the module and the unit (the build
	# dependencies are installed here): /lib/... on Debian 12, /usr/lib/...
	# on Debian 13.
	PAMDIR=$(pkg-config --variable=libdir pam)/security
	UNITDIR=$(pkg-config --variable=systemdsystemunitdir systemd)
	[ "$PAMDIR" != /security ] && [ -n "$UNITDIR" ] ||
		{ echo "Bail out! pkg-config knows no pam.pc or systemd.pc (scripts/install-deps.sh)"; exit 1; }
	git -C "$top" rev-parse --git-dir >/dev/null 2>&1 ||
		{ echo "Bail out! $top is not a git checkout: cannot make a clean copy"; exit 1; }
	t=$(date +%s)
	build "$WORK/a"; rc=$?
	ok $rc "dpkg-buildpackage -us -uc -b on a clean copy of the tree ($(took "$t"))" ||
		{ diag "$(tail -40 "$WORK/a/build.log")"; echo "Bail out! the package build failed"; exit 1; }
	for p in "${PKGS[@]}"; do
		[ -f "$DEBS/${p}_${VERSION}_$ARCH.deb" ]; ok $? "it built ${p}_${VERSION}_$ARCH.deb"
	done
	like "$(grep -E '^# (PASS|FAIL|ERROR):' "$WORK/a/build.log" | tr '\n' ' ')" \
		'^# PASS: +[1-9][0-9]* # FAIL: +0 # ERROR: +0 $' "the package build ran the unit tests, all passed"

	# Again elsewhere, at another umask, time zone and locale, without
	# the tests: every .deb must be the same bit for bit.
	t=$(date +%s)
	(umask 0002; build "$WORK/b/elsewhere" DEB_BUILD_OPTIONS=nocheck TZ=Asia/Kolkata LC_ALL=C.UTF-8)
	ok $? "a second build in another directory ($(took "$t"))" || diag "$(tail -20 "$WORK/b/elsewhere/build.log")"
	for f in "$DEBS"/*.deb; do
		g=$WORK/b/elsewhere/$(basename "$f")
		if cmp -s "$f" "$g"; then pass "reproducible: $(basename "$f") is bit-identical"
		else
			fail "reproducible: $(basename "$f") is bit-identical"
			command -v diffoscope >/dev/null && diag "$(diffoscope --text - "$f" "$g" 2>&1 | head -60)"
		fi
	done

	lintian --fail-on error,warning --display-info --info "$DEBS/kubehsm_${VERSION}_$ARCH.changes" >"$WORK/lintian.log" 2>&1
	ok $? "lintian: no error and no warning" || diag "$(cat "$WORK/lintian.log")"
	lint=$(grep -v '^running with root privileges' "$WORK/lintian.log")
	[ -z "$lint" ] && pass "lintian: no tag at all, not even info" || { fail "lintian: no tag at all"; diag "$lint"; }

	# --- what the packages hold ----------------------------------------
	contents() { dpkg-deb -c "$DEBS/${1}_${VERSION}_$ARCH.deb" | awk '{print $1, $6}' | sed 's|^\(.*\) \./|\1 /|'; }
	field() { dpkg-deb -f "$DEBS/${1}_${VERSION}_$ARCH.deb" "$2"; }
	# source_set "SRC (= VER), ...": the source names, sorted, one space apart;
	# an entry without "(= version)" shows as NAME?.
	source_set() {
		tr ',' '\n' <<<"$1" | sed -E 's/^ +//; s/ +$//; /^$/d' |
			sed -E 's/^([^ ]+) \(= [^)]+\)$/\1/; t; s/^([^ ]+).*/\1?/' |
			sort | tr '\n' ' ' | sed 's/ $//'
	}
	PAMC=$(contents libpam-kubehsm) KHC=$(contents kubehsm)
	grep -qx -- "-rw-r--r-- $PAMDIR/pam_kubehsm.so" <<<"$PAMC"
	ok $? "libpam-kubehsm: pam_kubehsm.so, mode 0644, in $PAMDIR (pam.pc)"
	grep -qx -- "-rw-r--r-- /usr/lib/$MA/kubehsm/kubehsm-polkit.so" <<<"$PAMC"
	ok $? "libpam-kubehsm: the polkit plugin beside it in /usr/lib/$MA/kubehsm"
	grep -qx -- "-rw-r--r-- /usr/share/pam-configs/kubehsm" <<<"$PAMC"
	ok $? "libpam-kubehsm: the pam-auth-update profile /usr/share/pam-configs/kubehsm"
	grep -qE ' /usr/share/man/man8/pam_kubehsm\.8\.gz$' <<<"$PAMC"; ok $? "libpam-kubehsm: pam_kubehsm(8)"
	grep -qx -- "-rwxr-xr-x /usr/libexec/kubehsm/kubehsm-login" <<<"$KHC"
	ok $? "kubehsm: kubehsm login's root half /usr/libexec/kubehsm/kubehsm-login, mode 0755 (pkexec runs it; never setuid)"
	grep -qx -- "-rw-r--r-- /etc/pam.d/kubehsm" <<<"$KHC"
	ok $? "kubehsm: its PAM service /etc/pam.d/kubehsm"
	like "$(field kubehsm Recommends)" "(^|, )pkexec(,|$)" "kubehsm recommends pkexec (kubehsm login)"
	grep -qx -- "-rwxr-xr-x /usr/bin/kubehsm" <<<"$KHC"; ok $? "kubehsm: /usr/bin/kubehsm, mode 0755"
	grep -qx -- "-rwxr-xr-x /usr/sbin/kubehsm-relayd" <<<"$KHC"
	ok $? "kubehsm: /usr/sbin/kubehsm-relayd, mode 0755"
	grep -qx -- "-rw-r--r-- $UNITDIR/kubehsm-relayd.service" <<<"$KHC"
	ok $? "kubehsm: the kubehsm-relayd systemd unit in $UNITDIR (systemd.pc)"
	unlike "$(dpkg-deb -I "$DEBS/kubehsm_${VERSION}_$ARCH.deb" postinst 2>/dev/null)" \
		'deb-systemd-invoke (start|restart)|systemctl.*enable' \
		"kubehsm: installing neither enables nor starts kubehsm-relayd (no relay section yet)"
	grep -qx -- "-rwxr-xr-x /usr/libexec/kubehsm/kubehsm-tool" <<<"$KHC"
	ok $? "kubehsm: kubehsm-tool (every subcommand but exec) in /usr/libexec/kubehsm, mode 0755"
	grep -qx -- "-rwxr-xr-x /usr/libexec/kubehsm/kubehsm-keyops" <<<"$KHC"
	ok $? "kubehsm: the keyring helper kubehsm-keyops in /usr/libexec/kubehsm, mode 0755 (never setuid)"
	for f in /etc/kubehsm/kubehsm.conf /usr/share/polkit-1/actions/org.kubehsm.policy \
		/usr/share/man/man1/kubehsm.1.gz /usr/share/man/man5/kubehsm.conf.5.gz \
		/usr/share/man/man8/kubehsm-relayd.8.gz \
		/usr/share/doc/kubehsm/README.Debian.gz /usr/share/doc/kubehsm/examples/pam.d/login \
		/usr/share/doc/kubehsm/examples/pam.d/sshd; do
		grep -qE " $f\$" <<<"$KHC"; ok $? "kubehsm: $f"
	done
	is "$(dpkg-deb -I "$DEBS/kubehsm_${VERSION}_$ARCH.deb" conffiles | sort | tr '\n' ' ')" \
		"/etc/kubehsm/kubehsm.conf /etc/pam.d/kubehsm " \
		"kubehsm: its conffiles are the policy and the kubehsm PAM service"
	is "$(grep -E '\.l?a$' <<<"$PAMC$KHC")" "" "no .la or .a file in either package"
	is "$(awk '$1 ~ /^[^d].*[sStT]/' <<<"$PAMC"$'\n'"$KHC")" "" "no setuid, setgid or sticky file in either package"
	unlike "$(for p in "${PKGS[@]}"; do dpkg-deb -I "$DEBS/${p}_${VERSION}_$ARCH.deb" preinst postinst prerm postrm 2>/dev/null; done)" \
		'setcap|dpkg-statoverride|chmod [ug]\+s|chmod [0-7]*[2467][0-7]{3}' \
		"no maintainer script sets a capability, a statoverride or a setuid bit"
	is "$(field libpam-kubehsm Multi-Arch) $(field kubehsm Multi-Arch)" "same foreign" \
		"Multi-Arch: same for libpam-kubehsm, foreign for kubehsm"
	like "$(field libpam-kubehsm Depends)" "(^|, )kubehsm \(= $VERSION\)(,|$)" "libpam-kubehsm depends on kubehsm of its version"
	like "$(field libpam-kubehsm Depends)" "(^|, )libpam-runtime(,|$)" "and on libpam-runtime (pam-auth-update)"
	like "$(field libpam-kubehsm Depends)" "libpam0g " "and its shared libraries come from \${shlibs:Depends}"
	is "$(field kubehsm Suggests)" "opensc, p11-kit-modules, softhsm2" \
		"kubehsm suggests opensc, softhsm2 and p11-kit-modules (a token forwarded from a laptop)"
	# (dpkg-gencontrol may order the list its own way: compared as a set)
	is "$(source_set "$(field kubehsm Built-Using)")" "glibc keyutils libconfig" \
		"Built-Using: glibc, libconfig and keyutils, each with its version (LGPL code embedded in kubehsm's programs)"
	is "$(source_set "$(field kubehsm Static-Built-Using)")" "glibc jansson keyutils libconfig libyaml" \
		"Static-Built-Using: glibc, jansson, libconfig, keyutils and libyaml, each with its version (embedded in kubehsm's programs)"

	mkdir -p "$WORK/x"
	for p in "${PKGS[@]}"; do dpkg-deb -x "$DEBS/${p}_${VERSION}_$ARCH.deb" "$WORK/x"; done
	for f in "$WORK/x$PAMDIR/pam_kubehsm.so" "$WORK/x/usr/lib/$MA/kubehsm/kubehsm-polkit.so" \
		"$WORK/x/usr/libexec/kubehsm/kubehsm-tool" "$WORK/x/usr/sbin/kubehsm-relayd"; do
		d=$(readelf -d "$f" 2>/dev/null) l=$(readelf -lW "$f" 2>/dev/null)
		y=$(readelf --dyn-syms -W "$f" 2>/dev/null | grep -oE '__[a-z_]+_chk' | sort -u)
		grep -qE 'BIND_NOW|FLAGS_1.*NOW' <<<"$d" && grep -q GNU_RELRO <<<"$l" &&
			! grep -q TEXTREL <<<"$d" && grep -q 'Elf file type is DYN' <<<"$l" &&
			grep -qx __stack_chk <<<"$y" && grep -v __stack_chk <<<"$y" | grep -q .
		ok $? "${f#"$WORK/x"}: PIE, full RELRO (bind now), no text relocations, stack protector, fortified calls"
	done
	# The static-pie front end and keyring helper: no loader, no library,
	# and still PIE with full RELRO.  (They import nothing and are stripped,
	# so there are no symbols to show the stack protector here:
	# tests/integration/helper/front.sh checks it on the build tree.)
	for f in "$WORK/x/usr/bin/kubehsm" "$WORK/x/usr/libexec/kubehsm/kubehsm-keyops"; do
		d=$(readelf -d "$f" 2>/dev/null) l=$(readelf -lW "$f" 2>/dev/null)
		grep -qE 'BIND_NOW|FLAGS_1.*NOW' <<<"$d" && grep -q GNU_RELRO <<<"$l" &&
			! grep -q TEXTREL <<<"$d" && grep -q 'Elf file type is DYN' <<<"$l" &&
			! grep -q INTERP <<<"$l" && ! grep -q NEEDED <<<"$d"
		ok $? "${f#"$WORK/x"}: static-pie (no program interpreter, no library), full RELRO, no text relocations"
	done
	f=$WORK/x/usr/bin/kubehsm
	is "$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')" "" \
		"the front end needs no shared library (libc, jansson and libkeyutils embedded)"
fi

# --- install -----------------------------------------------------------------
if [ $mode = full ]; then
	on_exit "pkgs_installed && ${APT[*]} purge ${PKGS[*]}"
	on_exit "rm -f /etc/kubehsm/users-ca.pem /etc/kubehsm/issuer.pem /etc/kubehsm/issuer.pin"
	t=$(date +%s) t_installed=$(date +%s)
	out=$("${APT[@]}" install --no-install-recommends "$DEBS/kubehsm_${VERSION}_$ARCH.deb" \
		"$DEBS/libpam-kubehsm_${VERSION}_$ARCH.deb" 2>&1)
	ok $? "apt install ./kubehsm_*.deb ./libpam-kubehsm_*.deb ($(took "$t"))" ||
		{ diag "$out"; echo "Bail out! cannot install the packages"; exit 1; }
else
	on_exit "pam-auth-update --disable kubehsm"
	on_exit "rm -f /etc/kubehsm/users-ca.pem /etc/kubehsm/issuer.pem /etc/kubehsm/issuer.pin"
	pkgs_installed; ok $? "kubehsm and libpam-kubehsm are installed" || { echo "Bail out! not installed"; exit 1; }
fi
is "$(diff -r -x kubehsm "$WORK/pam.d.before" /etc/pam.d)" "" \
	"installed, the profile is off: /etc/pam.d is unchanged but for kubehsm login's own service"
[ -f /etc/pam.d/kubehsm ]; ok $? "/etc/pam.d/kubehsm (kubehsm login) is installed"
KUBEHSM=/usr/bin/kubehsm
is "$(stat -c %a "$KUBEHSM")" 755 "/usr/bin/kubehsm is mode 0755: never setuid"
is "$(dpkg-statoverride --list | grep -i kubehsm)" "" "and dpkg-statoverride knows nothing of kubehsm"
run "$KUBEHSM" --version
is "$rc:$out" "0:kubehsm ${VERSION%%-*}" "the installed front end runs the installed tool module"
run "$KUBEHSM" config check
isnt "$rc" 0 "the shipped policy fails kubehsm config check before the first steps"
like "$err" '^kubehsm: /etc/kubehsm/kubehsm\.conf:[0-9]+: trust\.ca_file /etc/kubehsm/users-ca\.pem: No such file or directory$' \
	"with one line: the users CA is missing"

# --- users: one with a token, one without; both have a password -----------
pki_init "$KH_TMP/pki"
logins_softhsm   # login(1) and everything else here use the test's token store
PIN=271828 ISSUER_PIN=$(openssl rand -hex 8)
users() {
	make_user alice && make_user bob || return 1
	logins_passwd "$alice" "alice-pw-$$" && logins_passwd "$bob" "bob-pw-$$" || return 1
	pki_ca users "kubehsm deb-check users CA" &&
	pki_user_cert "$alice" users --cn "$alice" --o dev &&
	pki_token_init "$alice" "$PIN" && pki_token_import "$alice" "$PIN" "$alice" kube 01
}
users; ok $? "users $alice (a SoftHSM token, CN=$alice, O=dev) and $bob (no token)" ||
	{ echo "Bail out! cannot create the users"; exit 1; }
# answered LOG: the prompts the pty driver answered during a login, in order.
answered() { sed -n 's/^\[logindrv\] answered \([a-z]*\) prompt .*/\1/p' "$1" | tr '\n' ' '; }

# --- enable the profile ------------------------------------------------------
active() { grep -vE '^[[:space:]]*(#|$)' "/etc/pam.d/$1"; }
run pam-auth-update --enable kubehsm
is "$rc" 0 "pam-auth-update --enable kubehsm" || diag "$out$err"
AUTH=$(active common-auth)
first=$(head -1 <<<"$AUTH")
like "$first" $'^auth\t\\[success=([0-9]+) default=ignore\\]\tpam_kubehsm\\.so *$' \
	"common-auth: pam_kubehsm.so comes first, [success=N default=ignore], no options" || diag "$AUTH"
# success=N must land on the pam_permit line right after the fall-back pam_deny.
n=$(sed -n 's/^auth\t\[success=\([0-9]*\) .*/\1/p' <<<"$first")
is "$(sed -n "$((n + 2))p" <<<"$AUTH")" $'auth\trequired\t\t\tpam_permit.so' \
	"common-auth: a token login jumps past pam_deny to pam_permit"
like "$(sed -n 2p <<<"$AUTH")" $'^auth\t\\[success=[0-9]+ default=ignore\\]\tpam_unix\\.so nullok try_first_pass *$' \
	"common-auth: pam_unix.so follows, the password fall-back"
grep -qE $'^session\toptional\t+pam_kubehsm\\.so *$' <(active common-session)
ok $? "common-session: session optional pam_kubehsm.so" || diag "$(active common-session)"
is "$(grep -c kubehsm /etc/pam.d/common-session-noninteractive /etc/pam.d/common-account /etc/pam.d/common-password | awk -F: '{s += $2} END {print s}')" 0 \
	"not in common-session-noninteractive, common-account or common-password"

# Enabled before the policy is set up (no users CA): nobody is locked out.
# login_once: $rc is the status of LOGIN_CMD in the login, 201 if the login
# failed, 202 on a timeout.
LOGIN_PIN=$PIN LOGIN_PASSWORD=alice-pw-$$ LOGIN_CMD='kubehsm status' login_once /bin/login "$alice"
is "$(answered "$LOGIN_ONCE_LOG")" "password " "with the policy not loadable, $alice gets the password prompt only"
[ "$rc" -lt 200 ]; ok $? "and logs in with the password" || diag "$err$(tr -d '\r' <"$LOGIN_ONCE_LOG" | tail -20)"

# --- README.Debian's first steps: users CA, issuer token, PIN file -----------
issuer() {
	pki_ca issuerca "kubehsm deb-check issuer CA" &&
	pki_issuer_token kubehsm-host "$ISSUER_PIN" issuerca &&
	install -m 0644 "$PKI_DIR/users.pem" /etc/kubehsm/users-ca.pem &&
	install -m 0644 "$PKI_DIR/issuer.pem" /etc/kubehsm/issuer.pem &&
	install -m 0600 "$PKI_DIR/issuer.pin" /etc/kubehsm/issuer.pin
}
issuer; ok $? "users CA, issuer certificate and issuer PIN file in /etc/kubehsm; token 'kubehsm-host'" ||
	{ echo "Bail out! cannot set up the issuer"; exit 1; }
run "$KUBEHSM" config check
is "$rc" 0 "kubehsm config check: the shipped policy passes once its files exist" || diag "$err"
is "$(dpkg --verify kubehsm)" "" "and it is the shipped file, unmodified (dpkg --verify)"

# --- a day at the bastion --------------------------------------------------------
kubeapi_start "$PKI_DIR/issuerca.pem" || { echo "Bail out! nginx did not start"; exit 1; }
for u in "$alice" "$bob"; do
	home=$(getent passwd "$u" | cut -d: -f6)
	mkdir -p "$home/.kube"
	{ printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: %s\n    certificate-authority: %s\n' \
		"$KUBEAPI_URL" "$KUBEAPI_CA"
	  printf 'contexts:\n- name: k\n  context: {cluster: k, user: kubehsm}\ncurrent-context: k\n'
	  "$KUBEHSM" kubeconfig --name kubehsm; } >"$home/.kube/config"
	chown -R "$u:" "$home/.kube"; chmod 0600 "$home/.kube/config"
done
grep -q '^      command: /usr/bin/kubehsm$' "$home/.kube/config"
ok $? "kubehsm kubeconfig names /usr/bin/kubehsm as the exec plugin"

LOGIN_PIN=$PIN login_open tok /bin/login "$alice"
ok $? "$alice logs in through login(1) with the token PIN" || diag "$(login_transcript tok)"
is "$(answered "$LOGINS_DIR/login.tok/transcript")" "pin " "login asked for the token PIN, and for nothing else"
login_run tok 'command -v kubehsm'
is "$out" /usr/bin/kubehsm "in the session, kubehsm is /usr/bin/kubehsm"
login_run tok "$K133 get --raw /version"
like "$rc:$out" '^0:.*"gitVersion":"v1\.30\.0-kubehsm"' "kubectl 1.33 get --raw /version, no prompt" ||
	diag "$out$err"
is "$err" "" "and nothing on stderr"
login_run tok "$K133 auth whoami"
like "$out" "CN=$alice" "kubectl 1.33 auth whoami: the server saw the session certificate of $alice"
login_run tok 'kubehsm status'
like "$rc:$out" "^0:Kube session: +active$" "kubehsm status: the session is active" || diag "$out$err"
like "$out" "^Identity: +$alice$" "for kube user $alice"
like "$out" "^Groups: +dev$" "in the group from the certificate's O"
# kubehsm login as installed: the shipped org.kubehsm.login action names
# /usr/libexec/kubehsm/kubehsm-login, real pkexec runs it, it runs the
# shipped /etc/pam.d/kubehsm.  polkitd here only for this (a private bus).
login_run tok 'kubehsm logout'
is "$rc" 0 "kubehsm logout ends the login's session"
KH_POLKIT_ACTIONS=installed polkit_start --system || { echo "Bail out! polkitd"; exit 1; }
LOGIN_PIN=$PIN login_run_tty tok 'kubehsm login'
like "$rc:$out" "^0:Kube session started" "kubehsm login (pkexec, /usr/libexec/kubehsm/kubehsm-login, /etc/pam.d/kubehsm) starts it again" ||
	diag "$out$err"
like "$err" "PIN for token '$alice'" "asking the token PIN on the login's terminal"
login_run tok "$K133 auth whoami"
like "$out" "CN=$alice" "kubectl 1.33 after kubehsm login: the server saw $alice"
polkit_stop
login_close tok
is "$rc" 0 "logout: login ends with status 0"
run as_user "$alice" "$K133" get pods
isnt "$rc" 0 "after the logout, kubectl as $alice fails"
like "$err" "kubehsm: your kube session was ended" "and says the session ended" || diag "$err"

# The same through sshd with Debian's own /etc/pam.d/sshd (common-auth,
# common-session): the PAM service is "sshd" on every OpenSSH, whether it
# comes from the program's name (9.2) or PAMServiceName's default (>= 9.8).
if [ -x /usr/sbin/sshd ] && command -v ssh >/dev/null; then
	SSHD_SERVICE=sshd
	sshd_start
	ssh_argv "$alice" kbd
	LOGIN_PIN=$PIN LOGIN_CMD="$K133 auth whoami" login_once "${SSH_ARGV[@]}"
	is "$(answered "$LOGIN_ONCE_LOG")" "pin " \
		"sshd ($(/usr/sbin/sshd -V 2>&1 | sed -n '1s/[ ,].*//p'), /etc/pam.d/sshd): $alice is asked for the token PIN only"
	is "$rc" 0 "and kubectl 1.33 authenticates in that ssh session" ||
		diag "$err$(tr -d '\r' <"$LOGIN_ONCE_LOG" | tail -20)$(tail -20 "$SSHD_LOG")"
	like "$out" "CN=$alice" "the server saw $alice"
	sshd_stop
else
	for i in 1 2 3; do skip "no openssh-server and openssh-client here: the ssh login"; done
fi

LOGIN_PASSWORD=bob-pw-$$ LOGIN_CMD='kubehsm status' login_once /bin/login "$bob"
is "$(answered "$LOGIN_ONCE_LOG")" "password " "$bob, who has no token, gets the password prompt only"
[ "$rc" -lt 200 ]; ok $? "and logs in with the password" || diag "$err$(tr -d '\r' <"$LOGIN_ONCE_LOG" | tail -20)"
like "$rc:$out" "^1:No kube session" "and has no kube session"

LOGIN_PIN=000000 LOGIN_PASSWORD=alice-pw-$$ LOGIN_CMD='kubehsm status' login_once /bin/login "$alice"
is "$(answered "$LOGIN_ONCE_LOG")" "pin password " "after a wrong PIN, login asks for the password"
[ "$rc" -lt 200 ]; ok $? "which logs $alice in" || diag "$err$(tr -d '\r' <"$LOGIN_ONCE_LOG" | tail -20)"
grep -q "kubehsm: token '$alice': wrong PIN" "$LOGIN_ONCE_LOG"
ok $? "after one clear line about the PIN"
like "$rc:$out" "^1:No kube session" "and that login has no kube session"

# --- the end -----------------------------------------------------------------
if [ $mode = full ]; then
	t=$(date +%s)
	out=$("${APT[@]}" purge "${PKGS[@]}" 2>&1)
	ok $? "apt purge kubehsm libpam-kubehsm ($(took "$t"))" || diag "$out"
	diag "the packages were installed for $(took "$t_installed")"
	is "$(dpkg-query -W -f='${db:Status-Abbrev}\n' "${PKGS[@]}" 2>/dev/null | grep -v '^un')" "" \
		"dpkg knows neither package any more (no config-files state)"
	[ ! -e /etc/kubehsm ]; ok $? "/etc/kubehsm is gone (policy, CA, issuer certificate and PIN file)"
	left=
	for f in /usr/bin/kubehsm "$PAMDIR"/pam_kubehsm.so /usr/lib/"$MA"/kubehsm /usr/libexec/kubehsm \
		/usr/share/pam-configs/kubehsm /usr/share/polkit-1/actions/org.kubehsm.policy \
		/usr/share/doc/kubehsm /usr/share/doc/libpam-kubehsm; do
		[ -e "$f" ] && left="$left $f"
	done
	is "$left" "" "no file of kubehsm is left (program, module, plugins, profile, action, docs)"
else
	run pam-auth-update --disable kubehsm
	is "$rc" 0 "pam-auth-update --disable kubehsm" || diag "$out$err"
fi
if [ $mode = full ]; then
	is "$(grep -rl kubehsm /etc/pam.d)" "" "nothing in /etc/pam.d names kubehsm"
	is "$(diff -r "$WORK/pam.d.before" /etc/pam.d)" "" "/etc/pam.d is exactly as it was before"
else
	# Still installed: only kubehsm login's own service remains.
	is "$(grep -rl kubehsm /etc/pam.d | grep -vx /etc/pam.d/kubehsm)" "" \
		"nothing in /etc/pam.d but the kubehsm service names kubehsm"
fi
[ $mode = full ] && { grep -qx kubehsm /var/lib/pam/seen; isnt $? 0 "pam-auth-update forgot the profile"; }
diag "deb-check took $(took "$t0")"
done_testing
