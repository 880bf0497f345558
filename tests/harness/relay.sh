# tests/harness/relay.sh — a real kubehsm-relayd for integration tests.
#
# Source it first (it brings tap.sh, users.sh, pki.sh and kubeapi.sh unless
# a script sourced them already), then call relay_preamble: every relay
# test starts the same way.
#
#   relay_preamble [CMD...]   root, the tools (and CMDs), the daemon and the
#                         probe built, kubectl on the machine, or skip_all;
#                         sets KUBECTLS (every kubectl.1.*) and PY
#   relay_need_py MODULE...   the Python modules, or skip_all
#   relay_as USER CMD...  CMD as USER (all ids, no terminal, clean env)
#   relay_serial USER     the serial of USER's minted session certificate
#   relay_audit_lines     the audit log's lines (as root), one per line
#   relay_init            a system user for relay.run_as, a free privileged
#                         port (RELAY_PORT), the host issuer (pki), the mTLS
#                         endpoint (kubeapi) with its streaming backend
#                         (kubeback.py: watch, exec, Upgrade echo, big
#                         bodies) -- or with RELAY_API=go, Go's net/http
#                         instead (goapi.sh: what kube-apiserver's parser
#                         serves, logged to GOAPI_LOG) -- and a policy
#                         (RELAY_CONF) with a relay
#                         section; sets RELAY_RUNDIR, RELAY_KUBECONFIG and
#                         RELAY_AUDIT (the audit log, under $KH_TMP;
#                         RELAY_AUDIT_SET replaces the whole audit setting:
#                         'audit = { file = ""; };' for none, or empty for
#                         no setting at all, only for a relay from before
#                         relay.audit: a current one would then write
#                         /var/log/kubehsm/audit.log)
#   relay_setup CONF      the same on top of an existing policy and endpoint
#                         (the login-program tests have their own)
#   relay_policy [deliver=exec|relay|both] [relay=TEXT-IN-THE-SECTION]
#                [clusters=", { MORE CLUSTERS }"]
#                         (re)write RELAY_CONF: the base policy plus these
#   relay_start [ARGS]    start the daemon in the foreground (log:
#                         $KH_TMP/relayd.log), wait until control.sock answers;
#                         RELAY_WRAP (words) runs it through a wrapper
#   relay_stop            SIGTERM and wait; relay_kill9: SIGKILL and wait
#   relay_mint USER [O]   a session key and certificate for USER signed by the
#                         host issuer: $RELAY_SESS/USER.chain, USER.key
#   relay_deliver USER [EXPIRES]   hand USER's minted session to the relay
#   relay_ctl ARGS...     tests/probes/relay_client $RELAY_RUNDIR ARGS...
#   relay_kc USER ARGS... kubectl (RELAY_KUBECTL) as USER through the relay,
#                         no terminal, stdin /dev/null; run's $out/$err/$rc
#   free_privileged_port  a port below 1024 nobody listens on, v4 and v6
#
# Everything (the daemon, its user, its keyring store) goes at exit.

declare -F plan_auto >/dev/null || . "$KH_SRCDIR/tests/harness/tap.sh"
declare -F make_user >/dev/null || . "$KH_SRCDIR/tests/harness/users.sh"
declare -F pki_init >/dev/null || . "$KH_SRCDIR/tests/harness/pki.sh"
declare -F kubeapi_start >/dev/null || . "$KH_SRCDIR/tests/harness/kubeapi.sh"
declare -F goapi_start >/dev/null || . "$KH_SRCDIR/tests/harness/goapi.sh"

RELAYD=$KH_BUILDDIR/relay/kubehsm-relayd
RELAY_CLIENT=$KH_BUILDDIR/tests/probes/relay_client
RELAY_KUBECTL=${RELAY_KUBECTL:-/usr/lib/google-cloud-sdk/bin/kubectl.1.33}
RELAY_PID=
RELAY_DEBUG=${RELAY_DEBUG-1}   # empty: no --debug (the benchmark)

