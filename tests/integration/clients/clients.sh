#!/bin/bash
# Every kube client works with the entry `kubehsm kubeconfig` prints (issue
# #17).  After a real PAM login (pamtester, the build tree's module, PIN
# once), each client below reads one kubeconfig whose users: entry is that
# output, unedited, and lists pods from an nginx mTLS endpoint whose client
# CA is what `kubehsm config ca-bundle` prints; the endpoint's log must show
# it was the login's session certificate:
#   - @kubernetes/client-node (npm, installed into the build tree from the
#     pinned package-lock) and ruby-kubeclient run the plugin without
#     KUBERNETES_EXEC_INFO: the entry's --api-version answers them;
#   - the Python client, kubectl (every version), curl with the certificate
#     and key `kubehsm exec` prints, and `kubectl proxy`, a long-running
#     client-go process, started, used and stopped.
# The negative control for the documented bundle: ruby-kubeclient presents
# the session certificate without its issuer chain, so an endpoint that
# trusts only the issuer's root refuses it, while every other client, which
# sends the chain, gets in there with the same session certificate.
set -u
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/harness/pamsvc.sh"
. "$KH_SRCDIR/tests/harness/kubeapi.sh"

need_root
need_cmd pamtester softhsm2-util pkcs11-tool openssl keyctl setpriv nginx curl jq ruby flock \
	sha256sum timeout
[ -f "$PAM_KUBEHSM" ] || skip_all "pam/.libs/pam_kubehsm.so not built"
[ -x "$KUBEHSM" ] || skip_all "helper/kubehsm not built"
KUBECTLS=(/usr/lib/google-cloud-sdk/bin/kubectl.1.*)
[ -x "${KUBECTLS[0]}" ] || skip_all "no kubectl in /usr/lib/google-cloud-sdk/bin"
K=${KUBECTLS[-1]}
PY=/usr/bin/python3   # python3-kubernetes is importable from Debian's python only
$PY -c 'import kubernetes, yaml' 2>/dev/null || skip_all "needs python3-kubernetes (scripts/install-deps.sh)"
ruby -e 'require "kubeclient"' 2>/dev/null || skip_all "needs ruby-kubeclient (scripts/install-deps.sh)"
chmod 0755 "$KH_BUILDDIR" "$KH_BUILDDIR/helper" "$KH_BUILDDIR/tests" \
	"$KH_BUILDDIR/tests/integration" 2>/dev/null || true
# pamtester runs with PT_ENV (tests/harness/pamsvc.sh).

plan_auto
# The closing table: each client's version, and whether every assertion of
# its block passed (client_begin NAME ... client_end).
declare -A VERSION RESULT
CLIENTS=()
client_begin() { CLIENT=$1; CLIENTS+=("$1"); _client_failed=$_tap_failed; }
client_end() { RESULT[$CLIENT]=$([ "$_tap_failed" -eq "$_client_failed" ] && echo ok || echo FAILED); }
# runu USER CMD...: as USER in a fresh session keyring of theirs, no
# terminal, stdin from /dev/null, without keyctl's "Joined" line in $err.
runu() {
	local u=$1; shift
	run as_user "$u" timeout 120 "$@" </dev/null
	err=$(grep -v '^Joined session keyring: ' <<<"$err")
}

