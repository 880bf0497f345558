/*
 * kh_rup — mTLS connections to the API server, pooled per uid and cluster.
 *
 * A client connection with a request to send asks for an upstream
 * connection of its uid and cluster: an idle one from the pool when the
 * pool has one made with the uid's current session, else a new one (TCP,
 * then TLS with the session's certificate, resuming the uid's last TLS
 * session).  When the answer is complete and both sides allow it, the
 * connection goes back to the pool; it closes after
 * relay.upstream_idle_timeout there, when the server closes it, when the
 * uid's session ends, or when KH_RELAY_POOL_MAX others already wait.
 * Pools are per uid: no connection ever carries two uids' requests.
 *
 * A connection in use belongs to one client connection, which does its
 * reads and writes; it is told about readiness through kh_rup_ops, so this
 * module knows nothing of client connections.
 */
#ifndef KH_RUP_H
#define KH_RUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <openssl/ssl.h>

#include "lib/kh_error.h"
#include "relay/kh_relayd.h"
#include "relay/kh_rsession.h"

struct kh_rup;

/* What the client connection using an upstream connection is told. */
struct kh_rup_ops {
	void (*ready)(void *arg, struct kh_rup *up);    /* connected: TLS is up */
	void (*failed)(void *arg, const char *why);     /* could not: it is gone */
	void (*readable)(void *arg);
	void (*writable)(void *arg);
};

enum kh_rup_state {
	KH_UP_RESOLVING,
	KH_UP_CONNECTING,
	KH_UP_HANDSHAKE,
	KH_UP_IDLE,        /* in the pool */
	KH_UP_BUSY,        /* a client connection's */
};

TAILQ_HEAD(kh_rup_list, kh_rup);

/* Upstream connections of one uid to one cluster. */
struct kh_rpool {
	struct kh_rup_list idle;
	unsigned nidle, nbusy;
};

struct kh_rup {
	struct kh_relayd *rd;
	struct kh_ruser *user;
	struct kh_rcluster *cl;
	struct kh_rpool *pool;
	uint64_t serial;                /* the session it was made with */
	int fd;
	SSL *ssl;
	struct event *ev_read;          /* persistent from the handshake on */
	struct event *ev_write;         /* armed only when a write would block */
	struct event *timer;            /* handshake deadline; idle bound in the pool */
	bool reading;                   /* ev_read is added */
	enum kh_rup_state state;
	const struct kh_rup_ops *ops;
	void *arg;
	TAILQ_ENTRY(kh_rup) link;       /* in pool->idle */
	struct evdns_getaddrinfo_request *dns;
	bool dead;                      /* closed while a DNS answer was due */
	bool starting;                  /* inside evdns_getaddrinfo */
	bool early;                     /* ... which answered at once: */
	int early_result;
	struct evutil_addrinfo *early_res;
	bool reused;                    /* taken from the pool */
};

/*
 * An upstream connection for u's requests to cl with session s, for ops
 * and arg.  Taken from the pool: *ready is true and it is in use at once.
 * New: *ready is false, and ops->ready or ops->failed follows (never
 * before this returns).  NULL + err when not even a start was possible.
 */
struct kh_rup *kh_rup_get(struct kh_ruser *u, struct kh_rcluster *cl, struct kh_rsession *s,
			  const struct kh_rup_ops *ops, void *arg, bool *ready, kh_error *err);
/* Done with it: back to the pool when reusable (and its session is still
 * the uid's), else closed. */
void kh_rup_release(struct kh_rup *up, bool reusable);
void kh_rup_close(struct kh_rup *up);
/* Stop or resume reading it (the client is not taking bytes). */
void kh_rup_read(struct kh_rup *up, bool on);
/* Call ops->writable when it can take bytes again. */
void kh_rup_want_write(struct kh_rup *up);
/* Close u's idle pooled connections to clusters of issuer (NULL = all). */
unsigned kh_rpool_close_user(struct kh_relayd *rd, struct kh_ruser *u, const char *issuer);
/* u's pooled and busy connections to cluster index i. */
void kh_rpool_counts(const struct kh_ruser *u, size_t i, unsigned *idle, unsigned *busy);

#endif
