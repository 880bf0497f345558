# tests/harness/kubeapi.sh — a tiny Kubernetes API stand-in for real clients.
#
# Source after tests/harness/tap.sh.  kubeapi_start CLIENT_CA starts nginx
# (nginx-light) on a free loopback port, requiring a client certificate that
# chains to CLIENT_CA (ssl_verify_client on), and serves static JSON enough
# for `kubectl get --raw /version`, `kubectl get pods` (a Table when asked),
# `kubectl auth whoami` and the Python client.  It sets:
#   KUBEAPI_URL   https://127.0.0.1:PORT
#   KUBEAPI_CA    the server's CA (PEM), for kubeconfig certificate-authority
#   KUBEAPI_DIR   nginx prefix (access.log has the client DN and serial)
# A missing or untrusted client certificate gets a Kubernetes Status 401.
# GET /kh-whoami answers "<client serial> <client subject DN>".
# nginx is stopped when the test exits.
# KUBEAPI_EXTRA (optional): nginx directives added to the server block, e.g.
# locations proxied to a streaming backend (tests/harness/relay.sh does);
# KUBEAPI_WORKER_CONNECTIONS (default 64) for tests with many connections.
# kubeapi_start CLIENT_CA NAME starts one more endpoint beside the first, in
# $KH_TMP/kubeapi-NAME: it sets the same variables (save them before the
# next start); kubeapi_stop [PID] stops one (default: the last started).

kubeapi_start() {
	local client_ca=$1 name=${2:-} d port try pid i
	KUBEAPI_DIR=$KH_TMP/kubeapi${name:+-$name}
	d=$KUBEAPI_DIR
	mkdir -p "$d/www/api/v1/namespaces/default" "$d/www/apis/authentication.k8s.io" \
		"$d/logs" "$d/tmp" || return 1
	cp "$client_ca" "$d/client-ca.pem"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=kubeapi-test-ca -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null &&
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj /CN=127.0.0.1 -keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null &&
	openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
		-CAcreateserial -days 2 -out "$d/server.pem" \
		-extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n') \
		2>/dev/null || { echo "kubeapi: cannot make the server certificate" >&2; return 1; }
	chmod 0644 "$d"/*.pem "$d/server.key"
	KUBEAPI_CA=$d/ca.pem

	local w=$d/www
	cat >"$w/version" <<'EOF'
{"major":"1","minor":"30","gitVersion":"v1.30.0-kubehsm","gitCommit":"0000000000000000000000000000000000000000","gitTreeState":"clean","buildDate":"2026-01-01T00:00:00Z","goVersion":"go1.22.0","compiler":"gc","platform":"linux/amd64"}
EOF
	cat >"$w/api/index" <<'EOF'
{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1:443"}]}
EOF
	cat >"$w/apis/index" <<'EOF'
{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"authentication.k8s.io","versions":[{"groupVersion":"authentication.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"authentication.k8s.io/v1","version":"v1"}}]}
EOF
	cat >"$w/api/v1/index" <<'EOF'
{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get","list","watch"],"shortNames":["po"],"categories":["all"]},{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["get","list"],"shortNames":["ns"]}]}
EOF
	cat >"$w/pods-list.json" <<'EOF'
{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"kh-test-pod","namespace":"default","uid":"00000000-0000-0000-0000-000000000001","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"containers":[{"name":"c","image":"busybox"}]},"status":{"phase":"Running"}}]}
EOF
	cat >"$w/pods-table.json" <<'EOF'
{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"1"},"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"Name","priority":0},{"name":"Ready","type":"string","format":"","description":"ready","priority":0},{"name":"Status","type":"string","format":"","description":"status","priority":0},{"name":"Restarts","type":"string","format":"","description":"restarts","priority":0},{"name":"Age","type":"string","format":"","description":"age","priority":0}],"rows":[{"cells":["kh-test-pod","1/1","Running","0","5m"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"kh-test-pod","namespace":"default","uid":"00000000-0000-0000-0000-000000000001","creationTimestamp":"2026-01-01T00:00:00Z"}}}]}
EOF
	cat >"$w/status-401.json" <<'EOF'
{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized: a client certificate from the kubehsm issuer is required","reason":"Unauthorized","code":401}
EOF
	cat >"$w/status-404.json" <<'EOF'
{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}
EOF
	chmod -R a+rX "$d"

	for try in 1 2 3 4 5; do
		port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
		cat >"$d/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections ${KUBEAPI_WORKER_CONNECTIONS:-64}; }
http {
	access_log $d/logs/access.log;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	default_type application/json;
	types { }
	map \$http_accept \$kh_pods { "~as=Table" /pods-table.json; default /pods-list.json; }
	log_format kh '\$remote_addr \$status "\$request" serial=\$ssl_client_serial dn="\$ssl_client_s_dn" conn=\$connection in=\$request_length out=\$bytes_sent';
	server {
		listen 127.0.0.1:$port ssl;
		ssl_certificate $d/server.pem;
		ssl_certificate_key $d/server.key;
		ssl_protocols TLSv1.2 TLSv1.3;
		ssl_verify_client on;
		ssl_client_certificate $d/client-ca.pem;
		ssl_verify_depth 3;
		root $w;
		access_log $d/logs/access.log kh;
		error_page 495 496 =401 /status-401.json;
		error_page 404 /status-404.json;
		location = /status-401.json { internal; }
		location = /status-404.json { internal; }
		location = /version { try_files /version =404; }
		location = /version/ { try_files /version =404; }
		location = /api { try_files /api/index =404; }
		location = /apis { try_files /apis/index =404; }
		location = /api/v1 { try_files /api/v1/index =404; }
		location = /api/v1/namespaces/default/pods { try_files \$kh_pods =404; }
		location = /kh-whoami { default_type text/plain; return 200 "\$ssl_client_serial \$ssl_client_s_dn\n"; }
		location ~ ^/apis/authentication\.k8s\.io/(v1|v1beta1|v1alpha1)/selfsubjectreviews\$ {
			return 201 '{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/\$1","metadata":{"creationTimestamp":null},"status":{"userInfo":{"username":"\$ssl_client_s_dn","groups":["system:authenticated"]}}}';
		}
${KUBEAPI_EXTRA:-}
		location / { return 404; }
	}
}
EOF
		nginx -p "$d" -c "$d/nginx.conf" >"$d/logs/stderr" 2>&1 &
		pid=$!
		for i in $(seq 1 50); do
			if ! kill -0 "$pid" 2>/dev/null; then break; fi
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				KUBEAPI_URL=https://127.0.0.1:$port
				KUBEAPI_PID=$pid
				_KUBEAPI_LIVE="${_KUBEAPI_LIVE:-} $pid "
				on_exit "kubeapi_stop $pid"
				export KUBEAPI_URL KUBEAPI_CA KUBEAPI_DIR
				return 0
			fi
			sleep 0.1
		done
		kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
	done
	echo "kubeapi: nginx did not start:" >&2
	cat "$d/logs/stderr" "$d/logs/error.log" >&2 2>/dev/null
	return 1
}

kubeapi_stop() {
	local pid=${1:-${KUBEAPI_PID:-}}
	# Only a running endpoint of ours: never a reused PID at exit.
	[ -n "$pid" ] && [[ ${_KUBEAPI_LIVE:-} == *" $pid "* ]] || return 0
	_KUBEAPI_LIVE=${_KUBEAPI_LIVE/ $pid / }
	kill -QUIT "$pid" 2>/dev/null
	for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ "$pid" != "${KUBEAPI_PID:-}" ] || KUBEAPI_PID=
}