relay_preamble() {
	need_root
	need_cmd softhsm2-util pkcs11-tool openssl keyctl setpriv nginx ss useradd curl "$@"
	[ -x "$RELAYD" ] || skip_all "relay/kubehsm-relayd not built"
	[ -x "$RELAY_CLIENT" ] || skip_all "tests/probes/relay_client not built"
	KUBECTLS=(/usr/lib/google-cloud-sdk/bin/kubectl.1.*)
	[ -x "${KUBECTLS[0]}" ] || skip_all "no kubectl in /usr/lib/google-cloud-sdk/bin"
	PY=/usr/bin/python3
}

relay_need_py() {
	local m
	for m in "$@"; do
		$PY -c "import $m" 2>/dev/null ||
			skip_all "needs the Python module $m (scripts/install-deps.sh installs it)"
	done
}

relay_as() {
	local u=$1; shift
	setpriv --reuid="$(id -u "$u")" --regid="$(id -g "$u")" --init-groups --reset-env "$@"
}

relay_serial() { openssl x509 -noout -serial -in "$RELAY_SESS/$1.pem" | cut -d= -f2; }

relay_audit_lines() { cat "$RELAY_AUDIT" 2>/dev/null; }

free_privileged_port() {
	/usr/bin/python3 - <<'EOF'
import random, socket
ports = list(range(600, 1000))
random.shuffle(ports)
for p in ports:
    try:
        for fam, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            s = socket.socket(fam)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((addr, p))
            s.close()
        print(p)
        break
    except OSError:
        continue
EOF
}

relay_init() {
	RELAY_ISSUER_PIN=${RELAY_ISSUER_PIN:-987654}
	RELAY_HOST=khrhost$$
	pki_init && pki_ca users "kh relay users CA" && pki_ca issuerca "kh relay issuer CA" &&
		pki_issuer_token "$RELAY_HOST" "$RELAY_ISSUER_PIN" issuerca ||
		{ echo "Bail out! PKI"; exit 1; }
	chmod 0600 "$PKI_DIR/issuer.pin"
	if [ "${RELAY_API:-nginx}" = go ]; then
		goapi_start "$PKI_DIR/issuerca.pem" || { echo "Bail out! kh-goapi did not start"; exit 1; }
	else
		relay_backend_start || { echo "Bail out! kubeback.py did not start"; exit 1; }
		kubeapi_start "$PKI_DIR/issuerca.pem" || { echo "Bail out! nginx did not start"; exit 1; }
	fi
	pki_policy "$KH_TMP/etc/kubehsm.conf" "$RELAY_HOST" || { echo "Bail out! policy"; exit 1; }
	relay_setup "$KH_TMP/etc/kubehsm.conf"
}

# relay_setup CONF: the relay's part on top of an existing policy CONF (its
# issuer, and KUBEAPI_URL / KUBEAPI_CA of a running endpoint): run_as user,
# port, rundir, the relay section (relay_policy), the shared kubeconfig.
relay_setup() {
	RELAY_CONF=$1
	RELAY_BASE=$KH_TMP/relay-base.conf
	cp "$RELAY_CONF" "$RELAY_BASE"
	RELAY_USER=khrly$$
	useradd --system --no-create-home --shell /usr/sbin/nologin "$RELAY_USER" >/dev/null 2>&1 ||
		{ echo "Bail out! useradd $RELAY_USER failed"; exit 1; }
	RELAY_UID=$(id -u "$RELAY_USER")
	on_exit "relay_cleanup"
	RELAY_PORT=$(free_privileged_port)
	[ -n "$RELAY_PORT" ] || { echo "Bail out! no free port below 1024"; exit 1; }
	RELAY_RUNDIR=$KH_TMP/relayd
	RELAY_AUDIT=$KH_TMP/audit/audit.log
	RELAY_SESS=$KH_TMP/sessions
	mkdir -p -m 0755 "$RELAY_SESS"
	relay_policy || { echo "Bail out! relay policy"; exit 1; }
	# The shared kubeconfig, as an admin makes it.
	RELAY_KUBECONFIG=$KH_TMP/relay.kubeconfig
	"$KUBEHSM" kubeconfig --relay --config "$RELAY_CONF" --write "$RELAY_KUBECONFIG" ||
		{ echo "Bail out! kubehsm kubeconfig --relay"; exit 1; }
}