# --- @kubernetes/client-node: npm ci into the build tree, once per build ----
# The source keeps package.json and package-lock.json (integrity hashes, the
# newest release that runs on this machine's Node.js); the build tree gets
# node_modules, reinstalled only when either file changes.  No registry or
# no npm is a failure here, never a skip.
NODE_SRC=$KH_SRCDIR/tests/integration/clients/clients-node
NODE_DIR=$KH_BUILDDIR/tests/integration/clients/clients-npm
# npm trusts its own list of CAs unless told otherwise (the host's npmrc
# names its cafile; a root made by debootstrap has no such npmrc): give it
# the system bundle when there is one, the file that carries what the
# machine's network needs trusted.
NODE_CA=/etc/ssl/certs/ca-certificates.crt
NODE_CA_ARGS=()
[ -s "$NODE_CA" ] && NODE_CA_ARGS=(--cafile "$NODE_CA")
node_install() {
	local want
	mkdir -p "$NODE_DIR" && chmod 0755 "$NODE_DIR" || return 1
	cp "$NODE_SRC/package.json" "$NODE_SRC/package-lock.json" "$NODE_DIR/" || return 1
	want=$(cat "$NODE_DIR/package.json" "$NODE_DIR/package-lock.json" | sha256sum)
	if [ "$(cat "$NODE_DIR/node_modules/.kh-installed" 2>/dev/null)" = "$want" ]; then
		NODE_HOW="cached in the build tree"
		return 0
	fi
	command -v npm >/dev/null || { echo "npm not found: run scripts/install-deps.sh"; return 1; }
	(cd "$NODE_DIR" && timeout 600 npm ci "${NODE_CA_ARGS[@]}" --no-audit --no-fund --ignore-scripts \
		--loglevel=error </dev/null) || return 1
	chmod -R a+rX "$NODE_DIR/node_modules" && echo "$want" >"$NODE_DIR/node_modules/.kh-installed"
	NODE_HOW="npm ci"
}
NODE_HOW=
mkdir -p "${NODE_DIR%/*}"
{ flock 9 && node_install; } 9>"$NODE_DIR.lock" >"$KH_TMP/npm.log" 2>&1
ok $? "@kubernetes/client-node installed into the build tree from package-lock.json (${NODE_HOW:-npm ci failed})" ||
	diag "$(cat "$KH_TMP/npm.log")"
VERSION[@kubernetes/client-node]=$(node -p "require('$NODE_DIR/node_modules/@kubernetes/client-node/package.json').version" 2>/dev/null)
VERSION[@kubernetes/client-node]="${VERSION[@kubernetes/client-node]:-none} (node $(node --version 2>/dev/null))"

# --- PKI, one user with a token, the policy and a PAM service ---------------
PIN=4711
ISSUER_PIN=987654
HOST=khclients$$
pki_init && pki_ca users "kh clients users CA" && pki_ca issuerca "kh clients issuer root CA" &&
	pki_issuer_token "$HOST" "$ISSUER_PIN" issuerca || { echo "Bail out! PKI"; exit 1; }
chmod 0600 "$PKI_DIR/issuer.pin"
make_user alice
pki_user_cert "$alice" users --cn "$alice" --o dev && pki_token_init "$alice" "$PIN" &&
	pki_token_import "$alice" "$PIN" "$alice" kube 01 || { echo "Bail out! token for $alice"; exit 1; }
CONF=$KH_TMP/etc/kubehsm.conf
pki_policy "$CONF" "$HOST" || { echo "Bail out! policy"; exit 1; }
SVC=kubehsm-clients-$$
on_exit "rm -f /etc/pam.d/$SVC"
pam_service_file "/etc/pam.d/$SVC" --keyinit "config=$CONF"

