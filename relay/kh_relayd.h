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
 * Each module's header says what it does; lowest layer first (a module
 * includes only headers above it in this list):
 *   kh_relayd      — the daemon's state (this header); start-up and main
 *                    loop in kubehsm-relayd.c
 *   kh_rlog        — logging: syslog, or stderr in the foreground
 *   kh_rhttp, kh_rdeny, kh_raudit, kh_rbuf, kh_rctlpool
 *                  — the pure parts (relay/libkh-relay.la, unit-tested):
 *                    HTTP heads, the answers the relay makes itself, audit
 *                    lines, I/O buffers, control-socket admission
 *   kh_rpriv       — privileged-port policy check, the privilege drop
 *   kh_rpeer       — NETLINK_SOCK_DIAG: the uid owning the peer socket
 *   kh_rstore      — session storage in the relay's persistent keyring
 *   kh_rsession    — users, sessions, their TLS contexts and expiry
 *   kh_rup         — upstream mTLS connections and their per-uid pools
 *   kh_rconn       — a client connection: requests, responses, tunnels
 *   kh_rpending    — forgets root could not deliver, applied from its notes
 *   kh_rctl        — control.sock and user.sock
 *   kh_rlisten     — binding the loopback listeners and Unix sockets
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

struct kh_rstore;
struct kh_rctlpool;

/* After a 400, 401 or 503: how long a peer may keep sending before it is cut off. */
#define KH_RELAY_LINGER_SEC 2
/* Room for an issuer id (at most 32 characters) and its NUL. */
#define KH_RELAY_ISSUER_BUF 40
/* Idle upstream connections kept per uid and cluster. */
#define KH_RELAY_POOL_MAX 8

struct kh_ruser;
struct kh_raudit;

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
	struct kh_rctlpool *ctlpool;          /* admission to both (kh_rctlpool) */
	int pending_fd;                       /* root's forget notes (opened as root) */
	struct event *pending_scan;
	struct kh_rstore *store;
	struct kh_ruser **users;              /* hash by uid */
	size_t nbuckets;
	unsigned nconns;                      /* client connections open */
	unsigned nsessions;
	uid_t run_uid;
	gid_t run_gid;
	struct event *sig_term, *sig_int, *sig_hup, *refresh, *trim;
	bool trim_due;                        /* connections gave buffers back */
	struct kh_raudit *audit;
	/* The program finder (kh_rprog): -1 when there is none (no audit
	 * log, or it died); connections waiting for its answer, in order. */
	int prog_fd;
	pid_t prog_pid;
	struct event *prog_ev;
	uint64_t prog_tag;
	TAILQ_HEAD(kh_rconn_progq, kh_rconn) prog_wait;
	/* Audit lines waiting for the finder's answer (kh_rconn.c). */
	TAILQ_HEAD(kh_rdeferq, kh_rdefer) audit_wait;
	unsigned naudit_wait;
	/*
	 * A session of u ends (forget, expiry): close u's client connections
	 * and upstream connections to clusters of issuer (NULL = all); the
	 * count of client connections closed.  Set by the daemon, so that
	 * kh_rsession need not know about connections.
	 */
	unsigned (*close_user)(struct kh_relayd *rd, struct kh_ruser *u, const char *issuer);
	/* u's client connections to clusters of issuer, for listings. */
	unsigned (*count_user)(const struct kh_ruser *u, const char *issuer);
	int notify_fd;                        /* systemd NOTIFY_SOCKET, or -1 */
	int ready_fd;                         /* daemon mode: tell the parent, or -1 */
	bool stopping;
};

#endif
