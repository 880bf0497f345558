#!/bin/bash
# relay_diff: every request Go's net/http (kube-apiserver's parser) serves
# through kubehsm-relayd is one the relay audited, in the same order.
#
# A real relay (real user, real session certificate) in front of kh-goapi
# (tests/harness/goapi: Go's standard server with mTLS, logging each
# request its handler is given).  First the reproduction of the smuggled
# request: a POST on HTTP/1.0, kept alive, chunked, whose chunk-size line
# and data Go reads as two more requests -- now answered 400 by the relay
# with its Status body and Warning, and nothing reaches the server.  Then
# generated streams (tests/harness/reqdiff.py: Content-Length and
# Transfer-Encoding variants, HTTP versions, obs-fold, CR/LF variants,
# pipelining, Upgrade, sent in random pieces): for each, the requests the
# relay forwarded and audited equal the requests Go served, in order (a
# request Go's parser refuses itself, never reaching its handler, may be
# audited with Go's error status).
#
# KH_DIFF_STREAMS (default 240, a few seconds) streams from KH_DIFF_SEED
# (default: fixed); scripts/long-proofs.sh runs 20000 from a new seed.
set -u
. "$KH_SRCDIR/tests/harness/relay.sh"
relay_preamble go jq
STREAMS=${KH_DIFF_STREAMS:-240}
SEED=${KH_DIFF_SEED:-31}
case $STREAMS in ''|*[!0-9]*) skip_all "KH_DIFF_STREAMS must be a number" ;; esac

plan_auto
RELAY_API=go relay_init
make_user alice
relay_start || exit 1
relay_mint "$alice" && relay_deliver "$alice" || { echo "Bail out! session for $alice"; exit 1; }
DIFF=$KH_SRCDIR/tests/harness/reqdiff.py

relay_kc "$alice" get --raw /kh-whoami
is "$rc:$out" "0:$(relay_serial "$alice") CN=$alice,O=dev" \
	"kubectl through the relay reaches kh-goapi (Go's net/http) with $alice's certificate" ||
	diag "$err"

# The UID attribute (identity.uid, #32), read as kube-apiserver reads it; the
# relay's audit line names the same UID and the program.
make_user carol
relay_mint "$carol" dev "bastion1:$carol:0a1b" && relay_deliver "$carol" ||
	{ echo "Bail out! session for $carol"; exit 1; }
relay_kc "$carol" get --raw /kh-uid
is "$rc:$out" "0:bastion1:$carol:0a1b" \
	"kh-goapi reads the UID from the certificate's 1.3.6.1.4.1.57683.2, as kube-apiserver does" ||
	diag "$err"
for _ in $(seq 1 50); do grep -q '"path":"/kh-uid"' "$RELAY_AUDIT" && break; sleep 0.1; done
line=$(grep '"path":"/kh-uid"' "$RELAY_AUDIT" | tail -1)
is "$(jq -r '"\(.kubeUid) \(.exe | split("/") | last)"' <<<"$line")" "bastion1:$carol:0a1b $(basename "$(readlink -f "$RELAY_KUBECTL")")" \
	"the relay's audit line names the same UID and the kubectl that sent it" || diag "$line"
diag "kh-goapi read the UID: $(relay_kc "$carol" get --raw /kh-uid; echo "$out")"

# --- the reproduction -----------------------------------------------------------
cat >"$KH_TMP/smuggle.py" <<EOF
import socket
inner = b"Host: relay\r\n\r\nGET /api/v1/namespaces/kube-system/secrets HTTP/1.1\r\nHost: relay\r\n\r\n"
data = inner + b"x" * (0xACE - len(inner))
req = (b"POST /kh-smuggle HTTP/1.0\r\nHost: relay\r\nConnection: keep-alive\r\n"
       b"Transfer-Encoding: chunked\r\n\r\nACE /kh-smuggle-2 HTTP/1.1\r\n" + data + b"\r\n0\r\n\r\n")
s = socket.create_connection(("127.0.0.1", $RELAY_PORT), timeout=10)
s.sendall(req)
s.shutdown(socket.SHUT_WR)
got = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    got += b
print(got.decode("latin-1"))
EOF
n0=$(wc -l <"$GOAPI_LOG")
a0=$(relay_audit_lines | wc -l)
run relay_as "$alice" $PY "$KH_TMP/smuggle.py"
like "$out" "^HTTP/1.1 400 " "POST on HTTP/1.0, kept alive, Transfer-Encoding: chunked: 400 from the relay" ||
	diag "$out$err"
like "$out" "Warning: 299 - \"kubehsm-relayd: bad request: Transfer-Encoding on an HTTP/1.0 request" \
	"... with its Warning saying why"
like "$out" '"kind":"Status"' "... and a Kubernetes Status body"
sleep 0.3
is "$(tail -n +$((n0 + 1)) "$GOAPI_LOG" | jq -r '"\(.method) \(.path)"')" "" \
	"... the API server served nothing (before the fix: the POST, ACE /kh-smuggle-2 and GET .../secrets)"
is "$(relay_audit_lines | tail -n +$((a0 + 1)) | jq -c '[.method, .path, .status, .relay]')" \
	'["POST","/kh-smuggle",400,"bad request head"]' "... and the relay audited its refusal"

# --- generated streams ----------------------------------------------------------
# Idle connections the relay keeps to the server stay out of the way: the
# comparison starts when no client connection is left open.
client_conns() { ss -Htn state established "sport = :$RELAY_PORT" | wc -l; }
t0=$(date +%s.%N)
n0=$(wc -l <"$GOAPI_LOG")
run relay_as "$alice" $PY "$DIFF" send "$SEED" "$STREAMS" "$RELAY_PORT"
is "$rc" 0 "$STREAMS generated streams (seed $SEED) sent through the relay" || diag "$err"
for i in $(seq 1 150); do
	[ "$(client_conns)" = 0 ] && break
	sleep 0.1
done
sleep 0.3
t1=$(date +%s.%N)
cp "$RELAY_AUDIT" "$KH_TMP/audit.copy"
tail -n +$((n0 + 1)) "$GOAPI_LOG" >"$KH_TMP/served.copy"
run $PY "$DIFF" compare "$KH_TMP/audit.copy" "$KH_TMP/served.copy" "$SEED"
is "$rc" 0 "for every stream, the requests the relay audited are the requests Go served, in order" ||
	diag "$(head -40 <<<"$out")"
summary=$(head -1 <<<"$out")
diag "$summary ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
read -r _ nstreams _ forwarded _ served _ refused _ refused_go <<<"$summary"
[ "${forwarded:-0}" -gt 0 ] && [ "${served:-0}" -gt 0 ] && [ "${refused:-0}" -gt 0 ]
ok $? "... a comparison with something in it: requests forwarded and served, and requests refused"

relay_stop
is "$RELAY_STATUS" 0 "the relay stops cleanly"
done_testing
