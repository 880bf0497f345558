/*
 * kh_rpeer — which uid owns the other end of a loopback TCP connection.
 *
 * The kernel answers, not the peer: an exact NETLINK_SOCK_DIAG lookup of
 * the peer's socket by the connection's 4-tuple returns the uid that
 * created it.  No token, no ident protocol, nothing the peer can say.
 */
#ifndef KH_RPEER_H
#define KH_RPEER_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "lib/kh_error.h"

/* The NETLINK_SOCK_DIAG socket (close-on-exec), or -1 + err. */
int kh_rpeer_open(kh_error *err);

/*
 * The uid of the socket whose local address is `peer` and whose remote
 * address is `local` (our end of an accepted connection).  It must be a
 * TCP socket that a process still holds (not TIME_WAIT, not orphaned):
 * anything else is refused.  0, or -1 + err.
 */
int kh_rpeer_uid(int nlfd, const struct sockaddr *local, const struct sockaddr *peer,
		 uid_t *uid, kh_error *err);
/* The same, with the peer socket's inode (for kh_rprog). */
int kh_rpeer_lookup(int nlfd, const struct sockaddr *local, const struct sockaddr *peer,
		    uid_t *uid, uint64_t *inode, kh_error *err);

#endif
