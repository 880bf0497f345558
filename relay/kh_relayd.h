/*
 * kh_relayd — kubehsm-relayd's shared types.
 *
 * One process, one libevent loop, no threads.  The daemon binds as root
 * (a privileged loopback port per cluster, the control and user sockets,
 * the netlink socket that names a peer's uid, its keyring store), then
 * becomes its system user for good.  For each accepted connection it asks
 * the kernel which uid owns the peer socket, and relays the bytes of that
 * connection unchanged over mTLS to the cluster's API server with that
 * uid's session certificate and key, which only the relay holds.
 *
 *   kh_relayd      — the daemon's state, start-up and main loop (kubehsm-relayd.c)
 *   kh_rlog        — logging: syslog, or stderr in the foreground
 *   kh_rpriv       — privileged-port policy check, the privilege drop
 *   kh_rlisten     — binding the loopback listeners and Unix sockets
 *   kh_rpeer       — NETLINK_SOCK_DIAG: the uid owning the peer socket
 *   kh_rstore      — session storage in the relay's persistent keyring
 *   kh_rsession    — users, sessions, their TLS contexts and expiry
 *   kh_rconn       — a client connection and its upstream mTLS connection
 *   kh_rdeny       — the only HTTP the relay speaks: 401 / 503 Status replies
 *   kh_rctl        — control.sock and user.sock
 */
#ifndef KH_RELAYD_H
#define KH_RELAYD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include <event2/event.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "lib/kh_error.h"
#include "conf/kh_policy.h"
#include "lib/kh_relay_proto.h"

struct kh_rconn;
struct kh_rsession;
struct kh_rstore;

/* Per direction, bytes buffered before the relay stops reading the other side. */
#define KH_RELAY_BUF_HIGH (256 * 1024)
/* Seconds after a burst of bytes before a connection's buffers are compacted. */
#define KH_RELAY_COMPACT_SEC 1
/* Largest request head read from a peer that gets a 401. */
#define KH_RELAY_HEAD_MAX (16 * 1024)
/* After a 401 or 503: how long a peer may keep sending before it is cut off. */
#define KH_RELAY_LINGER_SEC 2
/* Control connections open at once, and the time each gets. */
#define KH_RELAY_CTL_MAX 64
#define KH_RELAY_CTL_TIMEOUT_SEC 5
/* Room for an issuer id (at most 32 characters) and its NUL. */
#define KH_RELAY_ISSUER_BUF 40

/* One configured cluster at run time. */
struct kh_rcluster {
	struct kh_relayd *rd;
	const struct kh_relay_cluster *conf;   /* points into the policy */
	size_t index;                          /* in kh_relayd.clusters */
	const char *issuer_id;                 /* the issuer's id ("" = default) */
	X509_STORE *store;                     /* ca_file, loaded as root */
	struct evconnlistener *listeners[2];   /* 127.0.0.1, [::1] */
	int fds[2];
	size_t nfds;
	/* The API server's address when it is an IP literal; else DNS per connection. */
	struct sockaddr_storage addr;
	socklen_t addrlen;
};

TAILQ_HEAD(kh_rconn_list, kh_rconn);

/* Everything the relay knows about one uid. */
struct kh_ruser {
	uid_t uid;
	unsigned nconns;
	struct kh_rconn_list conns;
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
	int64_t expires;
	int64_t delivered;              /* when the relay took it (unix seconds) */
	X509 *leaf;
	STACK_OF(X509) *chain;          /* the certificates after the leaf */
	EVP_PKEY *key;
	int slot;                       /* kh_rstore slot, -1 = none */
	struct kh_rtls *tls;            /* [rd->nclusters], contexts made on first use */
	struct event *expiry;
	struct kh_rsession *next;
};

struct kh_relayd_opts {
	const char *config;
	bool foreground;
	bool debug;
};

struct kh_relayd {
	struct kh_relayd_opts opts;
	struct kh_policy *policy;
	struct event_base *base;
	struct evdns_base *dns;
	struct kh_rcluster *clusters;
	size_t nclusters;
	int netlink_fd;
	int ctl_fd, user_fd;                  /* listening SOCK_SEQPACKET sockets */
	struct evconnlistener *ctl_listener, *user_listener;
	unsigned nctl;                        /* control connections open */
	struct kh_rstore *store;
	struct kh_ruser **users;              /* hash by uid */
	size_t nbuckets;
	unsigned nconns;                      /* client connections open */
	unsigned nsessions;
	uid_t run_uid;
	gid_t run_gid;
	struct event *sig_term, *sig_int, *sig_hup, *refresh, *trim;
	bool trim_due;                        /* connections gave buffers back */
	int notify_fd;                        /* systemd NOTIFY_SOCKET, or -1 */
	int ready_fd;                         /* daemon mode: tell the parent, or -1 */
	bool stopping;
};

/* ---- kh_rsession.c ---- */
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

/* A forget that came while the relay was not running (kh_relay_client). */
struct kh_rpending {
	uid_t uid;
	time_t when;
	char reason[16];
};
/* As root, before the drop: take (and remove) the pending forgets. */
int kh_rpending_take(struct kh_rpending **out, size_t *n, kh_error *err);
/* After the restore: forget what those name, if taken before them. */
void kh_rsession_apply_pending(struct kh_relayd *rd, const struct kh_rpending *p, size_t n);

/* ---- kh_rconn.c ---- */
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

/* ---- kh_rctl.c ---- */
int kh_rctl_start(struct kh_relayd *rd, kh_error *err);

/* ---- kh_rlisten.c ---- */
int kh_rlisten_bind_clusters(struct kh_relayd *rd, kh_error *err);
int kh_rlisten_bind_sockets(struct kh_relayd *rd, kh_error *err);
int kh_rlisten_start(struct kh_relayd *rd, kh_error *err);

#endif
