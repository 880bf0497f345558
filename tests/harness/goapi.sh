# tests/harness/goapi.sh — the Kubernetes API stand-in that parses HTTP
# with Go's net/http, as kube-apiserver does (tests/harness/goapi/main.go).
#
# Source after tests/harness/tap.sh.
#   goapi_build           build it once per build tree (golang-go from
#                         Debian, standard library only, no download):
#                         $GOAPI_BIN, rebuilt when its source is newer
#   goapi_start CLIENT_CA start it on a free loopback port, requiring a
#                         client certificate that chains to CLIENT_CA; sets
#                         KUBEAPI_URL and KUBEAPI_CA (as kubeapi.sh does,
#                         so relay.sh's setup takes either) and GOAPI_LOG:
#                         one JSON line per request its handler served
#                         (method, path, proto, contentLength, body,
#                         bodyLen, upgrade); stopped when the test exits.

GOAPI_SRC=$KH_SRCDIR/tests/harness/goapi
GOAPI_DIR=$KH_BUILDDIR/tests/harness/goapi
GOAPI_BIN=$GOAPI_DIR/kh-goapi

goapi_build() {
	local f stale=0 tmp
	[ -x "$GOAPI_BIN" ] || stale=1
	for f in "$GOAPI_SRC"/main.go "$GOAPI_SRC"/go.mod; do
		[ "$f" -nt "$GOAPI_BIN" ] && stale=1
	done
	[ $stale = 1 ] || return 0
	command -v go >/dev/null || { echo "goapi: no go (golang-go)" >&2; return 1; }
	mkdir -p "$GOAPI_DIR" || return 1
	# Everything Go writes stays in the build tree (the source may be
	# read-only, as in make distcheck, and HOME may be unset): no module
	# is fetched, no newer toolchain either.
	tmp=$GOAPI_BIN.$$
	(cd "$GOAPI_SRC" &&
		env GOTOOLCHAIN=local GOPROXY=off GOFLAGS= GO111MODULE=on \
			GOTELEMETRY=off GOCACHE="$GOAPI_DIR/cache" GOPATH="$GOAPI_DIR/gopath" \
			HOME="$GOAPI_DIR" go build -trimpath -o "$tmp" .) >"$GOAPI_DIR/build.log" 2>&1 ||
		{ cat "$GOAPI_DIR/build.log" >&2; rm -f "$tmp"; return 1; }
	mv -f "$tmp" "$GOAPI_BIN"
}

goapi_start() {
	local client_ca=$1 d=$KH_TMP/goapi pid i
	goapi_build || return 1
	mkdir -p "$d" || return 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=goapi-test-ca -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null &&
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj /CN=127.0.0.1 -keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null &&
	openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
		-CAcreateserial -days 2 -out "$d/server.pem" \
		-extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n') \
		2>/dev/null || { echo "goapi: cannot make the server certificate" >&2; return 1; }
	chmod 0644 "$d"/*.pem
	GOAPI_LOG=$d/served.log
	: >"$GOAPI_LOG"
	"$GOAPI_BIN" -cert "$d/server.pem" -key "$d/server.key" -client-ca "$client_ca" \
		-log "$GOAPI_LOG" -portfile "$d/port" 2>"$d/stderr" &
	pid=$!
	for i in $(seq 1 100); do
		[ -s "$d/port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if ! [ -s "$d/port" ]; then
		echo "goapi: kh-goapi did not start:" >&2; cat "$d/stderr" >&2
		kill "$pid" 2>/dev/null
		return 1
	fi
	GOAPI_PID=$pid
	on_exit "kill $pid"
	KUBEAPI_URL=https://127.0.0.1:$(cat "$d/port")
	KUBEAPI_CA=$d/ca.pem
	export KUBEAPI_URL KUBEAPI_CA
}