# --- the client CA bundle and two endpoints --------------------------------
BUNDLE=$KH_TMP/client-ca-bundle.pem
run "$KUBEHSM" config ca-bundle --root "$PKI_DIR/issuerca.pem" "$CONF"
printf '%s\n' "$out" >"$BUNDLE"
# The certificates' subjects in order, parsed (RFC 4514): the openssl CLI's
# layout of a name differs between OpenSSL 3.0 and 3.5.  One PEM block at a
# time: Debian 12's python3-cryptography (38) cannot load a bundle at once.
subjects=$($PY - "$BUNDLE" <<'PY'
import re, sys
from cryptography import x509
with open(sys.argv[1], "rb") as f:
    pems = re.findall(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", f.read(), re.S)
print("|".join(x509.load_pem_x509_certificate(p).subject.rfc4514_string() for p in pems))
PY
)
is "$rc:$subjects" "0:CN=kubehsm issuer $HOST|CN=kh clients issuer root CA" \
	"config ca-bundle prints the issuer certificate, then its root" || diag "$err"
kubeapi_start "$BUNDLE" bundle || { echo "Bail out! nginx did not start"; exit 1; }
EP=$KUBEAPI_URL EP_CA=$KUBEAPI_CA EP_DIR=$KUBEAPI_DIR
kubeapi_start "$PKI_DIR/issuerca.pem" rootonly || { echo "Bail out! nginx did not start"; exit 1; }
RO=$KUBEAPI_URL RO_CA=$KUBEAPI_CA RO_DIR=$KUBEAPI_DIR
diag "endpoint $EP trusts the bundle; $RO trusts only the issuer's root"

# --- the kubeconfig: clusters and contexts, then the printed entry, as is ----
KC=$KH_TMP/kubeconfig
ENTRY=$("$KUBEHSM" kubeconfig --name me)
{ printf 'apiVersion: v1\nkind: Config\nclusters:\n'
  printf -- '- name: bundle\n  cluster:\n    server: %s\n    certificate-authority: %s\n' "$EP" "$EP_CA"
  printf -- '- name: rootonly\n  cluster:\n    server: %s\n    certificate-authority: %s\n' "$RO" "$RO_CA"
  printf 'contexts:\n'
  printf -- '- name: bundle\n  context: {cluster: bundle, user: me, namespace: default}\n'
  printf -- '- name: rootonly\n  context: {cluster: rootonly, user: me, namespace: default}\n'
  printf 'current-context: bundle\n'
  printf '%s\n' "$ENTRY"; } >"$KC"
chown "$alice" "$KC"; chmod 0600 "$KC"
# The entry's command and arguments, as every client reads them.
mapfile -d '' CMD < <($PY -c '
import sys, yaml
e = yaml.safe_load(open(sys.argv[1]))["users"][0]["user"]["exec"]
sys.stdout.write("\0".join([e["command"]] + e["args"]) + "\0")' "$KC")
is "${CMD[*]:1}" "exec --api-version client.authentication.k8s.io/v1" \
	"the printed entry passes its apiVersion (client.authentication.k8s.io/v1) as --api-version"

# --- a real login ---------------------------------------------------------
run env "${PT_ENV[@]}" timeout 60 pamtester "$SVC" "$alice" authenticate open_session <<<"$PIN"
is "$rc" 0 "$alice logs in through PAM (pamtester $SVC, PIN once)" || diag "$err"
# The session certificate the login minted, as alice reads her record: every
# client below must present this one.
SERIAL=$(as_user "$alice" sh -c 'id=$(keyctl search @u user kubehsm:session:v1) && keyctl pipe "$id"' 2>/dev/null |
	$PY "$KH_SRCDIR/tests/harness/record.py" get chain | openssl x509 -noout -serial 2>/dev/null | cut -d= -f2)
like "$SERIAL" '^[0-9A-F]+$' "the login stored $alice's session record in her keyring"

# --- kubehsm exec as a plain program: the entry's command, no variable -----
V1='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}'
VB='{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","spec":{"interactive":false}}'
UD=$KH_TMP/alice-files
mkdir -m 0700 "$UD" && chown "$alice" "$UD"
runu "$alice" "${CMD[@]}"
printf '%s' "$out" | jq -r .status.clientCertificateData >"$UD/chain.pem" 2>/dev/null
printf '%s' "$out" | (umask 077; jq -r .status.clientKeyData >"$UD/key.pem") 2>/dev/null
chown "$alice" "$UD/chain.pem" "$UD/key.pem"
is "$rc:$(jq -r .apiVersion <<<"$out" 2>/dev/null):$(grep -c 'BEGIN CERTIFICATE' "$UD/chain.pem"):$(
	openssl x509 -in "$UD/chain.pem" -noout -serial 2>/dev/null)" \
	"0:client.authentication.k8s.io/v1:2:serial=$SERIAL" \
	"without KUBERNETES_EXEC_INFO the entry's command answers in its apiVersion: the login's session certificate and the issuer" ||
	diag "$err"
runu "$alice" env KUBERNETES_EXEC_INFO="$V1" "${CMD[@]}"
is "$rc:$(jq -r .status.clientCertificateData <<<"$out" 2>/dev/null | openssl x509 -noout -serial 2>/dev/null)" \
	"0:serial=$SERIAL" "with KUBERNETES_EXEC_INFO of the same apiVersion: the same session" || diag "$err"
runu "$alice" env KUBERNETES_EXEC_INFO="$VB" "${CMD[@]}"
if [ "$rc" -eq 1 ] && [ -z "$out" ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] &&
   grep -q "^kubehsm: KUBERNETES_EXEC_INFO asks for client.authentication.k8s.io/v1beta1 but kubehsm exec was given --api-version client.authentication.k8s.io/v1: " <<<"$err"; then
	pass "KUBERNETES_EXEC_INFO and --api-version disagree: exit 1, nothing on stdout, one line naming both"
else fail "apiVersion disagreement"; diag "rc=$rc out='$out' err='$err'"; fi
runu "$alice" "$KUBEHSM" exec
if [ "$rc" -eq 1 ] && [ -z "$out" ] && grep -q '^kubehsm: KUBERNETES_EXEC_INFO is not set: .*--api-version' <<<"$err"; then
	pass "neither KUBERNETES_EXEC_INFO nor --api-version: the clear error, as before"
else fail "neither KUBERNETES_EXEC_INFO nor --api-version"; diag "rc=$rc out='$out' err='$err'"; fi

# served CLIENT [LOGDIR]: the endpoint served CLIENT's pod list (the request
# carries labelSelector=kh-client-CLIENT) to the login's session certificate.
served() {
	grep -Eq "^127\.0\.0\.1 200 \"GET /api/v1/namespaces/default/pods\?labelSelector=kh-client-$1[& ].* serial=$SERIAL dn=\"O=dev,CN=$alice\"( |\$)" \
		"${2:-$EP_DIR}/logs/access.log"
}

# --- curl with the certificate and key from kubehsm exec --------------------
client_begin curl
runu "$alice" curl -sS --fail --cert "$UD/chain.pem" --key "$UD/key.pem" --cacert "$EP_CA" \
	"$EP/api/v1/namespaces/default/pods?labelSelector=kh-client-curl"
is "$rc:$(jq -r '.items[].metadata.name' <<<"$out" 2>/dev/null)" "0:kh-test-pod" \
	"curl --cert/--key from kubehsm exec lists pods" || diag "$err"
served curl; ok $? "... and the endpoint saw the session certificate ($SERIAL)"
client_end
VERSION[curl]=$(curl --version | awk 'NR == 1 { print $2 }')

# --- kubectl, every version ---------------------------------------------------
for k in "${KUBECTLS[@]}"; do
	v=${k##*/kubectl.}
	client_begin "kubectl $v"
	runu "$alice" "$k" --kubeconfig "$KC" get pods -l "kh-client-kubectl-$v"
	like "$rc:$(grep kh-test-pod <<<"$out")" '^0:kh-test-pod +1/1 +Running' "kubectl $v get pods" ||
		diag "$err"
	served "kubectl-$v"; ok $? "... with the session certificate"
	client_end
	VERSION["kubectl $v"]=$("$k" version --client -o json 2>/dev/null | jq -r .clientVersion.gitVersion)
done

# --- the Python client ----------------------------------------------------------
client_begin python3-kubernetes
PY_LIST='
import sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1], context=sys.argv[2])
pods = client.CoreV1Api().list_namespaced_pod("default", label_selector=sys.argv[3])
print(" ".join(p.metadata.name for p in pods.items))'
runu "$alice" $PY -c "$PY_LIST" "$KC" bundle kh-client-python
is "$rc:$out" "0:kh-test-pod" "the Python kubernetes client lists pods" || diag "$err"
served python; ok $? "... with the session certificate"
# Where the Python client keeps the key it got from the exec plugin: watch
# /tmp while it runs (alice is this test's own user: her files are its).
PY_HOLD=$PY_LIST'
import os, time
print("listed", flush=True)
while not os.path.exists(sys.argv[4]):
	time.sleep(0.05)'
