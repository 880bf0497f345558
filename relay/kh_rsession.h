/*
 * kh_rsession — the uids the relay knows, their sessions and the TLS client
 * contexts made from each session's certificate and key.
 *
 * It knows nothing of connections: when a session ends (forget, expiry) it
 * asks rd->close_user to close that uid's connections to the issuer's
 * clusters before the key goes.
 */
#ifndef KH_RSESSION_H
#define KH_RSESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <time.h>

#include <event2/event.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "lib/kh_error.h"
#include "lib/kh_relay_proto.h"
#include "relay/kh_relayd.h"

struct kh_rconn;
struct kh_rpool;
TAILQ_HEAD(kh_rconn_list, kh_rconn);

/* Everything the relay knows about one uid. */
struct kh_ruser {
	uid_t uid;
	unsigned nconns;                /* client connections */
	struct kh_rconn_list conns;
	unsigned nups;                  /* upstream connections, pooled or busy */
	struct kh_rpool *pools;         /* [rd->nclusters], made on first use */
	struct kh_rsession *sessions;   /* one per issuer, singly linked */
	/* Why the last session of this uid ended, for the 401 message. */
	time_t ended_at;
	const char *ended_why;          /* static string, NULL = never ended here */
	struct kh_ruser *next;          /* hash chain */
};

/* Per cluster TLS state of a session: a context with its certificate and
 * key, and the TLS session to resume. */
struct kh_rtls {
	SSL_CTX *ctx;
	SSL_SESSION *resume;
};

struct kh_rsession {
	struct kh_relayd *rd;
	struct kh_ruser *user;
	char *user_name;
	char *issuer;
	struct kh_relay_origin origin;  /* the login it came from (audit) */
	char *kube_uid;                 /* the leaf's UID attribute (audit), NULL: none */
	int64_t expires;
	int64_t delivered;              /* when the relay took it (unix seconds) */
	int64_t delivered_ns;           /* the same in ns (0: restored, use seconds) */
	uint64_t serial;                /* new for each session: pooled upstreams match it */
	X509 *leaf;
	STACK_OF(X509) *chain;          /* the certificates after the leaf */
	EVP_PKEY *key;
	int slot;                       /* kh_rstore slot, -1 = none */
	struct kh_rtls *tls;            /* [rd->nclusters], contexts made on first use */
	struct event *expiry;
	struct kh_rsession *next;
};

struct kh_ruser *kh_ruser_get(struct kh_relayd *rd, uid_t uid, bool create);
/* Drop a uid's entry when nothing refers to it any more. */
void kh_ruser_maybe_free(struct kh_relayd *rd, struct kh_ruser *u);
struct kh_rsession *kh_rsession_find(struct kh_relayd *rd, uid_t uid, const char *issuer);
/* Take a delivered (or restored) session; s is consumed. persist: store it. */
int kh_rsession_add(struct kh_relayd *rd, struct kh_relay_session *s, int slot,
		    bool persist, kh_error *err);
/* Forget uid's session for issuer (NULL = all) and close those connections. */
void kh_rsession_forget(struct kh_relayd *rd, uid_t uid, const char *issuer,
			const char *why, unsigned *nsessions, unsigned *nconns);
/* An SSL for a new upstream connection of cluster cl, or NULL + err. */
SSL *kh_rsession_new_ssl(struct kh_rsession *s, const struct kh_rcluster *cl, kh_error *err);
/* Every session, for a listing (control.sock) or of one uid (user.sock). */
int kh_rsession_list(struct kh_relayd *rd, bool all, uid_t uid,
		     struct kh_relay_listing **out, size_t *n);
void kh_rsession_free_all(struct kh_relayd *rd);
/* Sessions from the keyring store, after a restart. */
void kh_rsession_restore(struct kh_relayd *rd);
/* Forget uid's sessions delivered at or before when_ns (a forget note). */
unsigned kh_rsession_forget_before(struct kh_relayd *rd, uid_t uid, int64_t when_ns,
				   const char *why);

#endif
