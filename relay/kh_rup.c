/*
 * kh_rup — upstream connections: connect, handshake, pool, close.
 *
 *   get ─ pool has an idle one of this session ─ BUSY (ready at once)
 *     └─ RESOLVING (host names) ─ CONNECTING ─ HANDSHAKE ─ BUSY (ops->ready)
 *   BUSY ─ release(reusable) ─ IDLE in the pool ─ get ─ BUSY
 *   IDLE ─ server closes, sends anything, the bound passes, session ends ─ closed
 *
 * Plain non-blocking sockets and an SSL object on the raw descriptor, with
 * events of our own on the loop: the client connection that uses one reads
 * and writes it directly, so no byte is copied between buffers twice.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "relay/kh_rlog.h"
#include "relay/kh_rup.h"

static void kh_rup_on_read(evutil_socket_t fd, short what, void *arg);
static void kh_rup_on_write(evutil_socket_t fd, short what, void *arg);
static void kh_rup_on_timer(evutil_socket_t fd, short what, void *arg);

static struct kh_rpool *
kh_rpool_of(struct kh_ruser *u, const struct kh_rcluster *cl)
{
	struct kh_relayd *rd = cl->rd;
	size_t i;

	if (u->pools == NULL) {
		u->pools = calloc(rd->nclusters, sizeof(*u->pools));
		if (u->pools == NULL)
			return NULL;
		for (i = 0; i < rd->nclusters; i++)
			TAILQ_INIT(&u->pools[i].idle);
	}
	return &u->pools[cl->index];
}

static void
kh_rup_free(struct kh_rup *up)
{
	struct kh_ruser *u = up->user;
	struct kh_relayd *rd = up->rd;

	if (up->ev_read != NULL)
		event_free(up->ev_read);
	if (up->ev_write != NULL)
		event_free(up->ev_write);
	if (up->timer != NULL)
		event_free(up->timer);
	if (up->ssl != NULL)
		SSL_free(up->ssl);
	if (up->fd >= 0)
		(void)close(up->fd);
	ERR_clear_error();
	free(up);
	u->nups--;
	kh_ruser_maybe_free(rd, u);
}

/* Out of its pool's books (idle list or busy count). */
static void
kh_rup_unbook(struct kh_rup *up)
{
	if (up->state == KH_UP_IDLE) {
		TAILQ_REMOVE(&up->pool->idle, up, link);
		up->pool->nidle--;
	} else {
		up->pool->nbusy--;
	}
}

void
kh_rup_close(struct kh_rup *up)
{
	kh_rup_unbook(up);
	if (up->dns != NULL) {
		/* The resolver calls back once more (cancelled): it frees up then. */
		up->dead = true;
		evdns_getaddrinfo_cancel(up->dns);
		return;
	}
	/* A close_notify when it can go out now; never waited for. */
	if (up->ssl != NULL && (up->state == KH_UP_BUSY || up->state == KH_UP_IDLE))
		(void)SSL_shutdown(up->ssl);
	kh_rup_free(up);
}

/* Why a connection failed, in one line for the 503 and the log. */
static void
kh_rup_why(struct kh_rup *up, const char *what, int sockerr, char *buf, size_t n)
{
	unsigned long e = ERR_peek_last_error();
	const char *server = up->cl->conf->server;
	char ssl[256];

	if (e != 0) {
		long vr = up->ssl != NULL ? SSL_get_verify_result(up->ssl) : X509_V_OK;

		ERR_error_string_n(e, ssl, sizeof(ssl));
		/* Say why the API server's certificate was refused, not just that it was. */
		(void)snprintf(buf, n, "TLS with %s failed: %s%s%s%s", server, ssl,
			       vr != X509_V_OK ? " (" : "",
			       vr != X509_V_OK ? X509_verify_cert_error_string(vr) : "",
			       vr != X509_V_OK ? ")" : "");
	} else if (sockerr != 0) {
		(void)snprintf(buf, n, "cannot connect to %s: %s", server, strerror(sockerr));
	} else {
		(void)snprintf(buf, n, "%s: %s", server, what);
	}
	ERR_clear_error();
}

