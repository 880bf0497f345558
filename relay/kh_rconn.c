/*
 * kh_rconn — one kube client connection and its mTLS connection upstream.
 *
 *   accept ─ uid from the kernel, per-uid and total limits
 *     │
 *   WAIT ─ first bytes ─┬─ no live session for (uid, cluster's issuer) ─ DENY (401)
 *     │                 └─ upstream TCP + TLS with the uid's certificate ─ CONNECTING
 *   CONNECTING ─ handshake done ─ RELAY;  fails before any answer ─ DENY (503)
 *   RELAY ─ bytes both ways, unchanged, until either side closes
 *   DENY ─ end of the request head ─ response, half-close ─ LINGER ─ close
 *
 * Bytes are never parsed while relaying: requests, chunked watch streams
 * and Upgrade streams (exec, attach, port-forward, SPDY or WebSocket) are
 * all the same to the relay.  Each direction buffers at most
 * KH_RELAY_BUF_HIGH bytes before it stops reading the other side, so a
 * slow or stalled peer costs bounded memory.  One timer per connection
 * enforces the handshake deadline, then the idle timeout.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "relay/kh_rdeny.h"
#include "relay/kh_relayd.h"
#include "relay/kh_rlog.h"
#include "relay/kh_rpeer.h"

enum kh_rconn_state {
	KH_RC_WAIT,        /* accepted; waiting for the first bytes */
	KH_RC_CONNECTING,  /* upstream TCP + TLS under way; the client's bytes held */
	KH_RC_RELAY,       /* bytes flow both ways */
	KH_RC_DENY,        /* reading up to the end of the request head */
	KH_RC_LINGER,      /* answered; draining the peer before closing */
};

struct kh_rconn {
	struct kh_relayd *rd;
	struct kh_rcluster *cl;
	struct kh_ruser *user;
	TAILQ_ENTRY(kh_rconn) by_user;
	enum kh_rconn_state state;
	struct bufferevent *down;   /* the kube client: plain TCP on loopback */
	struct bufferevent *up;     /* the API server: TLS */
	struct event *timer;
	time_t deadline;            /* WAIT, CONNECTING, DENY, LINGER (monotonic s) */
	time_t last_io;             /* RELAY: last byte moved either way */
	bool answered;              /* the API server sent the client a byte */
	bool busy;                  /* RELAY: bytes moved since the last compaction */
	bool closing;               /* one side ended: flush the other, then close */
	int deny_code;
	char *deny_msg;
};

static struct kh_rlog_limit kh_rconn_limit_total, kh_rconn_limit_user, kh_rconn_limit_peer;

