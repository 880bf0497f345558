#!/bin/bash
# kubehsm admin scan on real homes of real users (useradd), with a planted
# file of every kind it reports, files it must not follow or open (symbolic
# links out of the home, a FIFO, a hard link to root's file, a huge file),
# a file it cannot parse, kubehsm's own exec (not reported), a clean home,
# the policy's session.ttl, and no secret in any output.
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
need_root
need_cmd jq openssl useradd timeout sha256sum base64 softhsm2-util pkcs11-tool valgrind
[ -x "$KUBEHSM" ] || skip_all "kubehsm not built"

# Every secret planted below; none may appear in any output.
TOK=kh-scan-bearer-Zq81vX0
PASS=kh-scan-password-Pq72
REFRESH=kh-scan-refresh-Rt55
IDTOK=kh-scan-idtoken-It66
ARGSECRET=kh-scan-argsecret-As77
FILETOK=kh-scan-tokenfile-Tf88
BOBTOK=kh-scan-bob-token-Bb99
CACHETOK=kh-scan-cached-refresh-Cr11

b64() { base64 -w0 "$1"; }
b64url() { printf '%s' "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='; }
fp_of() { sha256sum "$1" | cut -c1-16; }
fp_str() { printf '%s' "$1" | sha256sum | cut -c1-16; }

pki_init
pki_ca users >/dev/null || { echo "Bail out! pki_ca"; exit 1; }
pki_user_cert long users --days 365 || { echo "Bail out! long cert"; exit 1; }
pki_user_cert short users --not-after "$(date -u -d '+4 hours' +%Y%m%d%H%M%SZ)" ||
	{ echo "Bail out! short cert"; exit 1; }
pki_user_cert server users --days 365 --eku serverAuth || { echo "Bail out! server cert"; exit 1; }
pki_issuer_token kubehsm-host 1234 users || { echo "Bail out! issuer token"; exit 1; }
POLICY=$KH_TMP/etc/kubehsm.conf
pki_policy "$POLICY" kubehsm-host || { echo "Bail out! policy"; exit 1; }   # session.ttl 1h
export KUBEHSM_CONFIG=$POLICY

make_user alice
make_user bob
make_user carol
A=$alice B=$bob C=$carol
HA=$(getent passwd "$A" | cut -d: -f6)
HB=$(getent passwd "$B" | cut -d: -f6)
HC=$(getent passwd "$C" | cut -d: -f6)

# A JWT as Kubernetes issues for a bound service-account token.
now=$(date +%s)
JWT="$(b64url '{"alg":"RS256","kid":"k1"}').$(b64url "{\"iss\":\"https://kubernetes.default.svc\",\"sub\":\"system:serviceaccount:ci:deployer\",\"exp\":$((now + 86400 * 365)),\"kubernetes.io\":{\"namespace\":\"ci\",\"serviceaccount\":{\"name\":\"deployer\"}}}").c2lnbmF0dXJlLXNlY3JldA"

plant() {   # plant USER FILE < content
	mkdir -p "$(dirname "$2")"
	cat >"$2"
	chown -R "$1:" "$(dirname "$2")"
}

# --- A: every kind --------------------------------------------------------
plant "$A" "$HA/.kube/config" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: {server: "https://prod.example:6443", certificate-authority-data: $(b64 "$PKI_DIR/users.pem")}
users:
- name: keyuser
  user:
    client-certificate-data: $(b64 "$PKI_DIR/long.pem")
    client-key-data: $(b64 "$PKI_DIR/long.key")
- name: tokuser
  user:
    token: $TOK
- name: basic
  user:
    username: admin
    password: "$PASS"
- name: oidc
  user:
    auth-provider:
      name: oidc
      config:
        client-id: kubernetes
        id-token: $IDTOK
        refresh-token: $REFRESH
- name: gke
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      args: ["--secret=$ARGSECRET"]
- name: hsm
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /usr/bin/kubehsm
      args: [exec]
contexts:
- name: prod
  context: {cluster: prod, user: keyuser}
current-context: prod
EOF
mkdir -p "$HA/creds"
cp "$PKI_DIR/long.key" "$HA/creds/alice.key"
cp "$PKI_DIR/short.pem" "$HA/creds/short.pem"
printf '%s\n' "$FILETOK" >"$HA/creds/token.txt"
chown -R "$A:" "$HA/creds"
# A JSON kubeconfig naming its files relatively, absolutely, and outside the home.
plant "$A" "$HA/.kube/refs.json" <<EOF
{"apiVersion": "v1", "kind": "Config",
 "users": [
  {"name": "relkey", "user": {"client-key": "../creds/alice.key",
                              "client-certificate": "$HA/creds/short.pem"}},
  {"name": "filetok", "user": {"tokenFile": "../creds/token.txt"}},
  {"name": "outside", "user": {"client-key": "/etc/kubernetes/pki/admin.key"}}]}
EOF
printf '%s\n' "$JWT" | plant "$A" "$HA/ci/var/run/secrets/kubernetes.io/serviceaccount/token"
printf '%s\n' "$JWT" | plant "$A" "$HA/deploy.jwt"
printf 'users:\n- name: x\n  user: {token: "%s"\n' "$TOK" | plant "$A" "$HA/.kube/broken.yaml"
truncate -s 2M "$HA/.kube/huge.yaml"
mkfifo "$HA/kubeconfig-pipe"
ln -s /etc/shadow "$HA/.kube/shadow.yaml"
ln -s "$HB/.kube/config" "$HA/kubeconfig-bob"
chown -h "$A:" "$HA/.kube/huge.yaml" "$HA/kubeconfig-pipe" "$HA/.kube/shadow.yaml" "$HA/kubeconfig-bob"
# A hard link in A's home to a root file (only where /tmp and /home share a
# file system).
printf 'users:\n- name: r\n  user: {token: "%s"}\n' "$BOBTOK" >"$KH_TMP/root-kubeconfig"
hardlink=no
ln "$KH_TMP/root-kubeconfig" "$HA/.kube/linked.yaml" 2>/dev/null && hardlink=yes
# Loose PEM files under ~/.kube: a client key and certificate (reported),
# the cluster's CA (not a client's: passed over).
cp "$PKI_DIR/long.key" "$HA/.kube/client.key"
cp "$PKI_DIR/long.pem" "$HA/.kube/client.crt"
cp "$PKI_DIR/users.pem" "$HA/.kube/ca.crt"
# kubelogin's token cache (read), kubectl's discovery cache (never read).
printf '{"id_token":"%s","refresh_token":"%s"}' "$IDTOK" "$CACHETOK" |
	plant "$A" "$HA/.kube/cache/oidc-login/0f3c9e"
printf '{"refresh_token":"%s"}' "$CACHETOK" | plant "$A" "$HA/.kube/cache/discovery/x/kubeconfig.json"
# A name meant for the admin's terminal: a newline and an escape sequence.
EVIL=$'kubeconfig\n\e[2Jevil'
printf 'users:\n- name: e\n  user: {token: "%s"}\n' "$TOK" >"$HA/$EVIL"
chown "$A:" "$HA/.kube/client.key" "$HA/.kube/client.crt" "$HA/.kube/ca.crt" "$HA/$EVIL"
touch -a -d '2020-01-02 03:04:05' "$HA/.kube/config"
ATIME=$(stat -c %X "$HA/.kube/config")

# --- B: the kubeconfig A's link points at ----------------------------------
printf 'users:\n- name: bob\n  user:\n    token: %s\n' "$BOBTOK" | plant "$B" "$HB/.kube/config"

# --- C: clean: kubehsm's exec, a CA, no credential ---------------------------
plant "$C" "$HC/.kube/config" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: {server: "https://prod.example:6443", certificate-authority-data: $(b64 "$PKI_DIR/users.pem")}
users:
- name: me
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: kubehsm, args: [exec],
           interactiveMode: Never, provideClusterInfo: false}
