#!/bin/bash
# The kubehsm front end: `exec` is served by a program with no dynamic
# loader and no crypto, PKCS#11, policy or D-Bus library (it runs on every
# kubectl invocation; static-pie unless configured otherwise), and every
# other subcommand reaches kubehsm-tool unchanged, executed in the front
# end's place.
. "$KH_SRCDIR/tests/harness/tap.sh"
need_cmd readelf strace nm
TOOL="$KH_BUILDDIR/helper/kubehsm-tool"
[ -x "$KUBEHSM" ] && [ -x "$TOOL" ] || skip_all "kubehsm or kubehsm-tool not built"
# (LeakSanitizer cannot run under strace: off for a sanitizer build.)
NOLSAN="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
INFO='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}'

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' '; }

front=$(needed "$KUBEHSM")
static=no
readelf -lW "$KUBEHSM" | grep -q INTERP || static=yes
if [ $static = yes ]; then
	# Static-pie: nothing for the dynamic loader to do, and still PIE with
	# full RELRO.
	is "$(readelf -lW "$KUBEHSM" | grep -c INTERP)" 0 "kubehsm has no program interpreter (static)"
	is "$front" "" "kubehsm needs no shared library"
	like "$(readelf -hW "$KUBEHSM")" "Type: +DYN" "kubehsm is position-independent (ASLR)"
	like "$(readelf -d "$KUBEHSM")" "BIND_NOW" "kubehsm binds now ..."
	like "$(readelf -lW "$KUBEHSM")" "GNU_RELRO" "... with its relocations read-only (full RELRO)"
	nm "$KUBEHSM" | grep -q ' __stack_chk_fail$'
	ok $? "kubehsm is built with the stack protector"
	# kubehsm-tool embeds jansson, libkeyutils and libconfig in such a
	# build: it maps what the signer's floor maps, and libp11.
	is "$(needed "$TOOL" | tr ' ' '\n' | grep -vE '^(libcrypto\.so|libp11\.so|libc\.so|$)' | tr '\n' ' ')" "" \
		"kubehsm-tool maps only libcrypto, libp11 and libc (NEEDED: $(needed "$TOOL"))"
	# A static glibc program that used NSS would load the modules of
	# whatever glibc is installed: none of it is linked.  (glibc's own
	# dlopen stays linked for iconv and message catalogs, which the C
	# locale never reaches: the straces below see no file opened.)
	is "$(nm "$KUBEHSM" | grep -cE ' [TtWw] (getpw|getgr|__nss_|getaddrinfo)' || true)" 0 \
		"no NSS lookup linked into the static front end" ||
		diag "$(nm "$KUBEHSM" | grep -E ' [TtWw] (getpw|getgr|__nss_|getaddrinfo)' | head)"
else
	# A sanitizer build (or --disable-static-front): dynamic, libc and
	# the sanitizers' runtimes (jansson, libkeyutils if not embedded).
	extra=$(tr ' ' '\n' <<<"$front" | grep -vE '^(libc\.so|libjansson\.so|libkeyutils\.so|libasan\.so|libubsan\.so|libm\.so|libgcc_s\.so|libstdc\+\+\.so|$)' | tr '\n' ' ')
	is "$extra" "" "kubehsm (dynamic build) links only libc (and jansson, libkeyutils; NEEDED: $front)"
	is "$(nm -D --undefined-only "$KUBEHSM" | grep -cE ' (getpw|getgr|dlopen|dlsym)' || true)" 0 \
		"the dynamic front end neither asks NSS nor loads modules itself"
fi
unlike "$front" "libcrypto|libssl|libp11|libconfig|libglib|libgio|libpolkit" \
	"no crypto, PKCS#11, libconfig or GLib library in the exec path"
like "$(needed "$TOOL")" "libcrypto" "kubehsm-tool is the one that carries OpenSSL"
like "$(readelf -lW "$TOOL")" "INTERP" "kubehsm-tool is an ordinary dynamic program"

run "$KUBEHSM" exec --help
is "$rc" 0 "kubehsm exec --help is served by the front end"
like "$out" "exec" "and describes exec"
env "$NOLSAN" strace -f -e trace=execve,openat -o "$KH_TMP/exec.trace" "$KUBEHSM" exec --help >/dev/null 2>&1
is "$(grep -c 'execve(' "$KH_TMP/exec.trace")" 1 "exec runs in the front end alone (one execve)"
run "$KUBEHSM" --version
is "$rc:$out" "0:kubehsm $(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$KH_BUILDDIR/config.h")" \
	"other subcommands reach kubehsm-tool with their arguments"
