#!/bin/bash
# The kubehsm front end: `exec` is served by a program that loads no crypto,
# PKCS#11, policy or D-Bus library (it runs on every kubectl invocation),
# and every other subcommand reaches kubehsm-tool unchanged.
. "$KH_SRCDIR/tests/lib/tap.sh"
need_cmd readelf
TOOL="$KH_BUILDDIR/helper/kubehsm-tool"
[ -x "$KUBEHSM" ] && [ -x "$TOOL" ] || skip_all "kubehsm or kubehsm-tool not built"

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' '; }

front=$(needed "$KUBEHSM")
# A sanitizer build adds its runtimes; nothing else may appear.
extra=$(tr ' ' '\n' <<<"$front" | grep -vE '^(libc\.so|libjansson\.so|libkeyutils\.so|libasan\.so|libubsan\.so|libm\.so|libgcc_s\.so|libstdc\+\+\.so|$)' | tr '\n' ' ')
is "$extra" "" "kubehsm links only libc, jansson and libkeyutils (NEEDED: $front)"
unlike "$front" "libcrypto|libssl|libp11|libconfig|libglib|libgio|libpolkit" \
	"no crypto, PKCS#11, libconfig or GLib library in the exec path"
like "$(needed "$TOOL")" "libcrypto" "kubehsm-tool is the one that carries OpenSSL"

run "$KUBEHSM" exec --help
is "$rc" 0 "kubehsm exec --help is served by the front end"
like "$out" "exec" "and describes exec"
run "$KUBEHSM" --version
is "$rc:$out" "0:$("$TOOL" --version)" "other subcommands reach kubehsm-tool with their arguments"
run "$KUBEHSM" config --help
is "$rc" 0 "kubehsm config --help runs through the tool"
run "$KUBEHSM" no-such-command
is "$rc" 2 "an unknown command is a usage error (exit 2) from the tool"
like "$err" "^kubehsm: unknown command 'no-such-command'" "named as kubehsm, not kubehsm-tool"

# Without a kubehsm-tool beside it (and none installed at the configured
# path in a test run), the front end says so in one line.
mkdir -p "$KH_TMP/alone"
cp "$KUBEHSM" "$KH_TMP/alone/kubehsm"
run "$KH_TMP/alone/kubehsm" status
isnt "$rc" 0 "a missing kubehsm-tool fails"
like "$err" "^kubehsm: cannot run .*kubehsm-tool: No such file or directory; is kubehsm completely installed\?$" \
	"with one clear line"
run env KUBERNETES_EXEC_INFO='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}' \
	"$KH_TMP/alone/kubehsm" exec
like "$err" "^kubehsm: .*session" "exec works without the tool: the front end answers for itself"
unlike "$err" "kubehsm-tool" "and never looks for the tool"
done_testing
