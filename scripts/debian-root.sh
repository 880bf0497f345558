#!/bin/bash
# A Debian root (another release than the host's) to build and test kubehsm
# in, on this machine, as root.
#
#   scripts/debian-root.sh make SUITE DIR    make DIR a SUITE root (trixie,
#                                            testing, ...) or reuse it
#   scripts/debian-root.sh run DIR CMD...    run CMD inside DIR
#
# make: debootstrap from the Debian mirror the host's apt already uses (read
# here, at run time, from /etc/apt/sources.list.d/debian.sources or
# /etc/apt/sources.list: no host name is written into the tree), then the
# SUITE-updates and SUITE-security suites where the mirrors have them, a
# policy-rc.d that keeps package scripts from starting services, users' ids
# from 50000 up, or KH_ROOT_UID_MIN (the kernel keyring is shared with the
# host and other roots: the root's users must not meet their keys), and the host's local CA certificates (npm
# and the like go through the same network as the host).  A root made
# earlier by this same script for the same suite is reused while it is
# intact (a stamp names the suite and this script's version); otherwise DIR
# is removed and made again.
#
# run: a private mount and PID namespace, so nothing started inside outlives
# the command and no mount shows on the host: /dev and /sys bound in, a
# fresh /proc, a tmpfs /run, the host's Google Cloud SDK (kubectl 1.27-1.33;
# Debian packages no recent kubectl) read-only, then chroot with a clean
# environment.  Ports, abstract sockets and the kernel keyring stay shared
# with the host.
set -euo pipefail

