/*
 * kh_rconn — one kube client connection: its requests, their answers, and
 * Upgrade streams.
 *
 *   accept ─ uid from the kernel, per-uid and total limits
 *     │
 *   HEAD ─ a request head, read and checked (kh_rhttp) ─┬─ refused ─ 400 ─ LINGER
 *     │                                                 ├─ no session ─ 401 ─ LINGER
 *     │                                                 └─ upstream of the uid (kh_rup)
 *   UPWAIT ─ a new upstream connects ─ fails ─ 503 ─ LINGER
 *   REQ ─ the request goes up, the answer comes down, both unchanged;
 *     │   its end (keep-alive both ways): upstream back to the pool, HEAD
 *     │   again (a pipelined request next, in order)
 *   TUNNEL ─ after a 101: bytes both ways, unparsed, until either side ends
 *
 * A connection between requests holds no upstream connection and no
 * buffer.  Each direction holds at most one KH_RBUF_SIZE block, and stops
 * reading its source while that block waits to be written.
 */
#ifndef KH_RCONN_H
#define KH_RCONN_H

#include <sys/socket.h>

#include <event2/util.h>

#include "relay/kh_relayd.h"
#include "relay/kh_rsession.h"

/* The program finder's socket is readable (an event_callback_fn). */
void kh_rconn_prog_readable(evutil_socket_t fd, short what, void *arg);
/* At exit: the answers still due (500 ms at most), then every waiting
 * audit line written. */
void kh_rconn_prog_shutdown(struct kh_relayd *rd);
void kh_rconn_accept(struct kh_relayd *rd, struct kh_rcluster *cl, int fd,
		     const struct sockaddr *peer, socklen_t peerlen);
/*
 * Close u's connections to clusters of issuer (NULL = all) now: revocation,
 * expiry, shutdown.  Returns how many.  Closing the last one may free u
 * (kh_ruser_maybe_free): a caller that uses u afterwards holds an extra
 * u->nconns around the call.
 */
unsigned kh_rconn_close_user(struct kh_ruser *u, const char *issuer);
/* u's open connections to clusters of issuer. */
unsigned kh_rconn_count_user(const struct kh_ruser *u, const char *issuer);

#endif