static void
kh_rup_fail(struct kh_rup *up, const char *what, int sockerr)
{
	const struct kh_rup_ops *ops = up->ops;
	void *arg = up->arg;
	char why[512];

	kh_rup_why(up, what, sockerr, why, sizeof(why));
	kh_rlog(LOG_WARNING, "uid %u: cluster %s: %s", (unsigned)up->user->uid,
		up->cl->conf->name, why);
	kh_rup_close(up);
	ops->failed(arg, why);
}

static void
kh_rup_reading(struct kh_rup *up, bool on)
{
	if (on == up->reading)
		return;
	if ((on ? event_add(up->ev_read, NULL) : event_del(up->ev_read)) == 0)
		up->reading = on;
}

void
kh_rup_read(struct kh_rup *up, bool on)
{
	kh_rup_reading(up, on);
}

void
kh_rup_want_write(struct kh_rup *up)
{
	(void)event_add(up->ev_write, NULL);
}

/* ------------------------------------------------------------------ */
/* handshake                                                            */

static void
kh_rup_handshake(struct kh_rup *up)
{
	const unsigned char *alpn = NULL;
	unsigned int alpn_len = 0;
	int r, e;

	ERR_clear_error();
	r = SSL_connect(up->ssl);
	if (r != 1) {
		e = SSL_get_error(up->ssl, r);
		if (e == SSL_ERROR_WANT_READ)
			return;                 /* ev_read is on */
		if (e == SSL_ERROR_WANT_WRITE) {
			kh_rup_want_write(up);
			return;
		}
		kh_rup_fail(up, e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN ?
			    "closed the connection during the TLS handshake" :
			    "the TLS handshake failed", e == SSL_ERROR_SYSCALL ? errno : 0);
		return;
	}
	/* Offered only http/1.1: anything else would not be relayable. */
	SSL_get0_alpn_selected(up->ssl, &alpn, &alpn_len);
	if (alpn_len != 0 && (alpn_len != 8 || memcmp(alpn, "http/1.1", 8) != 0)) {
		kh_rup_fail(up, "the API server chose a protocol other than http/1.1", 0);
		return;
	}
	(void)event_del(up->timer);
	up->state = KH_UP_BUSY;
	/* The handshake's record buffers go now, not at the first answer. */
	(void)SSL_free_buffers(up->ssl);
	up->rd->trim_due = true;
	kh_rlog(LOG_DEBUG, "uid %u: connected to %s (%s)", (unsigned)up->user->uid,
		up->cl->conf->server, SSL_session_reused(up->ssl) ? "resumed" : "full handshake");
	up->ops->ready(up->arg, up);
}

