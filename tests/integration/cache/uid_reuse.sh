#!/bin/bash
# uid_reuse: the kernel keeps a uid's keys after userdel, so an account
# given a former holder's uid inherits that holder's "ended" marker.  It
# must not be told that a session it never had "was ended": the marker
# names the account whose session it was, and readers take only their own
# account's.  Real userdel and useradd on one uid, with both kinds of
# marker: root's (the last logout) and the user's own (kubehsm logout's).
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
need_root
need_cmd keyctl setpriv useradd userdel openssl

PROBE="$KH_BUILDDIR/tests/probes/cache_probe"
[ -x "$PROBE" ] || skip_all "tests/probes/cache_probe not built"
[ -x "$KUBEHSM" ] || skip_all "helper/kubehsm not built"
chmod 0755 "$KH_BUILDDIR" "$KH_BUILDDIR/tests" "$KH_BUILDDIR/helper" 2>/dev/null || true
V1='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}'

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=issuer \
	-keyout "$KH_TMP/issuer.key" -out "$KH_TMP/issuer.pem" -days 2 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=session \
	-keyout "$KH_TMP/session.key" -out "$KH_TMP/session.pem" -days 1 2>/dev/null
cat "$KH_TMP/session.pem" "$KH_TMP/issuer.pem" >"$KH_TMP/chain.pem"
MAT=(--chain "$KH_TMP/chain.pem" --key "$KH_TMP/session.key" --token-cert "$KH_TMP/issuer.pem")

# The three holders of one uid, one after the other.
FIRST=khreusea$$ SECOND=khreuseb$$ THIRD=khreusec$$
for n in "$FIRST" "$SECOND" "$THIRD"; do on_exit "drop_user $n"; done
useradd --create-home --shell /bin/bash "$FIRST" || { echo "Bail out! useradd $FIRST"; exit 1; }
U=$(uid_of "$FIRST")
setpriv --reuid="$U" --regid="$(id -g "$FIRST")" --clear-groups keyctl clear @u 2>/dev/null
# reuse OLD NEW: the uid passes from OLD to a new account NEW.  userdel
# leaves the uid's keys to the kernel, which keeps them.
reuse() {
	userdel --remove "$1" 2>/dev/null
	useradd --create-home --shell /bin/bash --uid "$U" "$2" ||
		{ echo "Bail out! useradd --uid $U $2 (did another test take the uid?)"; exit 1; }
}
markers() { as_user "$1" sh -c 'keyctl search @u user kubehsm:ended:v1 >/dev/null 2>&1 && echo marker' 2>/dev/null; }
# no_ended_message USER WHAT: USER is told there is no session, not that it ended.
no_ended_message() {
	run as_user "$1" "$PROBE" find
	like "$out" "^miss absent" "$2: the reader finds no session of $1's, not an ended one"
	run as_user "$1" env KUBERNETES_EXEC_INFO="$V1" "$KUBEHSM" exec
	err=$(grep -v '^Joined session keyring' <<<"$err")
	if [ "$rc" != 0 ] && grep -q 'no kube session' <<<"$err" && ! grep -q 'ended' <<<"$err"; then
		pass "$2: kubehsm exec says there is no kube session ($err)"
	else
		fail "$2: kubehsm exec says there is no kube session, not that one ended"
		diag "rc=$rc err=$err"
	fi
}

# --- the first holder's session ends at its last logout: root's marker ------
"$PROBE" login "$U" "$FIRST" user 600 "${MAT[@]}" >/dev/null
run "$PROBE" logout "$U"
is "$out" "removed" "$FIRST's last logout ends the session"
run as_user "$FIRST" "$PROBE" find
like "$out" "^miss revoked" "control: $FIRST is told the session was ended"

reuse "$FIRST" "$SECOND"
is "$(uid_of "$SECOND")" "$U" "userdel $FIRST; useradd $SECOND with the same uid $U"
is "$(markers "$SECOND")" marker "control: the kernel kept $FIRST's ended marker under uid $U"
no_ended_message "$SECOND" "a new account on $FIRST's uid"

# --- the second holder's own session, ended by itself: the user's marker -----
"$PROBE" login "$U" "$SECOND" user 600 "${MAT[@]}" >/dev/null
run as_user "$SECOND" "$PROBE" find
like "$out" "^ok uid=$U user=$SECOND " "$SECOND logs in on the reused uid"
run as_user "$SECOND" "$PROBE" revoke "$U"
is "$out" "revoked" "$SECOND ends the session itself (as kubehsm logout does)"
run as_user "$SECOND" env KUBERNETES_EXEC_INFO="$V1" "$KUBEHSM" exec
like "$err" "was ended" "control: $SECOND is told the session was ended"

reuse "$SECOND" "$THIRD"
is "$(markers "$THIRD")" marker "control: the kernel kept $SECOND's own marker under uid $U"
no_ended_message "$THIRD" "a new account on $SECOND's uid"

done_testing