env "$NOLSAN" strace -f -s 512 -e trace=execve,openat -o "$KH_TMP/tool.trace" "$KUBEHSM" config --help >/dev/null 2>&1
execs=$(grep 'execve(' "$KH_TMP/tool.trace" | grep -v ENOENT)
is "$(wc -l <<<"$execs")" 2 "one process, two programs: the front end, then the tool in its place"
like "$(sed -n 2p <<<"$execs")" "kubehsm-tool\", \\[\"$KUBEHSM\", \"config\", \"--help\"\\]" \
	"... kubehsm-tool, given the same arguments"
if [ $static = yes ]; then
	is "$(awk '/execve\(.*kubehsm-tool/ {exit} /openat\(/ {print}' "$KH_TMP/tool.trace" | grep -c . || true)" 0 \
		"the static front end opens no file at all before it hands over"
fi
if nm "$KUBEHSM" | grep -q ' T kh_front_entry$'; then
	# x86-64: the hand-over runs from the entry point, before glibc
	# (helper/kh_front_early.c): the front end's only system calls are
	# the readlink that finds the tool and the execve.
	env "$NOLSAN" strace -f -o "$KH_TMP/early.trace" "$KUBEHSM" config --help >/dev/null 2>&1
	is "$(awk '/execve\(.*kubehsm-tool.* = 0$/ {exit} NR > 1 {sub(/^[0-9]+ +/, ""); sub(/\(.*/, ""); print}' \
		"$KH_TMP/early.trace" | tr '\n' ' ')" "readlink " \
		"the front end hands over before its C library starts (readlink, then execve)"
	is "$(readelf -hW "$KUBEHSM" | awk '/Entry point/ {print $4}')" \
		"0x$(nm "$KUBEHSM" | awk '$3 == "kh_front_entry" {sub(/^0+/, "", $1); print $1}')" \
		"... from its own entry point"
	# Nothing of glibc is set up there: no call (IFUNCs and PLT), no
	# %fs (TLS: errno, the stack protector's canary).
	early=$(objdump -d --no-show-raw-insn "$KUBEHSM" | awk '/<kh_front_early>:/ {p = 1; next} p && /^$/ {exit} p')
	unlike "$early" "[[:space:]]call|%fs:" "kh_front_early calls nothing and touches no TLS"
	like "$early" "syscall" "... and speaks to the kernel itself"
fi
run "$KUBEHSM" config --help
is "$rc" 0 "kubehsm config --help runs through the tool"
run "$KUBEHSM" no-such-command
is "$rc" 2 "an unknown command is a usage error (exit 2) from the tool"
like "$err" "^kubehsm: unknown command 'no-such-command'" "named as kubehsm, not kubehsm-tool"
run "$KUBEHSM"
is "$rc" 2 "no command at all: usage (exit 2)"

# Without a kubehsm-tool beside it or at its configured path, the front
# end says so in one line.  helper/kubehsm's configured path is
# $(pkglibexecdir), which holds a tool once kubehsm is installed:
# tests/probes/kubehsm-notool is the same front end configured with a path in
# the build tree that never holds one, so this holds whether or not kubehsm
# is installed.
NOTOOL_PATH=$KH_BUILDDIR/tests/notool/kubehsm-tool
[ -x "$KH_BUILDDIR/tests/probes/kubehsm-notool" ] || { echo "Bail out! tests/probes/kubehsm-notool not built"; exit 1; }
[ ! -e "$NOTOOL_PATH" ] || { echo "Bail out! $NOTOOL_PATH exists"; exit 1; }
mkdir -p "$KH_TMP/alone"
cp "$KH_BUILDDIR/tests/probes/kubehsm-notool" "$KH_TMP/alone/kubehsm"
run "$KH_TMP/alone/kubehsm" status
isnt "$rc" 0 "a missing kubehsm-tool fails"
is "$err" "kubehsm: cannot run $NOTOOL_PATH: No such file or directory; is kubehsm completely installed?" \
	"with one clear line naming the configured path"
# A tool beside the front end that cannot be run is reported, not skipped
# for the installed one.
printf 'not a program\n' >"$KH_TMP/alone/kubehsm-tool"
chmod 0644 "$KH_TMP/alone/kubehsm-tool"
run "$KH_TMP/alone/kubehsm" status
like "$err" "^kubehsm: cannot run $KH_TMP/alone/kubehsm-tool: Permission denied" \
	"a tool beside it that cannot run is named, not passed over"
rm -f "$KH_TMP/alone/kubehsm-tool"
run env KUBERNETES_EXEC_INFO="$INFO" LOGNAME=nobody-in-particular "$KH_TMP/alone/kubehsm" exec
like "$err" "^kubehsm: .*session" "exec works without the tool: the front end answers for itself"
unlike "$err" "kubehsm-tool" "and never looks for the tool when it has no record to vouch for"
done_testing