static time_t
kh_mono(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

static void
kh_rconn_arm(struct kh_rconn *c, time_t secs)
{
	struct timeval tv = { .tv_sec = secs > 0 ? secs : 0 };

	(void)evtimer_add(c->timer, &tv);
}

static bool
kh_rconn_uses_issuer(const struct kh_rconn *c, const char *issuer)
{
	return issuer == NULL || strcmp(c->cl->issuer_id, issuer) == 0;
}

static void
kh_rconn_close(struct kh_rconn *c)
{
	struct kh_relayd *rd = c->rd;
	struct kh_ruser *u = c->user;

	if (c->up != NULL) {
		SSL *ssl = bufferevent_openssl_get_ssl(c->up);

		/* A close_notify if it can go now; never wait for it. */
		if (ssl != NULL && c->state == KH_RC_RELAY)
			(void)SSL_shutdown(ssl);
		ERR_clear_error();
		bufferevent_free(c->up);
	}
	if (c->down != NULL)
		bufferevent_free(c->down);
	if (c->timer != NULL)
		event_free(c->timer);
	free(c->deny_msg);
	TAILQ_REMOVE(&u->conns, c, by_user);
	u->nconns--;
	rd->nconns--;
	free(c);
	kh_ruser_maybe_free(rd, u);
}

unsigned
kh_rconn_close_user(struct kh_ruser *u, const char *issuer)
{
	struct kh_rconn *c, *next;
	unsigned n = 0;

	/* u is not touched after a close that may have freed it: next is
	 * read first, and is NULL when that close took u's last connection. */
	for (c = TAILQ_FIRST(&u->conns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, by_user);
		if (kh_rconn_uses_issuer(c, issuer)) {
			n++;
			kh_rconn_close(c);
		}
	}
	return n;
}

unsigned
kh_rconn_count_user(const struct kh_ruser *u, const char *issuer)
{
	const struct kh_rconn *c;
	unsigned n = 0;

	TAILQ_FOREACH(c, &u->conns, by_user) {
		if (kh_rconn_uses_issuer(c, issuer))
			n++;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* denying: a 401 or 503 Status, then a lingering close                 */

static void kh_rconn_deny_read(struct bufferevent *bev, void *arg);
static void kh_rconn_deny_write(struct bufferevent *bev, void *arg);
static void kh_rconn_down_event(struct bufferevent *bev, short what, void *arg);

static void
kh_rconn_deny_answer(struct kh_rconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->down);

	(void)evbuffer_drain(in, evbuffer_get_length(in));
	if (kh_rdeny_response(bufferevent_get_output(c->down), c->deny_code, c->deny_msg) != 0) {
		kh_rconn_close(c);
		return;
	}
	c->state = KH_RC_LINGER;
	c->deadline = kh_mono() + KH_RELAY_LINGER_SEC;
	kh_rconn_arm(c, KH_RELAY_LINGER_SEC);
	/* Fires once the answer is written out: then half-close. */
	bufferevent_setwatermark(c->down, EV_WRITE, 0, 0);
	bufferevent_setcb(c->down, kh_rconn_deny_read, kh_rconn_deny_write, kh_rconn_down_event, c);
	bufferevent_enable(c->down, EV_READ | EV_WRITE);
}

static void
kh_rconn_deny(struct kh_rconn *c, int code, const char *msg)
{
	/* Relaying, the request already went upstream: answer at once. */
	bool forwarded = c->state == KH_RC_RELAY;

	if (c->up != NULL) {
		bufferevent_free(c->up);
		c->up = NULL;
	}
	free(c->deny_msg);
	c->deny_msg = strdup(msg);
	c->deny_code = code;
	if (c->deny_msg == NULL) {
		kh_rconn_close(c);
		return;
	}
	c->state = KH_RC_DENY;
	/* However it got here, the answer goes out within the handshake time. */
	kh_rconn_arm(c, c->rd->policy->relay.handshake_timeout);
	bufferevent_setcb(c->down, kh_rconn_deny_read, NULL, kh_rconn_down_event, c);
	bufferevent_setwatermark(c->down, EV_READ, 0, KH_RELAY_HEAD_MAX);
	bufferevent_enable(c->down, EV_READ);
	if (forwarded) {
		kh_rconn_deny_answer(c);
		return;
	}
	/* The head may be here already (held while connecting). */
	kh_rconn_deny_read(c->down, c);
}

static void
kh_rconn_deny_read(struct bufferevent *bev, void *arg)
{
	struct kh_rconn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr end;

	if (c->state == KH_RC_LINGER) {
		(void)evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (end.pos >= 0 || evbuffer_get_length(in) >= KH_RELAY_HEAD_MAX)
		kh_rconn_deny_answer(c);
}

static void
kh_rconn_deny_write(struct bufferevent *bev, void *arg)
{
	(void)arg;
	/* Answer sent: no more from us; the peer may still send (drained). */
	(void)shutdown(bufferevent_getfd(bev), SHUT_WR);
}

/* ------------------------------------------------------------------ */
/* relaying                                                             */

/*
 * An idle connection (a watch with nothing to say, a request the API server
 * is still working on) should cost its sockets and its TLS state, not
 * buffers: libevent leaves an empty chain of a whole read's size reserved
 * in the upstream input after each read that found nothing, and OpenSSL
 * keeps its 16 KiB record buffer from that read (SSL_MODE_RELEASE_BUFFERS
 * frees it only after a record).  Both go when nothing is waiting in them;
 * the next read makes them again.
 */
static void
kh_rconn_compact(struct kh_rconn *c)
{
	struct bufferevent *bevs[2] = { c->down, c->up };
	size_t i;

	for (i = 0; i < 2; i++) {
		struct evbuffer *in = bevs[i] != NULL ? bufferevent_get_input(bevs[i]) : NULL;

		if (in != NULL && evbuffer_get_length(in) == 0)
			(void)evbuffer_drain(in, 0);    /* frees empty chains */
	}
	if (c->up != NULL && bufferevent_openssl_get_ssl(c->up) != NULL)
		(void)SSL_free_buffers(bufferevent_openssl_get_ssl(c->up));   /* 0 if in use */
	c->rd->trim_due = true;
}

/* Move large streams in large steps (libevent's default is 16 KiB a call). */
static void
kh_rconn_big_io(struct bufferevent *bev)
{
	(void)bufferevent_set_max_single_read(bev, KH_RELAY_BUF_HIGH / 2);
	(void)bufferevent_set_max_single_write(bev, KH_RELAY_BUF_HIGH / 2);
}

/* Move what `from` read to `to`; stop reading `from` while `to` is full. */
static void
kh_rconn_pump(struct kh_rconn *c, struct bufferevent *from, struct bufferevent *to)
{
	struct evbuffer *out = bufferevent_get_output(to);

	if (evbuffer_add_buffer(out, bufferevent_get_input(from)) != 0) {
		kh_rconn_close(c);
		return;
	}
	c->last_io = kh_mono();
	if (!c->busy) {
		/* Compact this connection's buffers once the burst is over. */
		c->busy = true;
		kh_rconn_arm(c, KH_RELAY_COMPACT_SEC);
	}
	if (evbuffer_get_length(out) >= KH_RELAY_BUF_HIGH) {
		bufferevent_disable(from, EV_READ);
		bufferevent_setwatermark(to, EV_WRITE, KH_RELAY_BUF_HIGH / 2, 0);
	}
}

/* `to` drained below the mark: read `from` again (or finish closing). */
static void
kh_rconn_drained(struct kh_rconn *c, struct bufferevent *to, struct bufferevent *from)
{
	if (c->closing) {
		if (evbuffer_get_length(bufferevent_get_output(to)) == 0)
			kh_rconn_close(c);
		return;
	}
	bufferevent_setwatermark(to, EV_WRITE, 0, 0);
	if (from != NULL)
		bufferevent_enable(from, EV_READ);
}

static void
kh_rconn_down_read(struct bufferevent *bev, void *arg);

static void
kh_rconn_up_read(struct bufferevent *bev, void *arg)
{
	struct kh_rconn *c = arg;

	c->answered = true;
	kh_rconn_pump(c, bev, c->down);
}

static void
kh_rconn_down_write(struct bufferevent *bev, void *arg)
{
	struct kh_rconn *c = arg;

	kh_rconn_drained(c, bev, c->up);
}

static void
kh_rconn_up_write(struct bufferevent *bev, void *arg)
{
	struct kh_rconn *c = arg;

	kh_rconn_drained(c, bev, c->down);
}

/* One side ended: flush what is queued for the other, then close. */
static void
kh_rconn_finish(struct kh_rconn *c, struct bufferevent *gone)
{
	struct bufferevent *other = gone == c->down ? c->up : c->down;

	if (other == NULL || evbuffer_get_length(bufferevent_get_output(other)) == 0) {
		kh_rconn_close(c);
		return;
	}
	c->closing = true;
	bufferevent_disable(gone, EV_READ);
	bufferevent_setwatermark(other, EV_WRITE, 0, 0);
	bufferevent_enable(other, EV_WRITE);
}

/* Why the upstream connection failed, in one line for the 503 and the log. */
static void
kh_rconn_up_error(struct kh_rconn *c, short what, char *buf, size_t n)
{
	unsigned long e = bufferevent_get_openssl_error(c->up);
	int dns = bufferevent_socket_get_dns_error(c->up);
	int sockerr = EVUTIL_SOCKET_ERROR();
	char ssl[256];

	if (dns != 0) {
		(void)snprintf(buf, n, "cannot resolve %s: %s", c->cl->conf->server_host,
			       evutil_gai_strerror(dns));
	} else if (e != 0) {
		SSL *s = bufferevent_openssl_get_ssl(c->up);
		long vr = s != NULL ? SSL_get_verify_result(s) : X509_V_OK;

		ERR_error_string_n(e, ssl, sizeof(ssl));
		/* Say why the API server's certificate was refused, not just that it was. */
		(void)snprintf(buf, n, "TLS with %s failed: %s%s%s%s", c->cl->conf->server, ssl,
			       vr != X509_V_OK ? " (" : "",
			       vr != X509_V_OK ? X509_verify_cert_error_string(vr) : "",
			       vr != X509_V_OK ? ")" : "");
	} else if (what & BEV_EVENT_EOF) {
		(void)snprintf(buf, n, "%s closed the connection", c->cl->conf->server);
	} else {
		(void)snprintf(buf, n, "cannot connect to %s: %s", c->cl->conf->server,
			       sockerr != 0 ? evutil_socket_error_to_string(sockerr) :
			       "connection failed");
	}
	while (bufferevent_get_openssl_error(c->up) != 0)
		;
	ERR_clear_error();
}

static void
kh_rconn_up_connected(struct kh_rconn *c)
{
	SSL *ssl = bufferevent_openssl_get_ssl(c->up);
	const unsigned char *alpn = NULL;
	unsigned int alpn_len = 0;
	int one = 1;

	/* Offered only http/1.1: anything else would not be relayable. */
	SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
	if (alpn_len != 0 && (alpn_len != 8 || memcmp(alpn, "http/1.1", 8) != 0)) {
		kh_rconn_deny(c, 503, "kubehsm-relayd: the API server chose a protocol "
			      "other than http/1.1");
		return;
	}
	(void)setsockopt(bufferevent_getfd(c->up), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->state = KH_RC_RELAY;
	c->last_io = kh_mono();
	c->busy = true;         /* the handshake's buffers: compacted in a moment */
	kh_rconn_arm(c, KH_RELAY_COMPACT_SEC);
	bufferevent_setcb(c->down, kh_rconn_down_read, kh_rconn_down_write, kh_rconn_down_event, c);
	bufferevent_setwatermark(c->down, EV_READ, 0, 0);
	bufferevent_enable(c->up, EV_READ | EV_WRITE);
	bufferevent_enable(c->down, EV_READ | EV_WRITE);
	kh_rconn_pump(c, c->down, c->up);
	kh_rlog(LOG_DEBUG, "uid %u: connected to %s (%s)", (unsigned)c->user->uid,
		c->cl->conf->server, SSL_session_reused(ssl) ? "resumed" : "full handshake");
}

static void
kh_rconn_up_event(struct bufferevent *bev, short what, void *arg)
{
	struct kh_rconn *c = arg;
	char why[512], msg[768];

	if (what & BEV_EVENT_CONNECTED) {
		kh_rconn_up_connected(c);
		return;
	}
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if (c->state == KH_RC_CONNECTING || !c->answered) {
		/* Nothing of an answer went out yet: say why, in the client's terms. */
		kh_rconn_up_error(c, what, why, sizeof(why));
		kh_rlog(LOG_WARNING, "uid %u: cluster %s: %s", (unsigned)c->user->uid,
			c->cl->conf->name, why);
		(void)snprintf(msg, sizeof(msg), "kubehsm-relayd: cluster %s: %s",
			       c->cl->conf->name, why);
		kh_rconn_deny(c, 503, msg);
		return;
	}
	kh_rconn_finish(c, bev);
}

static void
kh_rconn_down_event(struct bufferevent *bev, short what, void *arg)
{
	struct kh_rconn *c = arg;

	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if (c->state == KH_RC_RELAY && !(what & BEV_EVENT_ERROR)) {
		kh_rconn_finish(c, bev);
		return;
	}
	/* The client is gone: nothing to flush to it, nothing to answer. */
	kh_rconn_close(c);
}

/* ------------------------------------------------------------------ */
/* connecting upstream on the first bytes                               */

static int
kh_rconn_connect(struct kh_rconn *c, struct kh_rsession *s, kh_error *err)
{
	const struct kh_rcluster *cl = c->cl;
	SSL *ssl = kh_rsession_new_ssl(s, cl, err);
	evutil_socket_t fd = -1;
	int one = 1;

	if (ssl == NULL)
		return -1;
	if (cl->addrlen > 0) {
		fd = socket(cl->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			SSL_free(ssl);
			return kh_fail(err, KH_ERR_INTERNAL, "socket: %s", strerror(errno));
		}
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	c->up = bufferevent_openssl_socket_new(c->rd->base, fd, ssl, BUFFEREVENT_SSL_CONNECTING,
					       BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (c->up == NULL) {
		if (fd >= 0)
			(void)close(fd);
		SSL_free(ssl);
		return kh_fail(err, KH_ERR_INTERNAL, "cannot make the upstream connection");
	}
	/* API servers and proxies often skip close_notify. */
	bufferevent_openssl_set_allow_dirty_shutdown(c->up, 1);
	kh_rconn_big_io(c->up);
	bufferevent_setcb(c->up, kh_rconn_up_read, kh_rconn_up_write, kh_rconn_up_event, c);
	bufferevent_setwatermark(c->up, EV_READ, 0, KH_RELAY_BUF_HIGH);
	c->state = KH_RC_CONNECTING;
	if (cl->addrlen > 0) {
		if (bufferevent_socket_connect(c->up, (const struct sockaddr *)&cl->addr,
					       (int)cl->addrlen) != 0)
			return kh_fail(err, KH_ERR_INTERNAL, "cannot connect to %s: %s",
				       cl->conf->server, strerror(errno));
	} else if (bufferevent_socket_connect_hostname(c->up, c->rd->dns, AF_UNSPEC,
						       cl->conf->server_host,
						       cl->conf->server_port) != 0) {
		return kh_fail(err, KH_ERR_INTERNAL, "cannot resolve %s", cl->conf->server_host);
	}
	return 0;
}

static void
kh_rconn_down_read(struct bufferevent *bev, void *arg)
{
	struct kh_rconn *c = arg;
	struct kh_rsession *s;
	char msg[KH_ERROR_MAX + 128];
	kh_error err = { 0 };

	switch (c->state) {
	case KH_RC_RELAY:
		kh_rconn_pump(c, bev, c->up);
		return;
	case KH_RC_CONNECTING:
		return;         /* held until the handshake is done */
	case KH_RC_WAIT:
		break;
	default:
		return;
	}
	/* The session is looked up now, with the request at hand: the freshest. */
	s = kh_rsession_find(c->rd, c->user->uid, c->cl->issuer_id);
	if (s == NULL) {
		kh_rdeny_no_session(msg, sizeof(msg), c->user->uid, c->cl->conf->name,
				    c->user->ended_why, c->user->ended_at);
		kh_rlog(LOG_DEBUG, "uid %u: no session for cluster %s: 401",
			(unsigned)c->user->uid, c->cl->conf->name);
		kh_rconn_deny(c, 401, msg);
		return;
	}
	if (kh_rconn_connect(c, s, &err) != 0) {
		kh_rlog(LOG_WARNING, "uid %u: cluster %s: %s", (unsigned)c->user->uid,
			c->cl->conf->name, err.msg);
		(void)snprintf(msg, sizeof(msg), "kubehsm-relayd: cluster %s: %s",
			       c->cl->conf->name, err.msg);
		kh_rconn_deny(c, 503, msg);
	}
}

/* ------------------------------------------------------------------ */
/* timers and accepting                                                 */

static void
kh_rconn_timer(evutil_socket_t fd, short what, void *arg)
{
	struct kh_rconn *c = arg;
	time_t now = kh_mono(), idle = c->rd->policy->relay.idle_timeout;
	char msg[256];

	(void)fd;
	(void)what;
	switch (c->state) {
	case KH_RC_RELAY:
		if (c->busy) {
			c->busy = false;
			kh_rconn_compact(c);
		}
		if (now - c->last_io < idle) {
			kh_rconn_arm(c, idle - (now - c->last_io));
			return;
		}
		kh_rlog(LOG_DEBUG, "uid %u: idle for %lds: closing", (unsigned)c->user->uid,
			(long)idle);
		break;
	case KH_RC_CONNECTING:
		(void)snprintf(msg, sizeof(msg), "kubehsm-relayd: cluster %s: %s did not "
			       "complete the TLS handshake within %lds", c->cl->conf->name,
			       c->cl->conf->server, c->rd->policy->relay.handshake_timeout);
		kh_rlog(LOG_WARNING, "%s", msg + strlen("kubehsm-relayd: "));
		kh_rconn_deny(c, 503, msg);
		return;
	default:
		break;
	}
	kh_rconn_close(c);
}

void
kh_rconn_accept(struct kh_relayd *rd, struct kh_rcluster *cl, int fd,
		const struct sockaddr *peer, socklen_t peerlen)
{
	struct sockaddr_storage local;
	socklen_t llen = sizeof(local);
	struct kh_ruser *u;
	struct kh_rconn *c;
	kh_error err = { 0 };
	uid_t uid;
	int one = 1;

	(void)peerlen;
	if (rd->nconns >= (unsigned long)rd->policy->relay.max_connections) {
		kh_rlog_limited(&kh_rconn_limit_total, LOG_WARNING, "relay.max_connections "
				"(%ld) reached: refusing connections",
				rd->policy->relay.max_connections);
		goto refuse;
	}
	if (getsockname(fd, (struct sockaddr *)&local, &llen) != 0 ||
	    kh_rpeer_uid(rd->netlink_fd, (struct sockaddr *)&local, peer, &uid, &err) != 0) {
		kh_rlog_limited(&kh_rconn_limit_peer, LOG_NOTICE, "cluster %s: cannot tell who "
				"connected (%s): refused", cl->conf->name,
				err.msg[0] != '\0' ? err.msg : strerror(errno));
		goto refuse;
	}
	u = kh_ruser_get(rd, uid, true);
	if (u == NULL)
		goto refuse;
	if (u->nconns >= (unsigned long)rd->policy->relay.max_connections_per_user) {
		kh_rlog_limited(&kh_rconn_limit_user, LOG_NOTICE, "uid %u holds "
				"relay.max_connections_per_user (%ld) connections: refusing more",
				(unsigned)uid, rd->policy->relay.max_connections_per_user);
		kh_ruser_maybe_free(rd, u);
		goto refuse;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		kh_ruser_maybe_free(rd, u);
		goto refuse;
	}
	c->rd = rd;
	c->cl = cl;
	c->user = u;
	c->state = KH_RC_WAIT;
	TAILQ_INSERT_TAIL(&u->conns, c, by_user);
	u->nconns++;
	rd->nconns++;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->down = bufferevent_socket_new(rd->base, fd, BEV_OPT_CLOSE_ON_FREE |
					 BEV_OPT_DEFER_CALLBACKS);
	c->timer = evtimer_new(rd->base, kh_rconn_timer, c);
	if (c->down == NULL || c->timer == NULL) {
		if (c->down == NULL)
			(void)close(fd);
		kh_rconn_close(c);
		return;
	}
	bufferevent_setcb(c->down, kh_rconn_down_read, NULL, kh_rconn_down_event, c);
	kh_rconn_big_io(c->down);
	/* Held bytes while connecting upstream are bounded too. */
	bufferevent_setwatermark(c->down, EV_READ, 0, KH_RELAY_BUF_HIGH);
	bufferevent_enable(c->down, EV_READ);
	kh_rconn_arm(c, rd->policy->relay.handshake_timeout);
	return;
refuse:
	(void)close(fd);
}