GO=$KH_TMP/python-go; rm -f "$GO"
as_user "$alice" timeout 60 $PY -c "$PY_HOLD" "$KC" bundle kh-client-python "$GO" \
	</dev/null >"$KH_TMP/python-hold.out" 2>&1 &
PY_PID=$!
for _ in $(seq 1 600); do grep -q '^listed' "$KH_TMP/python-hold.out" && break; sleep 0.05; done
keyfiles=()
while IFS= read -r f; do
	grep -q -- '-----BEGIN .*PRIVATE KEY-----' "$f" && keyfiles+=("$f:$(stat -c %a "$f")")
done < <(find /tmp -maxdepth 1 -type f -user "$alice" 2>/dev/null)
like "${keyfiles[*]:-none}" '^/tmp/[^ :]+:600$' \
	"the Python client writes the session key (PEM) to a file in /tmp, mode 0600, while it runs" ||
	diag "files: ${keyfiles[*]:-none}; $(cat "$KH_TMP/python-hold.out")"
: >"$GO"; chmod 644 "$GO"
wait "$PY_PID"
left=0
for f in "${keyfiles[@]}"; do [ ! -e "${f%:*}" ] || left=$((left + 1)); done
is "$left" 0 "... and removes it when it exits (a killed client leaves it behind)"
client_end
VERSION[python3-kubernetes]=$(dpkg-query -W -f='${Version}' python3-kubernetes)