# The streaming backend behind nginx's mTLS: what static files cannot do.
relay_backend_start() {
	local i proxy
	/usr/bin/python3 "$KH_SRCDIR/tests/harness/kubeback.py" "$KH_TMP/kubeback.port" \
		>"$KH_TMP/kubeback.log" 2>&1 &
	RELAY_BACKEND_PID=$!
	on_exit "kill $RELAY_BACKEND_PID"
	for i in $(seq 1 100); do
		[ -s "$KH_TMP/kubeback.port" ] && break
		sleep 0.05
	done
	[ -s "$KH_TMP/kubeback.port" ] || return 1
	proxy="proxy_pass http://127.0.0.1:$(cat "$KH_TMP/kubeback.port");
			proxy_http_version 1.1; proxy_buffering off; proxy_read_timeout 1h;
			proxy_set_header Upgrade \$http_upgrade;
			proxy_set_header Connection \$http_connection;"
	KUBEAPI_EXTRA="
		location = /api/v1/namespaces { $proxy }
		location ~ ^/api/v1/namespaces/default/pods/kh-test-pod(/exec)?\$ { $proxy }
		location = /kh-echo { $proxy }
		location = /kh-stream { $proxy }
		location = /kh-whoami-slow { $proxy }
		${RELAY_KUBEAPI_EXTRA:-}"
	KUBEAPI_WORKER_CONNECTIONS=${KUBEAPI_WORKER_CONNECTIONS:-2048}
}

relay_policy() {
	local deliver=exec extra="" more="" kv
	for kv in "$@"; do
		case $kv in
		deliver=*) deliver=${kv#*=} ;;
		relay=*) extra=${kv#*=} ;;
		clusters=*) more=${kv#*=} ;;
		*) echo "relay_policy: unknown setting '$kv'" >&2; return 1 ;;
		esac
	done
	sed "s|cache_pin = false; };|cache_pin = false; deliver = \"$deliver\"; };|" \
		"$RELAY_BASE" >"$RELAY_CONF" || return 1
	local audit="audit = { file = \"$RELAY_AUDIT\"; };"
	[ -z "${RELAY_AUDIT_SET+set}" ] || audit=$RELAY_AUDIT_SET
	cat >>"$RELAY_CONF" <<EOF
relay = { run_as = "$RELAY_USER"; rundir = "$RELAY_RUNDIR"; $extra
  $audit
  clusters = ( { name = "test"; listen = $RELAY_PORT; server = "$KUBEAPI_URL";
                 ca_file = "$KUBEAPI_CA"; } $more ); };
EOF
}

relay_start() {
	local i
	${RELAY_WRAP:-} "$RELAYD" --config "$RELAY_CONF" --foreground ${RELAY_DEBUG:+--debug} "$@" \
		>>"$KH_TMP/relayd.log" 2>&1 &
	RELAY_PID=$!
	for i in $(seq 1 100); do
		kill -0 "$RELAY_PID" 2>/dev/null || break
		"$RELAY_CLIENT" "$RELAY_RUNDIR" list >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "# kubehsm-relayd did not start:"; sed 's/^/#   /' "$KH_TMP/relayd.log" | tail -20
	return 1
}

relay_wait_gone() {
	local i
	for i in $(seq 1 100); do
		kill -0 "$RELAY_PID" 2>/dev/null || break
		sleep 0.1
	done
	wait "$RELAY_PID" 2>/dev/null
	RELAY_STATUS=$?
	RELAY_PID=
}