die() { echo "debian-root: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root"

stamp_name=.kubehsm-root
# Raise it when make_root changes what a root holds: a root made by an
# older version is made again.
root_version=1

# host_uri SECURITY: the URI of the host's Debian (0) or Debian security (1)
# archive, from its deb822 sources or its one-line sources.list.
host_uri() {
	local want_security=$1 f uris suites
	for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# deb822: stanzas separated by blank lines; take URIs and Suites.
		while IFS=$'\t' read -r uris suites; do
			if [[ " $suites " == *-security* ]]; then
				[ "$want_security" = 1 ] && { echo "${uris%% *}"; return; }
			else
				[ "$want_security" = 0 ] && { echo "${uris%% *}"; return; }
			fi
		done < <(awk 'BEGIN { RS = ""; FS = "\n" }
			/(^|\n)Types:[^\n]*deb([ \t\n]|$)/ && !/(^|\n)Enabled: *no/ {
				u = s = ""
				for (i = 1; i <= NF; i++) {
					if ($i ~ /^URIs:/) { u = $i; sub(/^URIs: */, "", u) }
					if ($i ~ /^Suites:/) { s = $i; sub(/^Suites: */, "", s) }
				}
				if (u != "" && u !~ /debian/) next
				if (u != "") print u "\t" s
			}' "$f")
	done
	if [ -f /etc/apt/sources.list ]; then
		local line
		line=$(awk -v sec="$want_security" '$1 == "deb" {
				uri = ""; suite = ""
				for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) { uri = $i; suite = $(i + 1); break }
				if (uri !~ /debian/) next
				if ((suite ~ /-security/) == (sec == 1)) { print uri; exit }
			}' /etc/apt/sources.list)
		[ -n "$line" ] && { echo "$line"; return; }
	fi
	return 1
}

# has_suite URI SUITE: does the archive at URI carry SUITE?
has_suite() {
	curl -fsS -o /dev/null --max-time 30 "$1/dists/$2/Release" 2>/dev/null
}

root_intact() {   # root_intact DIR SUITE
	local dir=$1 suite=$2
	[ -f "$dir/$stamp_name" ] &&
		[ "$(cat "$dir/$stamp_name")" = "$suite v$root_version" ] &&
		[ -x "$dir/usr/bin/apt-get" ] && [ -x "$dir/bin/bash" ] &&
		chroot "$dir" /bin/true 2>/dev/null
}

make_root() {
	local suite=$1 dir=$2 mirror security
	[ -n "$suite" ] && [ -n "$dir" ] || die "usage: $0 make SUITE DIR"
	case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
	if root_intact "$dir" "$suite"; then
		echo "debian-root: reusing the $suite root in $dir"
		return 0
	fi
	command -v debootstrap >/dev/null ||
		die "needs debootstrap (apt-get install debootstrap)"
	mirror=$(host_uri 0) || die "no Debian mirror in the host's apt sources"
	security=$(host_uri 1) || security=
	if [ -e "$dir" ]; then
		# Never remove what this script did not make.
		[ -f "$dir/$stamp_name" ] || [ -f "$dir/$stamp_name.partial" ] ||
			[ -z "$(ls -A "$dir")" ] ||
			die "$dir exists and is not a root this script made; remove it or name another"
		echo "debian-root: $dir is stale or incomplete; making it again"
		rm -rf --one-file-system "$dir"
	fi
	mkdir -p "$dir"
	echo "$suite" >"$dir/$stamp_name.partial"
	echo "debian-root: debootstrap $suite from the host's mirror into $dir"
	debootstrap --variant=minbase --include=ca-certificates,apt-utils,passwd,curl \
		"$suite" "$dir" "$mirror" >"$dir.debootstrap.log" 2>&1 ||
		{ tail -20 "$dir.debootstrap.log" >&2; die "debootstrap failed (log: $dir.debootstrap.log)"; }
	rm -f "$dir.debootstrap.log"

	# The suites a stable release takes its fixes from, where they exist
	# (testing has a security suite, unstable neither).
	local suites=$suite sec_line=
	has_suite "$mirror" "$suite-updates" && suites="$suites $suite-updates"
	if [ -n "$security" ] && has_suite "$security" "$suite-security"; then
		sec_line=$(printf '\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
			"$security" "$suite")
	fi
	rm -f "$dir/etc/apt/sources.list"
	printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n%s\n' \
		"$mirror" "$suites" "$sec_line" >"$dir/etc/apt/sources.list.d/debian.sources"

	# The host's apt may read a mirror frozen at a date (a snapshot) and
	# then not check the Release files' Valid-Until: the root does as the
	# host does, or testing's expired Release files stop apt-get update.
	if [ "$(apt-config dump Acquire::Check-Valid-Until 2>/dev/null)" = 'Acquire::Check-Valid-Until "false";' ]; then
		echo 'Acquire::Check-Valid-Until "false";  // as the host that made this root' \
			>"$dir/etc/apt/apt.conf.d/50kubehsm-host"
	fi
	# Package scripts start no service in the root.
	printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
	chmod 0755 "$dir/usr/sbin/policy-rc.d"
	# Ordinary users far from the host's uids; two roots used at the same
	# time need ranges of their own (KH_ROOT_UID_MIN).
	local uid_min=${KH_ROOT_UID_MIN:-50000}
	[[ $uid_min =~ ^[1-9][0-9]*$ ]] || die "KH_ROOT_UID_MIN must be a number, not '$uid_min'"
	sed -i -E "s/^(UID_MIN|GID_MIN)[[:space:]].*/\\1\t\t\t$uid_min/; s/^(UID_MAX|GID_MAX)[[:space:]].*/\\1\t\t\t$((uid_min + 9999))/" \
		"$dir/etc/login.defs"
	grep -qE "^UID_MIN[[:space:]]+$uid_min\$" "$dir/etc/login.defs" || die "could not set UID_MIN in $dir/etc/login.defs"
	# The host's own CA certificates (a proxy's, say) into the root's bundle.
	if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
		cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/"
		chroot "$dir" update-ca-certificates >/dev/null 2>&1 ||
			die "update-ca-certificates failed in $dir"
	fi
	echo "debian-root: apt-get update and upgrade in the root (the fixes since the release)"
	run_in "$dir" env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null </dev/null
	run_in "$dir" env DEBIAN_FRONTEND=noninteractive apt-get upgrade -y -q >/dev/null </dev/null
	echo "$suite v$root_version" >"$dir/$stamp_name"
	rm -f "$dir/$stamp_name.partial"
	echo "debian-root: $suite root ready in $dir"
}

# run_in DIR CMD...: CMD in DIR, in private mount and PID namespaces.
run_in() {
	local dir=$1; shift
	[ $# -gt 0 ] || die "usage: $0 run DIR CMD..."
	[ -x "$dir/bin/sh" ] || die "$dir is not a root (make it first: $0 make SUITE DIR)"
	cp -L /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
	local env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}"
		NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
		SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt)
	local v
	for v in CI http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
		[ -n "${!v:-}" ] && env+=("$v=${!v}")
	done
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare --pid --fork --mount --propagation private -- bash -euc '
		dir=$1; shift
		mount --rbind "$dir" "$dir"
		mount --rbind /dev "$dir/dev"
		mount --rbind /sys "$dir/sys"
		mount -t proc proc "$dir/proc"
		mount -t tmpfs -o mode=0755 tmpfs "$dir/run"
		mkdir -p "$dir/run/lock"
		if [ -d /usr/lib/google-cloud-sdk ]; then
			mkdir -p "$dir/usr/lib/google-cloud-sdk"
			mount --bind -o ro /usr/lib/google-cloud-sdk "$dir/usr/lib/google-cloud-sdk"
		fi
		exec chroot "$dir" "$@"
	' debian-root "$dir" env -i "${env[@]}" "$@"
}

case ${1:-} in
make) shift; make_root "${1:-}" "${2:-}" ;;
run) shift; d=${1:-}; [ -n "$d" ] || die "usage: $0 run DIR CMD..."; shift
	case $d in /*) ;; *) d=$PWD/$d ;; esac
	run_in "$d" "$@" ;;
*) die "usage: $0 make SUITE DIR | $0 run DIR CMD..." ;;
esac