# --- @kubernetes/client-node (no KUBERNETES_EXEC_INFO) ---------------------------
NODE_LIST='
import * as k8s from "@kubernetes/client-node";
const [file, context, selector] = process.argv.slice(1);
const kc = new k8s.KubeConfig();
kc.loadFromFile(file);
kc.setCurrentContext(context);
const pods = await kc.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace: "default", labelSelector: selector });
console.log(pods.items.map((p) => p.metadata.name).join(" "));'
client_begin @kubernetes/client-node
runu "$alice" env -C "$NODE_DIR" node --input-type=module -e "$NODE_LIST" "$KC" bundle kh-client-node
is "$rc:$out" "0:kh-test-pod" "@kubernetes/client-node lists pods (it sets no KUBERNETES_EXEC_INFO)" || diag "$err"
served node; ok $? "... with the session certificate"
client_end

# --- ruby-kubeclient (no KUBERNETES_EXEC_INFO, no issuer chain) ------------------
RUBY_LIST='
require "kubeclient"
ctx = Kubeclient::Config.read(ARGV[0]).context(ARGV[1])
client = Kubeclient::Client.new(ctx.api_endpoint, "v1",
                                ssl_options: ctx.ssl_options, auth_options: ctx.auth_options)
puts client.get_pods(namespace: "default", label_selector: ARGV[2]).map { |p| p.metadata.name }.join(" ")'
client_begin ruby-kubeclient
runu "$alice" ruby -e "$RUBY_LIST" "$KC" bundle kh-client-ruby
is "$rc:$out" "0:kh-test-pod" "ruby-kubeclient lists pods (it sets no KUBERNETES_EXEC_INFO)" || diag "$err"
served ruby; ok $? "... with the session certificate, trusted through the bundle"
client_end
VERSION[ruby-kubeclient]="$(dpkg-query -W -f='${Version}' ruby-kubeclient) (ruby $(ruby -e 'print RUBY_VERSION'))"

# --- negative control: an endpoint that trusts only the issuer's root ---------------
client_begin "ruby-kubeclient, root-only endpoint (must fail)"
VERSION[$CLIENT]=${VERSION[ruby-kubeclient]}
runu "$alice" ruby -e "$RUBY_LIST" "$KC" rootonly kh-client-ruby-rootonly
if [ "$rc" -ne 0 ] && [ -z "$out" ] && grep -Eq '401|Unauthorized' <<<"$err" &&
   grep -Eq '^127\.0\.0\.1 401 "GET /api/v1' "$RO_DIR/logs/access.log"; then
	pass "root-only endpoint: ruby-kubeclient (no issuer chain sent) is refused with 401"
	diag "ruby-kubeclient: $(grep -m1 -E '401|Unauthorized' <<<"$err" | cut -c1-200)"
else fail "ruby-kubeclient against the root-only endpoint"; diag "rc=$rc out='$out' err='$err'"; fi
client_end
# Every other client sends the session certificate with its issuer chain,
# so the same endpoint lets it in with the same certificate: the missing
# chain alone made the difference.
client_begin "kubectl ${K##*/kubectl.}, root-only endpoint"
VERSION[$CLIENT]=${VERSION["kubectl ${K##*/kubectl.}"]}
runu "$alice" "$K" --kubeconfig "$KC" --context rootonly get pods -l kh-client-kubectl-rootonly
like "$rc:$(grep kh-test-pod <<<"$out")" '^0:kh-test-pod' \
	"root-only endpoint: kubectl, which sends the issuer chain, gets in" || diag "$err"