relay_stop() {
	[ -n "$RELAY_PID" ] || return 0
	kill -TERM "$RELAY_PID" 2>/dev/null
	relay_wait_gone
}

relay_kill9() {
	[ -n "$RELAY_PID" ] || return 0
	kill -KILL "$RELAY_PID" 2>/dev/null
	relay_wait_gone 2>/dev/null   # not bash's "Killed" line
}

relay_cleanup() {
	if [ -n "$RELAY_PID" ]; then
		kill -KILL "$RELAY_PID" 2>/dev/null
		wait "$RELAY_PID" 2>/dev/null
	fi
	# The store outlives the daemon by design: drop it with the test's user.
	keyctl session - sh -c "k=\$(keyctl get_persistent @s $RELAY_UID) && keyctl clear \$k" \
		>/dev/null 2>&1
	userdel "$RELAY_USER" >/dev/null 2>&1
	if [ "${KH_KEEP_TMP:-0}" = 1 ] || [ "$_tap_failed" -gt 0 ]; then
		echo "# kubehsm-relayd log (tail):"
		tail -30 "$KH_TMP/relayd.log" 2>/dev/null | sed 's/^/#   /'
	fi
}

relay_mint() {   # relay_mint USER [O [UID]]: UID as the subject's 1.3.6.1.4.1.57683.2
	local u=$1 d=$RELAY_SESS subj="/O=${2:-dev}/CN=$1${3:+/khUID=$3}"
	# openssl req skips a dotted OID in -subj: the config names it.
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/$u.key" 2>/dev/null &&
	openssl req -new -utf8 -key "$d/$u.key" -subj "$subj" -out "$d/$u.csr" -config <(printf \
		'oid_section = oids\n[oids]\nkhUID = 1.3.6.1.4.1.57683.2\n[req]\ndistinguished_name = dn\n[dn]\n') \
		2>/dev/null &&
	openssl x509 -req -in "$d/$u.csr" -CA "$PKI_DIR/issuer.pem" -CAkey "$PKI_DIR/issuer.key" \
		-set_serial "0x$(openssl rand -hex 12)" -days 1 -out "$d/$u.pem" \
		-extfile <(printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n') \
		2>/dev/null || return 1
	cat "$d/$u.pem" "$PKI_DIR/issuer.pem" >"$d/$u.chain"
	chmod 0600 "$d/$u.key"
}

relay_deliver() {
	local u=$1 exp=${2:-$(($(date +%s) + 3600))}
	"$RELAY_CLIENT" "$RELAY_RUNDIR" deliver "$(id -u "$u")" "$u" "" "$exp" \
		"$RELAY_SESS/$u.chain" "$RELAY_SESS/$u.key"
}

relay_ctl() { "$RELAY_CLIENT" "$RELAY_RUNDIR" "$@"; }

# relay_keys: "UID KEY-PEM-BASE64" per session the relay keeps, read as root
# from its keyring store (root possesses the persistent keyring it asks for).
relay_keys() {
	keyctl session - sh -c '
		p=$(keyctl get_persistent @s "$1") || exit 1
		v=$(keyctl search "$p" keyring "kubehsm-relayd:v1:$2") || exit 1
		for k in $(keyctl rlist "$v"); do
			keyctl pipe "$k" 2>/dev/null; echo
		done' - "$RELAY_UID" "$RELAY_RUNDIR" 2>/dev/null |
	/usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    line = line.strip()
    if line.startswith("{"):
        s = json.loads(line)
        body = "".join(l for l in s["key"].splitlines() if not l.startswith("-----"))
        print(s["uid"], body)'
}

relay_kc() {
	local u=$1; shift
	run relay_as "$u" setsid -w timeout 60 "$RELAY_KUBECTL" --kubeconfig "$RELAY_KUBECONFIG" \
		"$@" </dev/null
}