contexts:
- {name: prod, context: {cluster: prod, user: me}}
current-context: prod
EOF

# --- A's home ---------------------------------------------------------------
run timeout 20 "$KUBEHSM" admin scan --json --user "$A"
JSON=$out
is "$rc" 1 "scan of a home with credentials exits 1 (and does not block on the FIFO)" ||
	diag "$err"
jq -e 'type == "array"' <<<"$JSON" >/dev/null
ok $? "--json is a JSON array"
q() { jq -r "$1" <<<"$JSON"; }
is "$(q "[.[] | select(.owner != \"$A\")] | length")" 0 "every finding is owned by $A"
is "$(q '.[] | select(.user == "keyuser" and .kind == "client-key") | .fingerprint')" \
	"$(fp_of "$PKI_DIR/long.key")" "client-key-data: reported with the key's fingerprint"
is "$(q '.[] | select(.user == "keyuser" and .kind == "client-certificate") | .expires')" \
	"$(date -u -d "$(openssl x509 -in "$PKI_DIR/long.pem" -noout -enddate | cut -d= -f2)" +%Y-%m-%dT%H:%M:%SZ)" \
	"client-certificate-data valid for a year: reported with its expiry"
is "$(q '.[] | select(.user == "tokuser") | "\(.kind) \(.fingerprint)"')" "token $(fp_str "$TOK")" \
	"bearer token: reported with its fingerprint"
is "$(q '.[] | select(.user == "basic") | "\(.kind) \(.fingerprint)"')" "basic-auth $(fp_str "$PASS")" \
	"username and password: reported"
is "$(q '.[] | select(.user == "oidc") | "\(.kind) \(.detail) \(.fingerprint)"')" \
	"auth-provider auth-provider oidc: refresh-token $(fp_str "$REFRESH")" \
	"auth-provider refresh token: reported"
is "$(q '.[] | select(.user == "gke") | "\(.kind) \(.detail)"')" \
	"exec-plugin exec command gke-gcloud-auth-plugin" "an exec plugin other than kubehsm: reported, command only"
is "$(q '[.[] | select(.user == "hsm")] | length')" 0 "kubehsm's own exec plugin: not reported"
is "$(q '.[] | select(.user == "relkey" and .kind == "client-key") | .fingerprint')" \
	"$(fp_of "$HA/creds/alice.key")" "client-key naming ../creds/alice.key: read and fingerprinted"
is "$(q '[.[] | select(.user == "relkey" and .kind == "client-certificate")] | length')" 1 \
	"client-certificate naming an absolute path in the home, 4h left: longer than the policy's 1h"
is "$(q '.[] | select(.user == "filetok") | "\(.kind) \(.fingerprint)"')" \
	"token $(fp_of "$HA/creds/token.txt")" "tokenFile: reported with the file's fingerprint"
like "$(q '.[] | select(.user == "outside") | "\(.kind) \(.detail)"')" \
	"^client-key client-key: /etc/kubernetes/pki/admin.key \(outside $HA, not read\)$" \
	"a key file outside the home: reported, not read"
is "$(q '.[] | select(.file | endswith("serviceaccount/token")) | "\(.kind) \(.fingerprint)"')" \
	"serviceaccount-token $(fp_str "$JWT")" "a service-account token where it is mounted: reported"
is "$(q '.[] | select(.file == "'"$HA"'/deploy.jwt") | "\(.kind) \(.expires != null)"')" \
	"serviceaccount-token true" "a JWT with the kubernetes.io claim: reported with its expiry"
like "$(q '.[] | select(.file | endswith("broken.yaml")) | "\(.kind) \(.detail)"')" \
	"^unparsable not YAML: line [0-9]+, column [0-9]+: " "unparsable YAML: reported with where, not fatal"
like "$(q '.[] | select(.file | endswith("huge.yaml")) | "\(.kind) \(.detail)"')" \
	"^skipped larger than 1048576 bytes" "a 2 MiB file: skipped, not read"
is "$(q '.[] | select(.file | endswith("kubeconfig-pipe")) | "\(.kind) \(.detail)"')" \
	"skipped a FIFO, not opened" "a FIFO: skipped, not opened"
is "$(q '.[] | select(.file | endswith("shadow.yaml")) | "\(.kind) \(.detail)"')" \
	"skipped a symbolic link (to /etc/shadow), not followed" "a link to /etc/shadow: skipped, not followed"
is "$(q '.[] | select(.file | endswith("kubeconfig-bob")) | .kind')" skipped \
	"a link to another user's kubeconfig: skipped"
is "$(q "[.[] | select(.fingerprint == \"$(fp_str "$BOBTOK")\")] | length")" 0 \
	"nothing of the other user's (or root's) file is reported in $A's home"
if [ $hardlink = yes ]; then
	like "$(q '.[] | select(.file | endswith("linked.yaml")) | "\(.kind) \(.detail)"')" \
		"^skipped a hard link to a file of uid 0, not read" "a hard link to root's file: skipped, not read"
else
	skip "/tmp and /home are different file systems: no hard link to plant"
fi
is "$(q '.[] | select(.file | endswith(".kube/client.key")) | "\(.kind) \(.fingerprint)"')" \
	"client-key $(fp_of "$PKI_DIR/long.key")" "a private key file under ~/.kube: reported"
is "$(q '.[] | select(.file | endswith(".kube/client.crt")) | .kind')" client-certificate \
	"a long-lived certificate file under ~/.kube: reported"
is "$(q '[.[] | select(.file | contains("/.kube/cache/")) | "\(.kind) \(.fingerprint) \(.file)"] | join(",")')" \
	"token-cache $(fp_str "$CACHETOK") $HA/.kube/cache/oidc-login/0f3c9e" \
	"kubelogin's cached refresh token: reported; kubectl's discovery cache: not read"
is "$(q '[.[] | select(.file | endswith(".kube/ca.crt"))] | length')" 0 \
	"the cluster's CA certificate under ~/.kube: not a client's, not reported"
is "$(q '.[] | select(.user == "e") | .file')" "$HA/kubeconfig\\x0a\\x1b[2Jevil" \
	"a file name with a newline and an escape sequence is shown escaped"
is "$(stat -c %X "$HA/.kube/config")" "$ATIME" "the scan leaves the files' access times alone (O_NOATIME)"

run timeout 20 "$KUBEHSM" admin scan --user "$A"
TEXT=$out
is "$rc" 1 "the text report exits 1 too"
is "$(grep -c "^$A " <<<"$TEXT")" "$(q 'length')" "the text report has a line per finding"
leaks=
for s in "$TOK" "$PASS" "$REFRESH" "$IDTOK" "$ARGSECRET" "$FILETOK" "$BOBTOK" "$CACHETOK" "$JWT" \
	"$(b64 "$PKI_DIR/long.key" | cut -c1-40)" "$(sed -n 2p "$PKI_DIR/long.key")"; do
	grep -qF -- "$s" <<<"$JSON$TEXT$err" && leaks="$leaks ${s:0:12}..."
done
is "$leaks" "" "no secret in the JSON report, the text report or stderr"
unlike "$TEXT$JSON" 'root:[^ ]*:[0-9]+:' "nothing of /etc/shadow in the report"

# kubehsm-tool itself (the front end only hands over), checked for memory
# errors and leaks.
run memcheck "$KH_BUILDDIR/helper/kubehsm-tool" admin scan --json --user "$A"
is "$rc" 1 "under the memory checker: no error, no leak, the same findings" || diag "$err"
is "$(jq length <<<"$out")" "$(q length)" "... all of them"

# --- session.ttl -------------------------------------------------------------
run "$KUBEHSM" admin scan --json --user "$A" --ttl 2d
is "$(jq '[.[] | select(.kind == "client-certificate" and .user != null) | .user] | sort | join(",")' -r <<<"$out")" \
	keyuser "--ttl 2d: the 4h certificate is not reported, the 1-year one is"
run env KUBEHSM_CONFIG="$KH_TMP/none.conf" "$KUBEHSM" admin scan --json --user "$A"
is "$(jq '[.[] | select(.kind == "client-certificate") | .user // "file"] | sort | join(",")' -r <<<"$out")" \
	file,keyuser \
	"no policy: session.ttl 8h, the 4h certificate is not reported"
like "$err" "no policy at .*none.conf: taking session.ttl = 8h" "... and it says so"

# --- the clean home ------------------------------------------------------------
run timeout 20 "$KUBEHSM" admin scan --user "$C"
is "$rc" 0 "a clean home (kubehsm's exec only) exits 0" || diag "$out"
is "$out" "No long-lived kube credentials found." "... and says so"
run "$KUBEHSM" admin scan --json --user "$C"
is "$rc $out" "0 []" "--json on a clean home: an empty array"

# --- a named path ---------------------------------------------------------------
mkdir -p "$KH_TMP/named/sub"
printf 'users:\n- name: adm\n  user: {token: "%s"}\n' "$TOK" >"$KH_TMP/named/sub/admin.conf"
printf 'kind: Pod\nmetadata: {name: x}\n' >"$KH_TMP/named/pod.yaml"
cp "$PKI_DIR/server.pem" "$KH_TMP/named/sub/apiserver.crt"
run timeout 20 "$KUBEHSM" admin scan --json "$KH_TMP/named"
is "$rc $(jq -r '.[] | "\(.owner) \(.kind) \(.user)"' <<<"$out")" "1 root token adm" \
	"a named directory: its kubeconfig's token is found (owner: the file's), a pod manifest and a server's certificate are not"
run "$KUBEHSM" admin scan --json "$HB/.kube/config"
is "$rc $(jq -r '.[] | "\(.owner) \(.kind) \(.fingerprint)"' <<<"$out")" "1 $B token $(fp_str "$BOBTOK")" \
	"a named file"

# --- every home -------------------------------------------------------------------
run timeout 60 "$KUBEHSM" admin scan --json
is "$(jq --arg a "$A" --arg b "$B" --arg c "$C" -r \
	'[.[] | select(.owner == $a or .owner == $b or .owner == $c) | .owner] | unique | join(" ")' <<<"$out")" \
	"$(printf '%s\n' "$A" "$B" | sort | tr '\n' ' ' | sed 's/ $//')" \
	"every home from the passwd database: $A's and $B's findings, none in $C's" || diag "$err"

# --- a home that is a symbolic link ---------------------------------------------
make_user dan
HD=$(getent passwd "$dan" | cut -d: -f6)
mv "$HD" "$HD.real" && ln -s "$HD.real" "$HD"
on_exit "rm -rf '$HD.real' '$HD'"
printf 'users:\n- name: d\n  user: {token: "%s"}\n' "$TOK" | plant "$dan" "$HD.real/.kube/config"
run timeout 20 "$KUBEHSM" admin scan --json --user "$dan"
is "$rc $(jq -r '.[] | "\(.kind) \(.file) \(.detail)"' <<<"$out")" \
	"1 skipped $HD the home is a symbolic link, not followed" \
	"a home that is a symbolic link: said, not followed"

# --- a system account's home --------------------------------------------------------
hn=$(getent passwd nobody | cut -d: -f6)
if [ -n "$hn" ] && [ ! -e "$hn" ]; then
	run "$KUBEHSM" admin scan --user nobody
	is "$rc" 0 "--user with no home: nothing to find (exit 0) ..."
	like "$err" "nobody's home $hn does not exist: not scanned" "... and it says it scanned nothing"
else
	skip "nobody's home ($hn) exists here"
fi

# --- refusals ------------------------------------------------------------------------
run as_user "$A" "$KUBEHSM" admin scan
is "$rc" 2 "not root: exit 2"
like "$err" "needs root" "... saying why"
run "$KUBEHSM" admin scan --bogus
is "$rc" 2 "an unknown option: exit 2"
run "$KUBEHSM" admin scan relative/path
is "$rc" 2 "a relative path: exit 2"
done_testing
