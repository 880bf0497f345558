#!/bin/bash
# kubehsm exec, status and logout with real clients: every kubectl on the
# machine and the Python client authenticate against an nginx mTLS endpoint
# that trusts only the issuer CA, with credentials from the kernel keyring.
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/kubeapi.sh"
need_root
need_cmd keyctl setpriv useradd openssl nginx curl strace

PROBE="$KH_BUILDDIR/tests/probes/cache_probe"
[ -x "$PROBE" ] || skip_all "tests/probes/cache_probe not built"
[ -x "$KUBEHSM" ] || skip_all "helper/kubehsm not built"
chmod 0755 "$KH_BUILDDIR" "$KH_BUILDDIR/helper" "$KH_BUILDDIR/tests" 2>/dev/null || true
KUBECTLS=(/usr/lib/google-cloud-sdk/bin/kubectl.1.*)
[ -x "${KUBECTLS[0]}" ] || skip_all "no kubectl in /usr/lib/google-cloud-sdk/bin"
PY=/usr/bin/python3
# runu USER CMD...: run as USER in a fresh session keyring of theirs, without
# keyctl's "Joined session keyring" line in $err.
runu() { run as_user "$@"; err=$(grep -v '^Joined session keyring: ' <<<"$err"); }
# (LeakSanitizer cannot run under strace: off for a sanitizer build.)
NOLSAN="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

make_user alice
make_user bob
A=$(uid_of "$alice"); B=$(uid_of "$bob")

# --- PKI: the issuer CA the endpoint trusts, session certs it issued --------
pki_init
pki_ca issuer "kubehsm test issuer" || { echo "Bail out! pki"; exit 1; }
pki_ca users "users CA"
pki_user_cert sess issuer --cn "$alice" --o dev --o ops
pki_user_cert sess2 issuer --cn "$alice" --o dev --o ops
pki_user_cert sess3 issuer --cn "$alice" --o second
pki_user_cert bobsess issuer --cn "$bob" --o dev
pki_user_cert tok users --cn "$alice"
pki_user_cert rogue users --cn "$alice" --o dev   # right name, wrong CA
for n in sess sess2 sess3 bobsess rogue; do
	cat "$PKI_DIR/$n.pem" "$PKI_DIR/issuer.pem" >"$PKI_DIR/$n.chain"
done
serial_of() { openssl x509 -in "$PKI_DIR/$1.pem" -noout -serial | cut -d= -f2; }
mat() { echo --chain "$PKI_DIR/$1.chain" --key "$PKI_DIR/$1.key" --token-cert "$PKI_DIR/tok.pem"; }

kubeapi_start "$PKI_DIR/issuer.pem" || { echo "Bail out! nginx did not start"; exit 1; }
diag "endpoint $KUBEAPI_URL (trusts only the issuer CA)"

# --- kubeconfigs: exec v1 and v1beta1, interactiveMode Never, cluster info --
write_kubeconfig() {   # write_kubeconfig FILE OWNER
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $KUBEAPI_URL
    certificate-authority: $KUBEAPI_CA
- name: test-second
  cluster:
    server: $KUBEAPI_URL
    certificate-authority: $KUBEAPI_CA
    extensions:
    - name: client.authentication.k8s.io/exec
      extension:
        issuer: second
users:
- name: kh-v1
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $KUBEHSM
      args: [exec]
      interactiveMode: Never
      provideClusterInfo: true
- name: kh-v1beta1
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: $KUBEHSM
      args: [exec]
      interactiveMode: Never
      provideClusterInfo: true
contexts:
- name: v1
  context: {cluster: test, user: kh-v1, namespace: default}
- name: v1beta1
  context: {cluster: test, user: kh-v1beta1, namespace: default}
- name: second
  context: {cluster: test-second, user: kh-v1, namespace: default}
current-context: v1
EOF
	chown "$2" "$1"; chmod 0600 "$1"
}
KCA=$KH_TMP/kubeconfig-alice; write_kubeconfig "$KCA" "$alice"
KCB=$KH_TMP/kubeconfig-bob; write_kubeconfig "$KCB" "$bob"

run "$PROBE" login "$A" "$alice" user 600 $(mat sess) --groups dev,ops
is "$rc" 0 "root stores alice's session (as the PAM module would)" || diag "$err"

