/*
 * kh_relay_client — talk to kubehsm-relayd over its Unix sockets.
 *
 * Used by the login (deliver a fresh session, forget one at logout), by
 * `kubehsm admin revoke` and `kubehsm logout`, and by the tests.  Each call
 * is one connection, one request and one reply, bounded by a timeout, so a
 * relay that hangs never hangs a login.  Sockets are looked up in `rundir`
 * (policy relay.rundir), which must be a root-owned directory nobody else
 * can write: a delivered key goes only to the daemon root started.
 *
 * Return convention: 0 on success, -1 on failure with err set.
 */
#ifndef KH_RELAY_CLIENT_H
#define KH_RELAY_CLIENT_H

#include <stddef.h>
#include <sys/types.h>

#include "lib/kh_error.h"
#include "lib/kh_relay_proto.h"

/* How long a call waits for the relay (milliseconds). */
#define KH_RELAY_CLIENT_TIMEOUT_MS 5000
/* ... a forget: a logout must not wait long, and a note does the rest. */
#define KH_RELAY_FORGET_TIMEOUT_MS 2000

/*
 * Send request `req` to rundir/sockname and decode the reply.  A reply with
 * ok = false becomes a -1 with the relay's message.  Errors: KH_ERR_NOTFOUND
 * when no relay listens there, KH_ERR_PERM for an unsafe rundir or a
 * refused peer, KH_ERR_INTERNAL otherwise.  kh_relay_reply_clear the reply.
 */
int kh_relay_call(const char *rundir, const char *sockname,
		  const struct kh_relay_request *req, struct kh_relay_reply *rep,
		  kh_error *err);

/* Hand one session (with its key) to the relay: control.sock, root only. */
int kh_relay_deliver(const char *rundir, const struct kh_relay_session *s, kh_error *err);

/* Under KH_RUNDIR (root's): forgets for a relay that is not running. */
#define KH_RELAY_PENDING_DIR "relay-forget"

/*
 * Make the relay forget uid's session for issuer (NULL: every issuer) and
 * close that uid's connections to it: control.sock (root).  The reason
 * shows in the 401 the user gets next.  0: the relay did it (*sessions and
 * *connections, either may be NULL, say how many went).  1: the relay did
 * not take it within KH_RELAY_FORGET_TIMEOUT_MS (not running, hung, out of
 * reach): root left a note (every issuer of the uid) that a running relay
 * applies within a second and a starting one at once; err says why the
 * call failed.  -1: the relay refused, or not even a note could be left.
 * A forget is never lost: revocation takes effect within
 * KH_RELAY_FORGET_TIMEOUT_MS + 1 s whatever local users do.
 */
int kh_relay_forget(const char *rundir, uid_t uid, const char *issuer,
		    enum kh_relay_reason reason, unsigned *sessions, unsigned *connections,
		    kh_error *err);

/* The same for the caller's own uid, through user.sock (any user). */
int kh_relay_forget_self(const char *rundir, const char *issuer, unsigned *sessions,
			 unsigned *connections, kh_error *err);

#endif