served kubectl-rootonly "$RO_DIR"; ok $? "... with the same session certificate"
client_end
client_begin "python3-kubernetes, root-only endpoint"
VERSION[$CLIENT]=${VERSION[python3-kubernetes]}
runu "$alice" $PY -c "$PY_LIST" "$KC" rootonly kh-client-python-rootonly
is "$rc:$out" "0:kh-test-pod" "root-only endpoint: the Python client gets in" || diag "$err"
served python-rootonly "$RO_DIR"; ok $? "... with the same session certificate"
client_end
client_begin "@kubernetes/client-node, root-only endpoint"
VERSION[$CLIENT]=${VERSION[@kubernetes/client-node]}
runu "$alice" env -C "$NODE_DIR" node --input-type=module -e "$NODE_LIST" "$KC" rootonly kh-client-node-rootonly
is "$rc:$out" "0:kh-test-pod" "root-only endpoint: @kubernetes/client-node gets in" || diag "$err"
served node-rootonly "$RO_DIR"; ok $? "... with the same session certificate"
client_end
client_begin "curl, root-only endpoint"
VERSION[$CLIENT]=${VERSION[curl]}
runu "$alice" curl -sS --fail --cert "$UD/chain.pem" --key "$UD/key.pem" --cacert "$RO_CA" \
	"$RO/api/v1/namespaces/default/pods?labelSelector=kh-client-curl-rootonly"
is "$rc:$(jq -r '.items[].metadata.name' <<<"$out" 2>/dev/null)" "0:kh-test-pod" \
	"root-only endpoint: curl with the chain from kubehsm exec gets in" || diag "$err"
served curl-rootonly "$RO_DIR"; ok $? "... with the same session certificate"
client_end

# --- kubectl proxy: a long-running client-go process ---------------------------
client_begin "kubectl proxy"
VERSION[$CLIENT]=${VERSION["kubectl ${K##*/kubectl.}"]}
PPORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# exec: $! is kubectl itself (setpriv and keyctl exec it), the process to stop.
(exec setpriv --reuid="$(id -u "$alice")" --regid="$(id -g "$alice")" --init-groups --reset-env \
	keyctl session - "$K" --kubeconfig "$KC" proxy --address 127.0.0.1 --port "$PPORT") \
	</dev/null >"$KH_TMP/proxy.log" 2>&1 &
PROXY=$!
stop_proxy() { [ -n "$PROXY" ] || return 0; kill -TERM "$PROXY" 2>/dev/null; wait "$PROXY" 2>/dev/null; PROXY=; }
on_exit stop_proxy
who=
for _ in $(seq 1 300); do
	who=$(curl -sf --max-time 5 "http://127.0.0.1:$PPORT/kh-whoami") && break
	kill -0 "$PROXY" 2>/dev/null || break
	sleep 0.1
done
is "$who" "$SERIAL O=dev,CN=$alice" "kubectl proxy started; a request through it reaches the endpoint as $alice" ||
	diag "$(cat "$KH_TMP/proxy.log")"
pods=$(curl -sf --max-time 30 "http://127.0.0.1:$PPORT/api/v1/namespaces/default/pods?labelSelector=kh-client-proxy" |
	jq -r '.items[].metadata.name' 2>/dev/null)
is "$pods" "kh-test-pod" "a second request through the same kubectl proxy lists pods"
served proxy; ok $? "... with the session certificate"
kill -TERM "$PROXY" 2>/dev/null
gone=1
for _ in $(seq 1 300); do kill -0 "$PROXY" 2>/dev/null || { gone=0; break; }; sleep 0.1; done
wait "$PROXY" 2>/dev/null; PROXY=
curl -s --max-time 5 "http://127.0.0.1:$PPORT/kh-whoami" >/dev/null
answers=$?
[ "$gone" -eq 0 ] && [ "$answers" -ne 0 ]
ok $? "kubectl proxy stops on SIGTERM and no longer answers"
client_end

# --- the closing table ------------------------------------------------------------
diag "client | version | result (through the entry 'kubehsm kubeconfig' printed)"
for c in "${CLIENTS[@]}"; do diag "$c | ${VERSION[$c]:-?} | ${RESULT[$c]:-?}"; done

done_testing