# --- the plugin on its own ---------------------------------------------------
V1='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}'
VB='{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","spec":{"interactive":false}}'
runu "$alice" env KUBERNETES_EXEC_INFO="$V1" "$KUBEHSM" exec </dev/null
is "$rc" 0 "exec answers alice (v1)" || diag "$err"
check=$(printf '%s' "$out" | $PY -c '
import json, sys, datetime
d = json.load(sys.stdin); s = d["status"]
chain = open(sys.argv[1]).read(); key = open(sys.argv[2]).read()
exp = datetime.datetime.strptime(s["expirationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
left = (exp - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
print(d["apiVersion"], d["kind"], s["clientCertificateData"] == chain, s["clientKeyData"] == key, 590 < left <= 600)
' "$PKI_DIR/sess.chain" "$PKI_DIR/sess.key" 2>&1)
is "$check" "client.authentication.k8s.io/v1 ExecCredential True True True" \
	"ExecCredential: same apiVersion, cert chain and key as stored, RFC 3339 expiry = session's"
is "$(printf '%s\n' "$out" | wc -l)" 1 "the answer is one line"
runu "$alice" env KUBERNETES_EXEC_INFO="$VB" "$KUBEHSM" exec </dev/null
like "$out" '^\{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential"' \
	"a v1beta1 request gets a v1beta1 answer"
# No core dump or ptrace of another process of alice's may catch the key:
# dumping is off before the record is read.  (Once it is, strace, running
# as alice, can no longer read the process's memory and prints the new
# core limit as a pointer.  LeakSanitizer cannot run under strace: off for
# a sanitizer build.)
install -d -o "$alice" -m 0700 "$KH_TMP/alice-trace"
runu "$alice" env KUBERNETES_EXEC_INFO="$V1" \
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -e trace=prctl,prlimit64,setrlimit,keyctl -o "$KH_TMP/alice-trace/exec" \
	"$KUBEHSM" exec </dev/null
is "$rc" 0 "exec under strace answers" || diag "$err"
dump_order() {   # dump_order TRACE: "dumpable core read" line numbers, in order
	awk '/PR_SET_DUMPABLE, (0|SUID_DUMP_DISABLE)/ && !d { d = NR }
	     /RLIMIT_CORE, ([{]rlim_cur=0, rlim_max=0[}]|0x[0-9a-f]+)/ && !c { c = NR }
	     /KEYCTL_READ/ && !r { r = NR }
	     END { print (d && c && r && d < r && c < r) ? "off before the first read" : "d=" d " c=" c " r=" r }' "$1"
}
is "$(dump_order "$KH_TMP/alice-trace/exec")" "off before the first read" \
	"exec: PR_SET_DUMPABLE 0 and RLIMIT_CORE 0 before the session key is read"
runu "$alice" env KUBERNETES_EXEC_INFO='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":true}}' \
	timeout 10 "$KUBEHSM" exec
is "$rc" 0 "interactive: true with a session answers at once (nothing is read from the terminal)"

# --- the warm path: the front end alone, no file opened -----------------------
# The login rendered the answer into the record: exec reads one key and
# writes it, in one program (static-pie: no loader, no library, no NSS).
runu "$alice" env KUBERNETES_EXEC_INFO="$V1" "$NOLSAN" \
	strace -f -e trace=execve,openat,open,connect -o "$KH_TMP/alice-trace/warm" "$KUBEHSM" exec </dev/null
is "$rc" 0 "exec under strace answers" || diag "$err"
is "$(grep -c 'execve(' "$KH_TMP/alice-trace/warm")" 1 "the warm path is one program: no kubehsm-tool"
if ! readelf -lW "$KUBEHSM" | grep -q INTERP; then
	is "$(grep -cE 'open(at)?\(|connect\(' "$KH_TMP/alice-trace/warm" || true)" 0 \
		"the static front end opens no file and no socket (no loader, no NSS)" ||
		diag "$(grep -E 'open|connect' "$KH_TMP/alice-trace/warm" | head -5)"
fi

# --- whose record: LOGNAME vouches, else the account database (the tool) ----
# A static program cannot ask NSS: when LOGNAME does not name the record's
# user, the front end hands exec to kubehsm-tool before writing anything.
runu "$alice" env -u LOGNAME KUBERNETES_EXEC_INFO="$V1" "$NOLSAN" \
	strace -f -s 256 -e trace=execve -o "$KH_TMP/alice-trace/nolog" "$KUBEHSM" exec </dev/null
is "$rc:$(printf '%s' "$out" | head -c 48)" '0:{"apiVersion":"client.authentication.k8s.io/v1",' \
	"LOGNAME unset: the answer comes from kubehsm-tool, which asks the account database" || diag "$err"
# (Its arguments are not readable to strace: dumping is off by then.)
is "$(grep -c 'execve(.*= 0$' "$KH_TMP/alice-trace/nolog")" 2 \
	"... executed in the front end's place (the front end, then the tool)"
runu "$alice" env LOGNAME=someoneelse KUBERNETES_EXEC_INFO="$VB" "$KUBEHSM" exec </dev/null
like "$out" '^\{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential"' \
	"LOGNAME naming someone else: the account database says alice, answered (v1beta1)"
# A record issued to another account under alice's uid (a reused uid).
"$PROBE" store "$A" formeruser user 600 $(mat sess) >/dev/null
for ln in "$alice" unset; do
	if [ "$ln" = unset ]; then runu "$alice" env -u LOGNAME KUBERNETES_EXEC_INFO="$V1" "$KUBEHSM" exec </dev/null
	else runu "$alice" env LOGNAME="$ln" KUBERNETES_EXEC_INFO="$V1" "$KUBEHSM" exec </dev/null; fi
	if [ "$rc" -ne 0 ] && [ -z "$out" ] && grep -q "issued to user 'formeruser', not to '$alice'" <<<"$err" &&
	   [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ]; then
		pass "a record issued to formeruser under alice's uid is refused (LOGNAME $ln)"
	else fail "reused uid, LOGNAME $ln"; diag "rc=$rc out='$out' err='$err'"; fi
done
run "$PROBE" login "$A" "$alice" user 600 $(mat sess) --groups dev,ops
is "$rc" 0 "alice logs in again" || diag "$err"

# --- the pre-rendered answer is served only for its record ------------------
# Forged into alice's keyring as the writer hands records over (owned by
# her, read-only): each must be refused with one line and nothing on stdout.
as_user "$alice" sh -c 'keyctl pipe $(keyctl search @u user kubehsm:session:v1)' >"$KH_TMP/alice.rec"
PYFORGE='import json, sys
sys.path.insert(0, sys.argv[3]); import record
t = open(sys.argv[1]).read(); r = record.load(t); h, b = t.split("\n", 1)
exec(sys.argv[4])
open(sys.argv[2], "w").write(t)'
forge_rec() {   # forge_rec PYTHON: alice's record, changed by PYTHON, forged back
	python3 -c "$PYFORGE" "$KH_TMP/alice.rec" "$KH_TMP/forged.rec" "$KH_SRCDIR/tests/harness" "$1" &&
		as_user "$alice" keyctl clear @u >/dev/null 2>&1 &&
		"$PROBE" forge "$A" "$A" kubehsm:session:v1 000b0000 600 "$KH_TMP/forged.rec" >/dev/null
}
forged_exec() {   # forged_exec DESCRIPTION PATTERN PYTHON
	forge_rec "$3" || { fail "$1: cannot forge"; return; }
	runu "$alice" env KUBERNETES_EXEC_INFO="$V1" "$KUBEHSM" exec </dev/null
	if [ "$rc" -ne 0 ] && [ -z "$out" ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] &&
	   grep -qE "$2" <<<"$err"; then pass "$1: refused ($err)"
	else fail "$1"; diag "rc=$rc out='$(head -c 80 <<<"$out")' err='$err'"; fi
}
forge_rec "pass"
runu "$alice" env KUBERNETES_EXEC_INFO="$V1" "$KUBEHSM" exec </dev/null
like "$out" '"kind":"ExecCredential"' "control: alice's own record, forged back as is, is served"
forged_exec "answer rendered for a later expiry than the record's" "pre-rendered" \
	"r2 = dict(r); r2['expires'] += 3600; t = h + '\n' + record.dump(r2).split('\n', 1)[1]"
forged_exec "record past its expiry (answer re-rendered to match)" "expired" \
	"r['created'] -= 7200; r['expires'] = r['created'] + 3600; t = record.dump(r)"
forged_exec "record naming bob's uid" "uid $B" "r['uid'] = $B; t = record.dump(r)"
forged_exec "record of issuer 'second' under the default issuer's name" "another issuer" \
	"r['issuer'] = 'second'; t = record.dump(r)"
forged_exec "a quote inside the key" "pre-rendered" \
	"i = t.index('PRIVATE KEY-----') + 20; t = t[:i] + '\"' + t[i + 1:]"
forged_exec "a backslash escape other than \\n" "pre-rendered" \
	"i = t.index('\\\\n', t.index('clientKeyData')) + 1; t = t[:i] + 'u' + t[i + 1:]"
forged_exec "an apiVersion inside the answer" "pre-rendered|malformed" \
	"n = json.loads(h)['parts']['exec']; ins = '\"apiVersion\":\"x\",'; h = h.replace('\"exec\":%d' % n, '\"exec\":%d' % (n + len(ins)), 1); t = h + '\n' + b[:1] + ins + b[1:]"
forged_exec "the answer cut by one byte" "malformed|pre-rendered" \
	"n = json.loads(h)['parts']['exec']; h = h.replace('\"exec\":%d' % n, '\"exec\":%d' % (n - 1), 1); t = h + '\n' + b[:n - 1] + b[n:]"
forged_exec "a version 1 record (before the pre-rendered answer)" "version 1 .*log in again" \
	"t = t.replace('\"v\":2', '\"v\":1', 1)"
as_user "$alice" keyctl clear @u >/dev/null 2>&1
run "$PROBE" login "$A" "$alice" user 600 $(mat sess) --groups dev,ops
is "$rc" 0 "alice's session is back" || diag "$err"

bad_input() {   # bad_input VALUE DESCRIPTION
	runu "$alice" env KUBERNETES_EXEC_INFO="$1" "$KUBEHSM" exec </dev/null
	if [ "$rc" -ne 0 ] && [ -z "$out" ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] &&
	   [[ $err == kubehsm:* ]]; then pass "$2: exit $rc, one line: $err"
	else fail "$2"; diag "rc=$rc out='$out' err='$err'"; fi
}
bad_input '{"apiVersion":"client.authentication.k8s.io/v1",' "malformed KUBERNETES_EXEC_INFO"
bad_input '{"apiVersion":"client.authentication.k8s.io/v1alpha1","kind":"ExecCredential","spec":{}}' \
	"unsupported apiVersion v1alpha1"
bad_input '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{},"spec":{}}' \
	"duplicate keys"
runu "$alice" env -u KUBERNETES_EXEC_INFO "$KUBEHSM" exec </dev/null
if [ "$rc" -ne 0 ] && [ -z "$out" ]; then pass "KUBERNETES_EXEC_INFO unset: refused ($err)"; else fail "KUBERNETES_EXEC_INFO unset"; fi
runu "$alice" env -u KUBERNETES_EXEC_INFO "$KUBEHSM" exec --api-version client.authentication.k8s.io/v1 </dev/null
like "$out" '"apiVersion":"client.authentication.k8s.io/v1"' "unset, with --api-version: answers"

# --- every kubectl ---------------------------------------------------------
for k in "${KUBECTLS[@]}"; do
	v=${k##*/kubectl.}
	runu "$alice" "$k" --kubeconfig "$KCA" get --raw /version </dev/null
	like "$out" '"gitVersion":"v1.30.0-kubehsm"' "kubectl $v get --raw /version (exec v1)" || diag "$err"
	runu "$alice" "$k" --kubeconfig "$KCA" --context v1beta1 get pods </dev/null
	like "$out" '^kh-test-pod +1/1 +Running' "kubectl $v get pods (exec v1beta1)" || diag "$err"
	runu "$alice" "$k" --kubeconfig "$KCA" auth whoami </dev/null
	like "$out" "CN=$alice" "kubectl $v auth whoami: the server saw CN=$alice" || diag "$err"
done
grep -c "dn=\"O=ops,O=dev,CN=$alice\"" "$KUBEAPI_DIR/logs/access.log" >/dev/null
ok $? "nginx logged requests authenticated with alice's session certificate"

# spec.cluster.config (kubeconfig cluster extension) selects the issuer.
"$PROBE" store "$A" "$alice" user 600 --issuer second $(mat sess3) >/dev/null
runu "$alice" "${KUBECTLS[-1]}" --kubeconfig "$KCA" --context second get --raw /kh-whoami </dev/null
is "$out" "$(serial_of sess3) O=second,CN=$alice" \
	"the cluster's exec extension {issuer: second} selects that issuer's session" || diag "$err"

# --- the Python client -----------------------------------------------------
PYLIST='
import sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1], context=sys.argv[2])
print(" ".join(p.metadata.name for p in client.CoreV1Api().list_namespaced_pod("default").items))
'
for ctx in v1 v1beta1; do
	runu "$alice" $PY -c "$PYLIST" "$KCA" "$ctx" </dev/null
	is "$out" "kh-test-pod" "the Python kubernetes client lists pods (exec $ctx)" || diag "$err"
done

# --- status ----------------------------------------------------------------
runu "$alice" "$KUBEHSM" status
if [ "$rc" -eq 0 ] && grep -q "^Identity: *$alice\$" <<<"$out" && grep -q '^Groups: *dev, ops$' <<<"$out" &&
   grep -q '^Scope: *user$' <<<"$out" && grep -Eq '^Expires: .*Z \((9|10)m[0-9]+s left\)$' <<<"$out" &&
   grep -q 'kubehsm test issuer' <<<"$out"; then pass "status shows identity, groups, scope, expiry, issuer"
else fail "status"; diag "$out$err"; fi
runu "$alice" "$KUBEHSM" status --json
js=$(printf '%s' "$out" | $PY -c 'import json,sys; d=json.load(sys.stdin); print(d["state"], d["username"], ",".join(d["groups"]), d["scope"], 0 < d["secondsLeft"] <= 600, "clientKeyData" in d or "PRIVATE" in json.dumps(d))')
is "$js" "active $alice dev,ops user True False" "status --json: identity, groups, scope, time left, no key"

# --- other users, expiry ---------------------------------------------------
# bob's record expires one second after it is stored, and is asked for as
# soon as it has.  The kernel answers a search for an expired key with
# EKEYEXPIRED only until its garbage collector takes the key, gc_delay
# (300 s) after the expiry; this check once ran later than that, in a slow
# sanitizer run, when the record was stored at the top of the file.
"$PROBE" store "$B" "$bob" user 600 --expires-in 1 $(mat bobsess) >/dev/null
for _ in $(seq 1 20); do
	sleep 0.25
	runu "$bob" env KUBERNETES_EXEC_INFO="$V1" "$KUBEHSM" exec </dev/null
	[ "$rc" -eq 0 ] || break   # served until it expires, within about 2 s
done
if [ "$rc" -ne 0 ] && [ -z "$out" ] && grep -q 'expired' <<<"$err" && grep -q 'log in' <<<"$err"; then
	pass "bob's expired session: exec says expired and to log in ($err)"
else fail "bob's expired session"; diag "rc=$rc out='$out' err='$err'"; fi
runu "$bob" "$PROBE" revoke "$B"
keyctl_clear_bob() { setpriv --reuid="$B" --regid="$(id -g "$bob")" --clear-groups keyctl clear @u; }
keyctl_clear_bob >/dev/null 2>&1
runu "$bob" "${KUBECTLS[-1]}" --kubeconfig "$KCB" get --raw /version </dev/null
if [ "$rc" -ne 0 ] && grep -q 'kubehsm: no kube session' <<<"$err" && ! grep -q "$alice" <<<"$out"; then
	pass "bob (no session) gets a clear error from kubectl, not alice's credential"
else fail "bob without a session"; diag "rc=$rc out='$out' err='$err'"; fi
runu "$bob" env KUBERNETES_EXEC_INFO="$V1" "$KUBEHSM" exec </dev/null
if [ "$rc" -ne 0 ] && [ -z "$out" ] && grep -q 'no kube session' <<<"$err" && grep -q 'log in' <<<"$err"; then
	pass "no session: exec says none and to log in"
else fail "no session message"; diag "rc=$rc err='$err'"; fi
runu "$bob" "$KUBEHSM" status
if [ "$rc" -eq 1 ] && grep -q '^No kube session (none)' <<<"$out"; then pass "status without a session: exit 1, says none"
else fail "status without a session"; diag "rc=$rc out='$out' err='$err'"; fi

# A certificate from another CA (right name) is refused by the endpoint.
"$PROBE" store "$B" "$bob" user 600 $(mat rogue) >/dev/null
runu "$bob" "${KUBECTLS[-1]}" --kubeconfig "$KCB" get --raw /version </dev/null
if [ "$rc" -ne 0 ] && grep -qi 'unauthorized' <<<"$err"; then pass "the endpoint refuses a session certificate from another CA (401)"
else fail "rogue certificate"; diag "rc=$rc out='$out' err='$err'"; fi

# --- logout ----------------------------------------------------------------
runu "$alice" "$KUBEHSM" logout
is "$rc" 0 "alice logs out" || diag "$err"
runu "$alice" env KUBERNETES_EXEC_INFO="$V1" "$KUBEHSM" exec </dev/null
if [ "$rc" -ne 0 ] && [ -z "$out" ] && grep -q 'ended' <<<"$err"; then
	pass "after logout: exec says the session was ended ($err)"
else fail "after logout"; diag "rc=$rc out='$out' err='$err'"; fi
runu "$alice" "${KUBECTLS[-1]}" --kubeconfig "$KCA" get --raw /version </dev/null
isnt "$rc" 0 "after logout kubectl gets nothing"
runu "$alice" "$KUBEHSM" status --issuer second
is "$rc" 0 "logout ended only the default issuer's session"

# --- kubeconfig: the printed entry works as is ------------------------------
"$PROBE" store "$A" "$alice" user 600 $(mat sess) --groups dev,ops >/dev/null
KCG=$KH_TMP/kubeconfig-generated
{ printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: %s\n    certificate-authority: %s\n' \
	"$KUBEAPI_URL" "$KUBEAPI_CA"
  printf 'contexts:\n- name: t\n  context: {cluster: t, user: me}\ncurrent-context: t\n'
  "$KUBEHSM" kubeconfig --name me; } >"$KCG"
chown "$alice" "$KCG"
grep -q '^      interactiveMode: Never$' "$KCG"
ok $? "kubeconfig prints an exec entry with interactiveMode: Never"
# kubectl 1.35's kuberc credential-plugin policy: the entry says what to allow.
grep -qxF "#   - name: $(readlink -f "$KUBEHSM")      # kubectl 1.35" "$KCG" &&
	grep -qxF "#   - command: $(readlink -f "$KUBEHSM")   # kubectl 1.36 and later" "$KCG" &&
	grep -q '^#   credentialPluginPolicy: Allowlist$' "$KCG"
ok $? "kubeconfig prints the kuberc credentialPluginAllowlist entry with kubehsm's full path"
# kubeconfig runs in kubehsm-tool (the front end hands it over): the entry
# must still name the front end, the static program of the warm path.
is "$(sed -n 's/^      command: //p' "$KCG")" "$(readlink -f "$KUBEHSM")" \
	"kubeconfig names the kubehsm front end, not kubehsm-tool, as the exec plugin"
runu "$alice" "${KUBECTLS[-1]}" --kubeconfig "$KCG" get --raw /version </dev/null
like "$out" 'v1.30.0-kubehsm' "kubectl works with the entry 'kubehsm kubeconfig' printed" || diag "$err"
KCM=$(getent passwd "$alice" | cut -d: -f6)/kubeconfig-merged   # kubectl writes a lock file beside it
printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: %s\n    certificate-authority: %s\ncontexts:\n- name: t\n  context: {cluster: t}\ncurrent-context: t\nusers: []\n' \
	"$KUBEAPI_URL" "$KUBEAPI_CA" >"$KCM"
chown "$alice" "$KCM"
cmds=$("$KUBEHSM" kubeconfig --merge "$KCM" --name merged | grep -v '^#' |
	sed "s|^kubectl |${KUBECTLS[-1]} |")
as_user "$alice" bash -c "$cmds" >/dev/null 2>&1
runu "$alice" "${KUBECTLS[-1]}" --kubeconfig "$KCM" get --raw /version </dev/null
like "$out" 'v1.30.0-kubehsm' "the kubectl commands 'kubeconfig --merge' prints add a working entry" || diag "$err"

# --- --help everywhere -------------------------------------------------------
for c in exec sign status logout kubeconfig admin config; do
	run "$KUBEHSM" "$c" --help
	if [ "$rc" -eq 0 ] && grep -q "^Usage: kubehsm $c" <<<"$out"; then pass "kubehsm $c --help"
	else fail "kubehsm $c --help"; diag "rc=$rc $out$err"; fi
done

# --- admin views --------------------------------------------------------------
run "$KUBEHSM" admin list
like "$out" "^$A +$alice +default +active +[0-9TZ:-]+ +$alice +dev,ops" "root: admin list shows alice's session"
unlike "$out" 'PRIVATE KEY' "admin list never shows a key"
runu "$bob" "$KUBEHSM" admin list
if [ "$rc" -ne 0 ] && grep -q 'need root' <<<"$err"; then pass "admin list as a user: refused, says it needs root"
else fail "admin list as bob"; diag "rc=$rc $out$err"; fi
runu "$bob" "$KUBEHSM" admin revoke "$alice"
isnt "$rc" 0 "bob cannot revoke alice's session"
run "$KUBEHSM" admin revoke "$alice"
is "$rc" 0 "root revokes alice's session" || diag "$err"
runu "$alice" env KUBERNETES_EXEC_INFO="$V1" "$KUBEHSM" exec </dev/null
if [ "$rc" -ne 0 ] && [ -z "$out" ] && grep -q 'revoked' <<<"$err"; then pass "after admin revoke alice is told her session was ended"
else fail "after admin revoke"; diag "rc=$rc $out$err"; fi

# --- a long-running client-go client picks up a new session --------------
# kubectl proxy keeps one client for its whole life; client-go re-runs the
# plugin when expirationTimestamp passes.  Session 1 expires 6 s after it is
# stored; session 2 (a re-login) is stored right after the first request.
t0=$(date +%s)
"$PROBE" store "$A" "$alice" user 600 --expires-in 6 $(mat sess) >/dev/null
PPORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_user "$alice" "${KUBECTLS[-1]}" --kubeconfig "$KCA" proxy --address 127.0.0.1 --port "$PPORT" \
	</dev/null >"$KH_TMP/proxy.log" 2>&1 &
PROXY=$!
on_exit "kill $PROXY"
w1=
for _ in $(seq 1 50); do
	w1=$(curl -sf --max-time 2 "http://127.0.0.1:$PPORT/kh-whoami") && break
	sleep 0.1
done
is "$w1" "$(serial_of sess) O=ops,O=dev,CN=$alice" "kubectl proxy (long-running) authenticates with session 1" ||
	diag "$(cat "$KH_TMP/proxy.log")"
"$PROBE" store "$A" "$alice" user 600 $(mat sess2) >/dev/null
w2=$(curl -sf --max-time 5 "http://127.0.0.1:$PPORT/kh-whoami")
is "$w2" "$(serial_of sess) O=ops,O=dev,CN=$alice" "before session 1's expirationTimestamp it keeps using it"
now=$(date +%s); [ $((t0 + 7 - now)) -gt 0 ] && sleep $((t0 + 7 - now))
w3=$(curl -sf --max-time 5 "http://127.0.0.1:$PPORT/kh-whoami")
is "$w3" "$(serial_of sess2) O=ops,O=dev,CN=$alice" \
	"after it, the same process re-runs kubehsm exec and uses session 2 without a restart"
kill "$PROXY" 2>/dev/null; wait "$PROXY" 2>/dev/null
# --- a long-running Python client keeps working across a re-login ---------
# python3-kubernetes re-runs exec plugins only for tokens, so it keeps the
# certificate it got at start-up: across a re-login that certificate stays
# valid (a re-login replaces the record, it does not revoke certificates).
chmod 0777 "$KH_TMP"
as_user "$alice" $PY "$KH_SRCDIR/tests/harness/pylong.py" "$KCA" "$KH_TMP/relogged" v1 10 </dev/null >"$KH_TMP/pylong.out" 2>"$KH_TMP/pylong.err" &
PYPID=$!
for _ in $(seq 1 100); do [ -s "$KH_TMP/pylong.out" ] && break; sleep 0.1; done
"$PROBE" login "$A" "$alice" user 600 $(mat sess) >/dev/null
touch "$KH_TMP/relogged"
wait "$PYPID"; pyrc=$?
is "$pyrc:$(tr '\n' ' ' <"$KH_TMP/pylong.out")" "0:kh-test-pod kh-test-pod " \
	"a long-running Python client keeps working across a re-login without restarting" ||
	diag "$(cat "$KH_TMP/pylong.err")"

done_testing