static void
kh_rup_connected(struct kh_rup *up)
{
	int soerr = 0, one = 1;
	socklen_t len = sizeof(soerr);

	if (getsockopt(up->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
		soerr = errno;
	if (soerr != 0) {
		kh_rup_fail(up, "connection failed", soerr);
		return;
	}
	(void)setsockopt(up->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (SSL_set_fd(up->ssl, up->fd) != 1) {
		kh_rup_fail(up, "SSL_set_fd failed", 0);
		return;
	}
	up->state = KH_UP_HANDSHAKE;
	kh_rup_reading(up, true);
	kh_rup_handshake(up);
}

static int
kh_rup_connect_to(struct kh_rup *up, const struct sockaddr *sa, socklen_t salen, int *sockerr)
{
	up->fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (up->fd < 0) {
		*sockerr = errno;
		return -1;
	}
	up->ev_read = event_new(up->rd->base, up->fd, EV_READ | EV_PERSIST, kh_rup_on_read, up);
	up->ev_write = event_new(up->rd->base, up->fd, EV_WRITE, kh_rup_on_write, up);
	if (up->ev_read == NULL || up->ev_write == NULL) {
		*sockerr = ENOMEM;
		return -1;
	}
	up->state = KH_UP_CONNECTING;
	if (connect(up->fd, sa, salen) != 0 && errno != EINPROGRESS) {
		*sockerr = errno;
		return -1;
	}
	kh_rup_want_write(up);
	return 0;
}

/* Connect to what DNS answered: 0, or -1 with why. */
static int
kh_rup_connect_answer(struct kh_rup *up, int result, struct evutil_addrinfo *res,
		      char *why, size_t n)
{
	int sockerr = 0, rc = 0;

	if (result != 0 || res == NULL) {
		(void)snprintf(why, n, "cannot resolve %s: %s", up->cl->conf->server_host,
			       evutil_gai_strerror(result));
		rc = -1;
	} else if (kh_rup_connect_to(up, res->ai_addr, (socklen_t)res->ai_addrlen,
				     &sockerr) != 0) {
		(void)snprintf(why, n, "cannot connect to %s: %s", up->cl->conf->server,
			       strerror(sockerr));
		rc = -1;
	}
	if (res != NULL)
		evutil_freeaddrinfo(res);
	return rc;
}

static void
kh_rup_resolved(int result, struct evutil_addrinfo *res, void *arg)
{
	struct kh_rup *up = arg;
	char why[300];

	up->dns = NULL;
	if (up->dead) {
		if (res != NULL)
			evutil_freeaddrinfo(res);
		kh_rup_free(up);
		return;
	}
	if (up->starting) {
		/* Answered before evdns_getaddrinfo returned: kh_rup_start goes on. */
		up->early = true;
		up->early_result = result;
		up->early_res = res;
		return;
	}
	if (kh_rup_connect_answer(up, result, res, why, sizeof(why)) != 0) {
		const struct kh_rup_ops *ops = up->ops;
		void *cb_arg = up->arg;

		kh_rlog(LOG_WARNING, "uid %u: cluster %s: %s", (unsigned)up->user->uid,
			up->cl->conf->name, why);
		kh_rup_close(up);
		ops->failed(cb_arg, why);
	}
}

/* Start a new connection; the callbacks take it from here. */
static int
kh_rup_start(struct kh_rup *up, kh_error *err)
{
	const struct kh_rcluster *cl = up->cl;
	struct evutil_addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP,
					 .ai_flags = EVUTIL_AI_ADDRCONFIG };
	struct evdns_getaddrinfo_request *req;
	struct timeval tv = { .tv_sec = up->rd->policy->relay.handshake_timeout };
	char port[16], why[300];
	int sockerr = 0;

	if (event_add(up->timer, &tv) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot arm a timer");
	if (cl->addrlen > 0) {
		if (kh_rup_connect_to(up, (const struct sockaddr *)&cl->addr, cl->addrlen,
				      &sockerr) != 0)
			return kh_fail(err, KH_ERR_INTERNAL, "cannot connect to %s: %s",
				       cl->conf->server, strerror(sockerr));
		return 0;
	}
	(void)snprintf(port, sizeof(port), "%d", cl->conf->server_port);
	up->state = KH_UP_RESOLVING;
	up->starting = true;
	req = evdns_getaddrinfo(up->rd->dns, cl->conf->server_host, port, &hints,
				kh_rup_resolved, up);
	up->starting = false;
	if (!up->early) {
		up->dns = req;
		return 0;
	}
	/* The hosts file (or a cache) answered at once: no callback to wait for. */
	if (kh_rup_connect_answer(up, up->early_result, up->early_res, why, sizeof(why)) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "%s", why);
	return 0;
}

/* ------------------------------------------------------------------ */
/* events                                                               */

/* In the pool: anything but a session ticket means the server is done with it. */
static void
kh_rup_idle_read(struct kh_rup *up)
{
	char b[64];
	size_t n = 0;
	int r;

	ERR_clear_error();
	r = SSL_read_ex(up->ssl, b, sizeof(b), &n);
	if (r != 1 && SSL_get_error(up->ssl, r) == SSL_ERROR_WANT_READ)
		return;
	kh_rlog(LOG_DEBUG, "uid %u: pooled connection to %s %s", (unsigned)up->user->uid,
		up->cl->conf->server, r == 1 ? "sent bytes unasked: closed" : "closed by the server");
	kh_rup_close(up);
}

static void
kh_rup_on_read(evutil_socket_t fd, short what, void *arg)
{
	struct kh_rup *up = arg;

	(void)fd;
	(void)what;
	switch (up->state) {
	case KH_UP_HANDSHAKE:
		kh_rup_handshake(up);
		break;
	case KH_UP_IDLE:
		kh_rup_idle_read(up);
		break;
	case KH_UP_BUSY:
		up->ops->readable(up->arg);
		break;
	default:
		break;
	}
}

static void
kh_rup_on_write(evutil_socket_t fd, short what, void *arg)
{
	struct kh_rup *up = arg;

	(void)fd;
	(void)what;
	switch (up->state) {
	case KH_UP_CONNECTING:
		kh_rup_connected(up);
		break;
	case KH_UP_HANDSHAKE:
		kh_rup_handshake(up);
		break;
	case KH_UP_BUSY:
		up->ops->writable(up->arg);
		break;
	default:
		break;
	}
}

static void
kh_rup_on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct kh_rup *up = arg;
	char msg[128];

	(void)fd;
	(void)what;
	if (up->state == KH_UP_IDLE) {
		kh_rup_close(up);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "did not complete the TLS handshake within %lds",
		       up->rd->policy->relay.handshake_timeout);
	kh_rup_fail(up, msg, 0);
}

/* ------------------------------------------------------------------ */
/* the pool                                                             */

struct kh_rup *
kh_rup_get(struct kh_ruser *u, struct kh_rcluster *cl, struct kh_rsession *s,
	   const struct kh_rup_ops *ops, void *arg, bool *ready, kh_error *err)
{
	struct kh_rpool *pool = kh_rpool_of(u, cl);
	struct kh_rup *up;

	*ready = false;
	if (pool == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory"), NULL;
	while ((up = TAILQ_FIRST(&pool->idle)) != NULL) {
		if (up->serial != s->serial) {
			/* Made with a session this uid has since replaced. */
			kh_rup_close(up);
			continue;
		}
		TAILQ_REMOVE(&pool->idle, up, link);
		pool->nidle--;
		pool->nbusy++;
		(void)event_del(up->timer);
		up->state = KH_UP_BUSY;
		up->ops = ops;
		up->arg = arg;
		up->reused = true;
		*ready = true;
		return up;
	}
	up = calloc(1, sizeof(*up));
	if (up == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory"), NULL;
	up->rd = cl->rd;
	up->user = u;
	up->cl = cl;
	up->pool = pool;
	up->serial = s->serial;
	up->fd = -1;
	up->ops = ops;
	up->arg = arg;
	up->state = KH_UP_CONNECTING;
	u->nups++;
	pool->nbusy++;
	up->timer = evtimer_new(cl->rd->base, kh_rup_on_timer, up);
	up->ssl = up->timer != NULL ? kh_rsession_new_ssl(s, cl, err) : NULL;
	if (up->timer == NULL || up->ssl == NULL || kh_rup_start(up, err) != 0) {
		if (up->timer == NULL)
			kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		kh_rup_close(up);
		return NULL;
	}
	return up;
}

void
kh_rup_release(struct kh_rup *up, bool reusable)
{
	struct kh_rpool *pool = up->pool;
	struct kh_rsession *s;
	struct timeval tv = { .tv_sec = up->rd->policy->relay.upstream_idle_timeout };

	s = kh_rsession_find(up->rd, up->user->uid, up->cl->issuer_id);
	if (!reusable || s == NULL || s->serial != up->serial || pool->nidle >= KH_RELAY_POOL_MAX ||
	    SSL_has_pending(up->ssl) || event_add(up->timer, &tv) != 0) {
		kh_rup_close(up);
		return;
	}
	pool->nbusy--;
	pool->nidle++;
	/* Most recently used first: the warmest connection is taken next. */
	TAILQ_INSERT_HEAD(&pool->idle, up, link);
	up->state = KH_UP_IDLE;
	up->ops = NULL;
	up->arg = NULL;
	(void)event_del(up->ev_write);
	kh_rup_reading(up, true);       /* to see the server close it */
	(void)SSL_free_buffers(up->ssl);
}

unsigned
kh_rpool_close_user(struct kh_relayd *rd, struct kh_ruser *u, const char *issuer)
{
	struct kh_rup *up;
	unsigned n = 0;
	size_t i;

	if (u->pools == NULL)
		return 0;
	/* Hold u: closing its last connection would free it (and its pools). */
	u->nups++;
	for (i = 0; i < rd->nclusters; i++) {
		if (issuer != NULL && strcmp(rd->clusters[i].issuer_id, issuer) != 0)
			continue;
		while ((up = TAILQ_FIRST(&u->pools[i].idle)) != NULL) {
			kh_rup_close(up);
			n++;
		}
	}
	u->nups--;
	kh_ruser_maybe_free(rd, u);
	return n;
}

void
kh_rpool_counts(const struct kh_ruser *u, size_t i, unsigned *idle, unsigned *busy)
{
	*idle = u->pools != NULL ? u->pools[i].nidle : 0;
	*busy = u->pools != NULL ? u->pools[i].nbusy : 0;
}
