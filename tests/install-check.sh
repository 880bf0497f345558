#!/bin/bash
# install-check.sh DESTDIR PAMMODDIR BINDIR PKGLIBDIR SBINDIR UNITDIR PKGLIBEXECDIR:
# check what `make install` did.
# Run by `make installcheck` (and so by `make distcheck` and scripts/test.sh).
# The security properties of an install are checked, not assumed:
#   - the PAM module directory gets pam_kubehsm.so and no .la/.a beside it;
#   - the polkit plugin is in PKGLIBDIR, again without .la/.a, and the
#     module does not link libpolkit or GLib itself;
#   - kubehsm-tool (every subcommand but exec) and kubehsm-keyops (the
#     keyring helper, which acts as the user for root) are in PKGLIBEXECDIR, and
#     the polkit plugin is alone in PKGLIBDIR, without .la/.a;
#   - kubehsm-relayd is in SBINDIR and links neither libp11 nor PAM; its
#     systemd unit (when UNITDIR is given) starts the installed daemon;
#   - nothing installed is setuid/setgid or carries a file capability.
set -u
destdir=$1 pammoddir=$2 bindir=$3 pkglibdir=$4 sbindir=${5:-} unitdir=${6:-} pkglibexecdir=$7
relayd="$destdir$sbindir/kubehsm-relayd"
module="$destdir$pammoddir/pam_kubehsm.so"
plugin="$destdir$pkglibdir/kubehsm-polkit.so"
helper="$destdir$bindir/kubehsm"
tool="$destdir$pkglibexecdir/kubehsm-tool"
keyops="$destdir$pkglibexecdir/kubehsm-keyops"
n=0 failed=0
check() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
}

[ -f "$module" ]; check $? "pam_kubehsm.so is installed in $pammoddir"
extra=$(find "$destdir$pammoddir" -maxdepth 1 -name 'pam_kubehsm*' ! -name pam_kubehsm.so | tr '\n' ' ')
[ -z "$extra" ]; check $? "no .la or .a beside the module${extra:+ (found: $extra)}"
[ -x "$helper" ]; check $? "kubehsm is installed in $bindir"
[ -x "$tool" ]; check $? "kubehsm-tool is installed in $pkglibexecdir"
[ -x "$keyops" ]; check $? "the keyring helper kubehsm-keyops is installed in $pkglibexecdir"
# Staged (DESTDIR), kubehsm cannot find the tool yet and must name the
# path it tried; installed for real, it runs it.
out=$("$helper" --version 2>&1)
case "$out" in
"kubehsm "[0-9]*) true ;;
*"$pkglibexecdir/kubehsm-tool"*) true ;;
*) false ;;
esac
check $? "kubehsm looks for its tool where it was installed (${out%%;*})"
[ -f "$plugin" ]; check $? "kubehsm-polkit.so is installed in $pkglibdir"
extra=$(find "$destdir$pkglibdir" -maxdepth 1 ! -type d ! -name kubehsm-polkit.so 2>/dev/null | tr '\n' ' ')
[ -z "$extra" ]; check $? "only the polkit plugin in $pkglibdir${extra:+ (found: $extra)}"
needed=$(objdump -p "$module" 2>/dev/null | awk '/NEEDED/ {print $2}' | tr '\n' ' ')
case "$needed" in
*polkit* | *glib* | *gio* | *gobject*) false ;;
*libpam*) true ;;
*) false ;;
esac
check $? "pam_kubehsm.so links neither libpolkit nor GLib (NEEDED: $needed)"
if [ -n "$sbindir" ]; then
	[ -x "$relayd" ]; check $? "kubehsm-relayd is installed in $sbindir"
	needed=$(objdump -p "$relayd" 2>/dev/null | awk '/NEEDED/ {print $2}' | tr '\n' ' ')
	# (libssl on the raw descriptor since issue #23, not libevent_openssl)
	rc=0
	for lib in libevent- libssl. libhttp_parser.; do
		case "$needed" in *"$lib"*) ;; *) rc=1 ;; esac
	done
	case "$needed" in *libp11* | *libpam* | *polkit*) rc=1 ;; esac
	[ $rc = 0 ]
	check $? "kubehsm-relayd links libevent, libssl and http-parser, not libp11, PAM or polkit (NEEDED: $needed)"
fi
if [ -n "$unitdir" ] && [ "$unitdir" != no ]; then
	grep -qx "ExecStart=$sbindir/kubehsm-relayd --foreground" \
		"$destdir$unitdir/kubehsm-relayd.service" 2>/dev/null
	check $? "kubehsm-relayd.service in $unitdir starts $sbindir/kubehsm-relayd"
fi
for f in "$module" "$helper" "$tool" "$keyops" "$plugin" "$relayd"; do
	[ -e "$f" ] || continue
	[ -z "$(find "$f" -perm /6000)" ]; check $? "$(basename "$f") has no setuid or setgid bit"
	caps=$(getcap "$f" 2>/dev/null)
	[ -z "$caps" ]; check $? "$(basename "$f") has no file capability${caps:+ ($caps)}"
done
echo "1..$n"
echo "install-check: $((n - failed)) passed, $failed failed"
[ $failed -eq 0 ]
