#!/bin/bash
# The kubehsm front end: `exec` is served by a program that loads no crypto,
# PKCS#11, policy or D-Bus library (it runs on every kubectl invocation),
# and every other subcommand reaches kubehsm-tool.so unchanged, in the same
# process.
. "$KH_SRCDIR/tests/harness/tap.sh"
need_cmd readelf strace
TOOL="$KH_BUILDDIR/helper/.libs/kubehsm-tool.so"
[ -x "$KUBEHSM" ] && [ -f "$TOOL" ] || skip_all "kubehsm or kubehsm-tool.so not built"

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' '; }

front=$(needed "$KUBEHSM")
# A sanitizer build adds its runtimes; nothing else may appear.
extra=$(tr ' ' '\n' <<<"$front" | grep -vE '^(libc\.so|libjansson\.so|libkeyutils\.so|libasan\.so|libubsan\.so|libm\.so|libgcc_s\.so|libstdc\+\+\.so|$)' | tr '\n' ' ')
is "$extra" "" "kubehsm links only libc (and jansson, libkeyutils if not embedded; NEEDED: $front)"
unlike "$front" "libcrypto|libssl|libp11|libconfig|libglib|libgio|libpolkit" \
	"no crypto, PKCS#11, libconfig or GLib library in the exec path"
like "$(needed "$TOOL")" "libcrypto" "kubehsm-tool.so is the one that carries OpenSSL"
exports=$(nm -D --defined-only "$TOOL" | awk '$2 == "T" {print $3}' | tr '\n' ' ')
is "$exports" "kh_tool_main " "kubehsm-tool.so exports its entry point and nothing else"

run "$KUBEHSM" exec --help
is "$rc" 0 "kubehsm exec --help is served by the front end"
like "$out" "exec" "and describes exec"
run "$KUBEHSM" --version
is "$rc:$out" "0:kubehsm $(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$KH_BUILDDIR/config.h")" \
	"other subcommands reach kubehsm-tool.so with their arguments"
# (LeakSanitizer cannot run under strace: off for a sanitizer build.)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -f -e trace=execve,openat -o "$KH_TMP/tool.trace" "$KUBEHSM" config --help >/dev/null 2>&1
is "$(grep -c 'execve(' "$KH_TMP/tool.trace")" 1 "one process, one execve: the tool runs inside the front end"
like "$(cat "$KH_TMP/tool.trace")" "kubehsm-tool\.so" "... from kubehsm-tool.so"
run "$KUBEHSM" config --help
is "$rc" 0 "kubehsm config --help runs through the tool"
run "$KUBEHSM" no-such-command
is "$rc" 2 "an unknown command is a usage error (exit 2) from the tool"
like "$err" "^kubehsm: unknown command 'no-such-command'" "named as kubehsm, not kubehsm-tool"

# Without a kubehsm-tool.so beside it or at its configured path, the front
# end says so in one line.  helper/kubehsm's configured path is $(pkglibdir),
# which holds a tool once kubehsm is installed: tests/probes/kubehsm-notool is the
# same front end configured with a path in the build tree that never holds
# one, so this holds whether or not kubehsm is installed.
NOTOOL_PATH=$KH_BUILDDIR/tests/notool/kubehsm-tool.so
[ -x "$KH_BUILDDIR/tests/probes/kubehsm-notool" ] || { echo "Bail out! tests/probes/kubehsm-notool not built"; exit 1; }
[ ! -e "$NOTOOL_PATH" ] || { echo "Bail out! $NOTOOL_PATH exists"; exit 1; }
mkdir -p "$KH_TMP/alone"
cp "$KH_BUILDDIR/tests/probes/kubehsm-notool" "$KH_TMP/alone/kubehsm"
run "$KH_TMP/alone/kubehsm" status
isnt "$rc" 0 "a missing kubehsm-tool.so fails"
is "$err" "kubehsm: cannot load $NOTOOL_PATH: cannot open shared object file: No such file or directory; is kubehsm completely installed?" \
	"with one clear line naming the configured path"
run env KUBERNETES_EXEC_INFO='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}' \
	"$KH_TMP/alone/kubehsm" exec
like "$err" "^kubehsm: .*session" "exec works without the tool: the front end answers for itself"
unlike "$err" "kubehsm-tool" "and never looks for the tool"
done_testing
