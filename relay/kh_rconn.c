/*
 * kh_rconn — a client connection (see kh_rconn.h for its states).
 *
 * The data path is the point of this file: both sockets are plain
 * non-blocking descriptors with persistent read events; the upstream is
 * an SSL object on its raw descriptor with read-ahead, drained into one
 * block until it would block (or the block is full), then written to the
 * client with one write(2).  Write interest is armed only when a write
 * would block, and then the other side's reading stops until the block
 * drains.  No byte is copied but from the kernel into the block and out.
 *
 * Every function that may close the connection returns -1 when it did;
 * its caller then stops touching c.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "relay/kh_raudit.h"
#include "relay/kh_rbuf.h"
#include "relay/kh_rconn.h"
#include "relay/kh_rdeny.h"
#include "relay/kh_rhttp.h"
#include "relay/kh_rlog.h"
#include "relay/kh_rpeer.h"
#include "relay/kh_rprog.h"
#include "relay/kh_rup.h"

/* Read the upstream while at least this much room is left in the block. */
#define KH_RCONN_READ_MIN (16 * 1024 + 64)

enum kh_rconn_state {
	KH_RC_HEAD,        /* reading a request head; no upstream */
	KH_RC_UPWAIT,      /* head read; a new upstream connection is being made */
	KH_RC_REQ,         /* a request and its answer under way */
	KH_RC_TUNNEL,      /* after a 101: bytes both ways, unparsed */
	KH_RC_LINGER,      /* answered by the relay; draining the peer, then close */
};

struct kh_rconn {
	struct kh_relayd *rd;
	struct kh_rcluster *cl;
	struct kh_ruser *user;
	TAILQ_ENTRY(kh_rconn) by_user;
	int fd;
	struct event *ev_read, *ev_write, *timer;
	bool reading;                   /* ev_read is added */
	enum kh_rconn_state state;
	struct kh_rhttp req, resp;
	struct kh_rbuf in;              /* from the client */
	size_t in_ok;                   /* of in's bytes: may go upstream now */
	size_t in_parsed;               /* of in's bytes: read by the request parser */
	struct kh_rbuf out;             /* to the client */
	struct kh_rup *up;
	bool client_eof;
	bool head_started;              /* a byte of the next head arrived */
	bool req_done, resp_done;
	bool answered;                  /* a byte of the answer went to the client */
	bool up_extra;                  /* the upstream sent more than its answer */
	bool close_after;               /* no further request on this connection */
	bool closing;                   /* flush out, then close */
	bool in_flight;                 /* a request whose audit line is not written */
	/* The request in flight, for its audit line. */
	struct timespec t_start;
	struct timespec m_start;
	uint64_t bytes_in, bytes_out;
	unsigned status;
	bool watch, upgrade;
	const char *note;
	time_t last_io;                 /* monotonic seconds */
	char target[KH_RHTTP_TARGET_MAX + 1];
	/* The client program (kh_rprog), looked up once per connection. */
	enum { KH_PROG_NONE, KH_PROG_WAIT, KH_PROG_DONE } prog_state;
	uint64_t prog_tag;
	TAILQ_ENTRY(kh_rconn) by_prog;  /* in rd->prog_wait while KH_PROG_WAIT */
	struct kh_rprog prog;
};

static struct kh_rlog_limit kh_rconn_limit_total, kh_rconn_limit_user, kh_rconn_limit_peer;

static int kh_rconn_process(struct kh_rconn *c);
static int kh_rconn_pump_down(struct kh_rconn *c);
static void kh_rconn_up_ready(void *arg, struct kh_rup *up);
static void kh_rconn_up_failed(void *arg, const char *why);
static void kh_rconn_up_readable(void *arg);
static void kh_rconn_up_writable(void *arg);

static const struct kh_rup_ops kh_rconn_up_ops = {
	.ready = kh_rconn_up_ready,
	.failed = kh_rconn_up_failed,
	.readable = kh_rconn_up_readable,
	.writable = kh_rconn_up_writable,
};

static time_t
kh_mono(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

static void
kh_rconn_arm(struct kh_rconn *c, long secs)
{
	struct timeval tv = { .tv_sec = secs > 0 ? secs : 0 };

	(void)evtimer_add(c->timer, &tv);
}

static bool
kh_rconn_uses_issuer(const struct kh_rconn *c, const char *issuer)
{
	return issuer == NULL || strcmp(c->cl->issuer_id, issuer) == 0;
}

/* ------------------------------------------------------------------ */
/* the client program                                                   */

static struct kh_rlog_limit kh_rconn_limit_prog, kh_rconn_limit_defer;

/*
 * An audit line whose connection's program is not known yet: it waits for
 * the finder's answer (which may come after the connection ended) and is
 * written then.  Nothing on a request's path waits for the finder.
 */
struct kh_rdefer {
	uint64_t tag;
	json_t *line;
	TAILQ_ENTRY(kh_rdefer) next;
};
/* Lines waiting at most; beyond, a line is written without its program. */
#define KH_RDEFER_MAX 4096

/* Write the lines waiting for answer `tag` (every one when all), with p. */
static void
kh_rconn_defer_flush(struct kh_relayd *rd, bool all, uint64_t tag, const struct kh_rprog *p)
{
	struct kh_rdefer *d, *next;

	for (d = TAILQ_FIRST(&rd->audit_wait); d != NULL; d = next) {
		next = TAILQ_NEXT(d, next);
		if (!all && d->tag != tag)
			continue;
		TAILQ_REMOVE(&rd->audit_wait, d, next);
		rd->naudit_wait--;
		(void)kh_raudit_set_prog(d->line, p);
		kh_raudit_write_line(rd->audit, d->line);
		json_decref(d->line);
		free(d);
	}
}

static void
kh_rconn_prog_stop(struct kh_relayd *rd)
{
	struct kh_rconn *c;

	kh_rlog_limited(&kh_rconn_limit_prog, LOG_ERR, "the program finder is gone: audit "
			"lines name no program");
	if (rd->prog_ev != NULL)
		event_free(rd->prog_ev);
	rd->prog_ev = NULL;
	if (rd->prog_fd >= 0)
		(void)close(rd->prog_fd);
	rd->prog_fd = -1;
	while ((c = TAILQ_FIRST(&rd->prog_wait)) != NULL) {
		TAILQ_REMOVE(&rd->prog_wait, c, by_prog);
		c->prog_state = KH_PROG_NONE;
	}
	kh_rconn_defer_flush(rd, true, 0, NULL);
}

/* The finder answered (its event, or kh_rconn_prog_shutdown waiting). */
void
kh_rconn_prog_readable(evutil_socket_t fd, short what, void *arg)
{
	struct kh_relayd *rd = arg;
	struct kh_rprog p;
	struct kh_rconn *c;
	uint64_t tag;
	int r;

	(void)fd;
	(void)what;
	while (rd->prog_fd >= 0 && (r = kh_rprog_answer(rd->prog_fd, &tag, &p)) != 0) {
		if (r < 0) {
			kh_rconn_prog_stop(rd);
			return;
		}
		/* Answers come in the order asked; a closed connection left. */
		TAILQ_FOREACH(c, &rd->prog_wait, by_prog)
			if (c->prog_tag == tag)
				break;
		if (c != NULL) {
			TAILQ_REMOVE(&rd->prog_wait, c, by_prog);
			c->prog = p;
			c->prog_state = KH_PROG_DONE;
		}
		kh_rconn_defer_flush(rd, false, tag, &p);
	}
}

void
kh_rconn_prog_shutdown(struct kh_relayd *rd)
{
	struct pollfd pfd;
	struct timespec t0, t;

	/* Give the answers asked for a moment (their lines wait), then
	 * write what is left without its program. */
	(void)clock_gettime(CLOCK_MONOTONIC, &t0);
	while (rd->prog_fd >= 0 && rd->naudit_wait > 0) {
		(void)clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > 500)
			break;
		pfd = (struct pollfd){ .fd = rd->prog_fd, .events = POLLIN };
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		kh_rconn_prog_readable(rd->prog_fd, 0, rd);
	}
	while (TAILQ_FIRST(&rd->prog_wait) != NULL) {
		struct kh_rconn *c = TAILQ_FIRST(&rd->prog_wait);

		TAILQ_REMOVE(&rd->prog_wait, c, by_prog);
		c->prog_state = KH_PROG_NONE;
	}
	kh_rconn_defer_flush(rd, true, 0, NULL);
}

/* Keep c's audit line until its program is known: 0, or -1 (write it now). */
static int
kh_rconn_defer(struct kh_rconn *c, json_t *line)
{
	struct kh_relayd *rd = c->rd;
	struct kh_rdefer *d;

	if (rd->naudit_wait >= KH_RDEFER_MAX) {
		kh_rlog_limited(&kh_rconn_limit_defer, LOG_WARNING, "%u audit lines wait for "
				"the program finder: writing them without the program",
				rd->naudit_wait);
		return -1;
	}
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return -1;
	d->tag = c->prog_tag;
	d->line = line;
	TAILQ_INSERT_TAIL(&rd->audit_wait, d, next);
	rd->naudit_wait++;
	return 0;
}

static void
kh_rconn_prog_ask(struct kh_rconn *c, uid_t uid, uint64_t inode)
{
	struct kh_relayd *rd = c->rd;

	if (rd->prog_fd < 0 || kh_rprog_ask(rd->prog_fd, ++rd->prog_tag, inode, uid) != 0)
		return;
	c->prog_tag = rd->prog_tag;
	c->prog_state = KH_PROG_WAIT;
	TAILQ_INSERT_TAIL(&rd->prog_wait, c, by_prog);
}

/* ------------------------------------------------------------------ */
/* the audit line                                                       */

static void
kh_rconn_audit(struct kh_rconn *c)
{
	struct kh_rsession *s;
	struct kh_raudit_rec r;
	struct timespec now;

	if (!c->in_flight)
		return;
	c->in_flight = false;
	if (c->rd->audit == NULL)
		return;
	(void)clock_gettime(CLOCK_MONOTONIC, &now);
	s = kh_rsession_find(c->rd, c->user->uid, c->cl->issuer_id);
	r = (struct kh_raudit_rec){
		.start = c->t_start,
		.duration_ns = (int64_t)(now.tv_sec - c->m_start.tv_sec) * 1000000000 +
			       (now.tv_nsec - c->m_start.tv_nsec),
		.uid = c->user->uid,
		.user = s != NULL ? s->user_name : NULL,
		.kube_uid = s != NULL ? s->kube_uid : NULL,
		.prog = c->prog_state == KH_PROG_DONE ? &c->prog : NULL,
		.cluster = c->cl->conf->name,
		.method = c->req.head_done ? kh_rhttp_method(&c->req) : NULL,
		.path = c->target,
		.path_cut = c->req.target_cut,
		.status = c->status,
		.bytes_in = c->bytes_in,
		.bytes_out = c->bytes_out,
		.watch = c->watch,
		.upgrade = c->upgrade,
		.relay_note = c->note,
		.origin = s != NULL ? &s->origin : NULL,
	};
	if (c->prog_state == KH_PROG_WAIT) {
		json_t *line = kh_raudit_line(&r);

		if (line != NULL && kh_rconn_defer(c, line) == 0)
			return;
		kh_raudit_write_line(c->rd->audit, line);
		json_decref(line);
		return;
	}
	kh_raudit_write(c->rd->audit, &r);
}

/* A request starts (its head was read, or the relay answers a bad one). */
static void
kh_rconn_audit_start(struct kh_rconn *c)
{
	(void)clock_gettime(CLOCK_REALTIME, &c->t_start);
	(void)clock_gettime(CLOCK_MONOTONIC, &c->m_start);
	c->bytes_in = c->bytes_out = 0;
	c->status = 0;
	c->note = NULL;
	c->in_flight = true;
}

/* ------------------------------------------------------------------ */
/* closing                                                              */

static void
kh_rconn_close(struct kh_rconn *c)
{
	struct kh_relayd *rd = c->rd;
	struct kh_ruser *u = c->user;

	kh_rconn_audit(c);
	if (c->prog_state == KH_PROG_WAIT)
		TAILQ_REMOVE(&rd->prog_wait, c, by_prog);
	if (c->up != NULL)
		kh_rup_close(c->up);
	if (c->ev_read != NULL)
		event_free(c->ev_read);
	if (c->ev_write != NULL)
		event_free(c->ev_write);
	if (c->timer != NULL)
		event_free(c->timer);
	kh_rbuf_drop(&c->in);
	kh_rbuf_drop(&c->out);
	(void)close(c->fd);
	TAILQ_REMOVE(&u->conns, c, by_user);
	u->nconns--;
	rd->nconns--;
	rd->trim_due = true;
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
/* the client socket                                                    */

static void
kh_rconn_reading(struct kh_rconn *c, bool on)
{
	if (on == c->reading)
		return;
	if ((on ? event_add(c->ev_read, NULL) : event_del(c->ev_read)) == 0)
		c->reading = on;
}

/* Read the client while there is room for it and it has not ended. */
static void
kh_rconn_update_reading(struct kh_rconn *c)
{
	kh_rconn_reading(c, !c->client_eof && !c->closing &&
			 (c->in.data == NULL || c->in.off + c->in.len < KH_RBUF_SIZE ||
			  c->in.off > 0));
}

/* Write out to the client: 0 all of it, 1 the rest waits for ev_write, -1 closed. */
static int
kh_rconn_flush_down(struct kh_rconn *c)
{
	ssize_t n;

	while (c->out.len > 0) {
		n = send(c->fd, kh_rbuf_head(&c->out), c->out.len, MSG_NOSIGNAL);
		if (n > 0) {
			kh_rbuf_consume(&c->out, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			(void)event_add(c->ev_write, NULL);
			return 1;
		}
		kh_rconn_close(c);     /* the client is gone */
		return -1;
	}
	kh_rbuf_give(&c->out);
	c->last_io = kh_mono();
	return 0;
}

/* Read what the client sent: -1 closed. */
static int
kh_rconn_read_client(struct kh_rconn *c)
{
	size_t room;
	ssize_t n;

	if (!kh_rbuf_take(&c->in)) {
		kh_rconn_close(c);
		return -1;
	}
	room = kh_rbuf_room(&c->in);
	if (room == 0) {
		kh_rconn_update_reading(c);
		return 0;
	}
	do {
		n = read(c->fd, kh_rbuf_tail(&c->in), room);
	} while (n < 0 && errno == EINTR);
	if (n > 0) {
		c->in.len += (size_t)n;
		c->last_io = kh_mono();
	} else if (n == 0) {
		c->client_eof = true;
	} else if (errno != EAGAIN) {
		kh_rconn_close(c);
		return -1;
	}
	kh_rbuf_give(&c->in);
	return 0;
}

/* ------------------------------------------------------------------ */
/* the relay's own answers                                              */

/* Answer code with msg, then half-close and drain the peer. */
static int
kh_rconn_deny(struct kh_rconn *c, int code, const char *msg, const char *note)
{
	char text[KH_RDENY_MSG_MAX];
	int n;

	if (c->up != NULL) {
		kh_rup_close(c->up);
		c->up = NULL;
	}
	if (!c->in_flight)
		kh_rconn_audit_start(c);
	c->status = (unsigned)code;
	c->note = note;
	kh_rconn_audit(c);
	(void)snprintf(text, sizeof(text), "%s", msg);
	kh_rbuf_drop(&c->in);
	c->in_ok = c->in_parsed = 0;
	c->state = KH_RC_LINGER;
	kh_rconn_arm(c, KH_RELAY_LINGER_SEC);
	if (!kh_rbuf_take(&c->out) || kh_rbuf_room(&c->out) < KH_RDENY_MAX) {
		kh_rconn_close(c);
		return -1;
	}
	n = kh_rdeny_format(code, text, kh_rbuf_tail(&c->out), kh_rbuf_room(&c->out));
	if (n < 0) {
		kh_rconn_close(c);
		return -1;
	}
	c->out.len += (size_t)n;
	if (!c->client_eof)
		kh_rconn_reading(c, true);     /* drained, so the answer is not reset */
	n = kh_rconn_flush_down(c);
	if (n < 0)
		return -1;
	if (n == 0)
		(void)shutdown(c->fd, SHUT_WR);
	return -1;      /* no more requests on this connection, whatever happens */
}

static void
kh_rconn_linger_read(struct kh_rconn *c)
{
	char sink[4096];
	ssize_t n;

	do {
		n = read(c->fd, sink, sizeof(sink));
	} while (n > 0 || (n < 0 && errno == EINTR));
	if (n == 0 || errno != EAGAIN)
		kh_rconn_close(c);
}

/* ------------------------------------------------------------------ */
/* requests                                                             */

static int
kh_rconn_start_request(struct kh_rconn *c)
{
	struct kh_rsession *s;
	char msg[KH_RDENY_MSG_MAX];
	kh_error err = { 0 };
	bool ready = false;

	kh_rconn_audit_start(c);
	c->watch = kh_rhttp_is_watch(&c->req);
	c->upgrade = kh_rhttp_upgrade(&c->req);
	c->req_done = c->resp_done = c->answered = c->up_extra = false;
	/* The session is looked up now, with the request at hand: the freshest. */
	s = kh_rsession_find(c->rd, c->user->uid, c->cl->issuer_id);
	if (s == NULL) {
		kh_rdeny_no_session(msg, sizeof(msg), c->user->uid, c->cl->conf->name,
				    c->user->ended_why, c->user->ended_at);
		kh_rlog(LOG_DEBUG, "uid %u: no session for cluster %s: 401",
			(unsigned)c->user->uid, c->cl->conf->name);
		return kh_rconn_deny(c, 401, msg, "no session");
	}
	kh_rhttp_init_response(&c->resp, c->req.p.method == HTTP_HEAD);
	c->in_ok = c->in_parsed;        /* the head may go */
	c->up = kh_rup_get(c->user, c->cl, s, &kh_rconn_up_ops, c, &ready, &err);
	if (c->up == NULL) {
		kh_rlog(LOG_WARNING, "uid %u: cluster %s: %s", (unsigned)c->user->uid,
			c->cl->conf->name, err.msg);
		(void)snprintf(msg, sizeof(msg), "kubehsm-relayd: cluster %s: %s",
			       c->cl->conf->name, err.msg);
		return kh_rconn_deny(c, 503, msg, "upstream unreachable");
	}
	c->state = ready ? KH_RC_REQ : KH_RC_UPWAIT;
	kh_rconn_arm(c, c->rd->policy->relay.idle_timeout);
	return 0;
}

/* Parse the head being read: -1 closed (or answered by the relay). */
static int
kh_rconn_parse_head(struct kh_rconn *c)
{
	char msg[KH_RDENY_MSG_MAX];
	enum kh_rhttp_ev ev;
	size_t used;

	if (!c->head_started) {
		/* From its first byte, a head has handshake_timeout to arrive whole. */
		c->head_started = true;
		kh_rconn_arm(c, c->rd->policy->relay.handshake_timeout);
	}
	ev = kh_rhttp_feed(&c->req, kh_rbuf_head(&c->in) + c->in_parsed,
			   c->in.len - c->in_parsed, &used);
	c->in_parsed += used;
	if (ev == KH_RHTTP_BAD) {
		(void)snprintf(msg, sizeof(msg), "kubehsm-relayd: bad request: %s; it was not "
			       "sent to the API server", c->req.why);
		kh_rlog(LOG_DEBUG, "uid %u: 400: %s", (unsigned)c->user->uid, c->req.why);
		return kh_rconn_deny(c, 400, msg, "bad request head");
	}
	if (ev != KH_RHTTP_HEAD)
		return 0;
	return kh_rconn_start_request(c);
}

/* The request's body (or its end): framing only.  -1 closed. */
static int
kh_rconn_parse_body(struct kh_rconn *c)
{
	enum kh_rhttp_ev ev;
	size_t used;

	while (!c->req_done && c->in_parsed < c->in.len) {
		ev = kh_rhttp_feed(&c->req, kh_rbuf_head(&c->in) + c->in_parsed,
				   c->in.len - c->in_parsed, &used);
		c->in_parsed += used;
		c->in_ok = c->in_parsed;
		if (ev == KH_RHTTP_BAD) {
			kh_rlog(LOG_DEBUG, "uid %u: request body: %s", (unsigned)c->user->uid,
				c->req.why);
			kh_rconn_close(c);
			return -1;
		}
		if (ev == KH_RHTTP_DONE)
			c->req_done = true;
		if (used == 0)
			break;
	}
	return 0;
}

/* Send what may go upstream.  -1 closed. */
static int
kh_rconn_flush_up(struct kh_rconn *c)
{
	size_t n;
	int r, e;

	while (c->in_ok > 0) {
		ERR_clear_error();
		r = SSL_write_ex(c->up->ssl, kh_rbuf_head(&c->in), c->in_ok, &n);
		if (r == 1) {
			kh_rbuf_consume(&c->in, n);
			c->in_ok -= n;
			c->in_parsed -= n;
			c->bytes_in += n;
			c->last_io = kh_mono();
			continue;
		}
		e = SSL_get_error(c->up->ssl, r);
		if (e == SSL_ERROR_WANT_WRITE) {
			kh_rup_want_write(c->up);
			return 0;
		}
		if (e == SSL_ERROR_WANT_READ)
			return 0;
		kh_rlog(LOG_DEBUG, "uid %u: writing upstream failed", (unsigned)c->user->uid);
		kh_rconn_close(c);
		return -1;
	}
	/* Sent: a request waiting for its answer holds no buffer of ours or
	 * OpenSSL's (SSL_free_buffers keeps any still in use). */
	kh_rbuf_give(&c->in);
	if (c->in.data == NULL)
		(void)SSL_free_buffers(c->up->ssl);
	return 0;
}

/* The client ended its side: what that means depends on where we are. */
static int
kh_rconn_client_ended(struct kh_rconn *c)
{
	switch (c->state) {
	case KH_RC_HEAD:
		/* Between requests: done, once what is queued for it is out. */
		if (c->out.len > 0) {
			c->closing = true;
			return 0;
		}
		break;
	case KH_RC_REQ:
	case KH_RC_UPWAIT:
		/* A client may half-close after its request and still read the
		 * answer; a watch's client that goes has gone for good, and its
		 * stream may stay quiet for minutes. */
		if (c->req_done && !c->watch) {
			c->close_after = true;  /* its answer still goes out */
			return 0;
		}
		break;
	default:
		break;
	}
	kh_rconn_close(c);
	return -1;
}

/* Move the client's bytes as far as the state allows.  -1 closed. */
static int
kh_rconn_process(struct kh_rconn *c)
{
	while (c->state == KH_RC_HEAD && !c->closing && c->in.len > c->in_parsed) {
		if (kh_rconn_parse_head(c) != 0)
			return -1;
		if (c->state == KH_RC_HEAD)
			break;          /* more of the head to come */
	}
	if ((c->state == KH_RC_UPWAIT || c->state == KH_RC_REQ) && kh_rconn_parse_body(c) != 0)
		return -1;
	if (c->state == KH_RC_TUNNEL)
		c->in_ok = c->in.len;
	if ((c->state == KH_RC_REQ || c->state == KH_RC_TUNNEL) && kh_rconn_flush_up(c) != 0)
		return -1;
	if (c->client_eof && c->in_ok == 0 &&
	    (c->state != KH_RC_HEAD || c->in.len == c->in_parsed) &&
	    kh_rconn_client_ended(c) != 0)
		return -1;
	kh_rconn_update_reading(c);
	return 0;
}

/* The answer is complete: log it, pool the upstream, next request.  -1 closed. */
static int
kh_rconn_end_request(struct kh_rconn *c)
{
	bool keep = c->req_done && kh_rhttp_keep_alive(&c->req) && kh_rhttp_keep_alive(&c->resp) &&
		    !c->upgrade;

	kh_rconn_audit(c);
	kh_rup_release(c->up, keep && !c->up_extra);
	c->up = NULL;
	if (!keep || c->close_after) {
		if (c->out.len == 0) {
			kh_rconn_close(c);
			return -1;
		}
		c->closing = true;
		kh_rconn_update_reading(c);
		return 0;
	}
	c->state = KH_RC_HEAD;
	c->head_started = false;
	kh_rconn_arm(c, c->rd->policy->relay.idle_timeout);
	return kh_rconn_process(c);
}

/* ------------------------------------------------------------------ */
/* the answer                                                           */

enum kh_rconn_rd { KH_RD_BLOCKED, KH_RD_FULL, KH_RD_EOF, KH_RD_ERROR };

/* Drain the upstream's TLS into out until it would block or out is full. */
static enum kh_rconn_rd
kh_rconn_read_up(struct kh_rconn *c, size_t *got)
{
	size_t n;
	int r, e;

	*got = 0;
	while (KH_RBUF_SIZE - c->out.off - c->out.len >= KH_RCONN_READ_MIN) {
		ERR_clear_error();
		r = SSL_read_ex(c->up->ssl, kh_rbuf_tail(&c->out),
				KH_RBUF_SIZE - c->out.off - c->out.len, &n);
		if (r == 1) {
			c->out.len += n;
			*got += n;
			continue;
		}
		e = SSL_get_error(c->up->ssl, r);
		if (e == SSL_ERROR_WANT_READ)
			return KH_RD_BLOCKED;
		if (e == SSL_ERROR_WANT_WRITE) {
			kh_rup_want_write(c->up);
			return KH_RD_BLOCKED;
		}
		return e == SSL_ERROR_ZERO_RETURN ? KH_RD_EOF : KH_RD_ERROR;
	}
	return KH_RD_FULL;
}

/* The answer's framing in the got bytes just read.  -1 closed. */
static int
kh_rconn_parse_answer(struct kh_rconn *c, size_t got)
{
	const char *p = kh_rbuf_head(&c->out) + c->out.len - got;
	size_t left = got, used;
	enum kh_rhttp_ev ev;

	while (left > 0 && c->state == KH_RC_REQ && !c->resp_done) {
		ev = kh_rhttp_feed(&c->resp, p, left, &used);
		p += used;
		left -= used;
		if (ev == KH_RHTTP_HEAD && (kh_rhttp_status(&c->resp) >= 200 ||
					    kh_rhttp_status(&c->resp) == 101)) {
			c->status = kh_rhttp_status(&c->resp);
		} else if (ev == KH_RHTTP_DONE && kh_rhttp_upgrade(&c->resp)) {
			/* 101: what follows is the other protocol's, both ways. */
			c->state = KH_RC_TUNNEL;
			c->upgrade = true;
			c->close_after = true;
		} else if (ev == KH_RHTTP_DONE) {
			c->resp_done = true;
		} else if (ev == KH_RHTTP_BAD) {
			kh_rlog(LOG_WARNING, "uid %u: cluster %s: a malformed answer: %s",
				(unsigned)c->user->uid, c->cl->conf->name, c->resp.why);
			kh_rconn_close(c);
			return -1;
		}
		if (used == 0 && ev == KH_RHTTP_MORE)
			break;
	}
	if (c->resp_done && left > 0) {
		/* Bytes after the answer nobody asked for: not passed on, not pooled. */
		c->out.len -= left;
		got -= left;
		c->up_extra = true;
	}
	c->bytes_out += got;
	if (got > 0)
		c->answered = true;
	return 0;
}

/* The upstream ended (or broke) mid-answer.  -1 closed. */
static int
kh_rconn_up_ended(struct kh_rconn *c, bool error)
{
	char msg[KH_RDENY_MSG_MAX];

	c->up_extra = true;     /* never pooled again */
	if (c->state == KH_RC_REQ && !error && kh_rhttp_eof(&c->resp) == KH_RHTTP_DONE) {
		c->resp_done = true;    /* a body that ends with the connection */
		c->close_after = true;
		return 0;
	}
	if (c->state == KH_RC_REQ && !c->answered) {
		(void)snprintf(msg, sizeof(msg), "kubehsm-relayd: cluster %s: %s closed the "
			       "connection before answering", c->cl->conf->name,
			       c->cl->conf->server);
		kh_rlog(LOG_WARNING, "uid %u: %s", (unsigned)c->user->uid,
			msg + strlen("kubehsm-relayd: "));
		return kh_rconn_deny(c, 503, msg, "upstream closed");
	}
	/* Cut mid-answer, or a tunnel's end: flush what we have, then close. */
	kh_rup_close(c->up);
	c->up = NULL;
	if (c->out.len == 0) {
		kh_rconn_close(c);
		return -1;
	}
	c->closing = true;
	kh_rconn_update_reading(c);
	return 0;
}

/* Upstream to client, until the upstream would block or the client is full. */
static int
kh_rconn_pump_down(struct kh_rconn *c)
{
	enum kh_rconn_rd rd = KH_RD_BLOCKED;
	size_t got = 0;
	int r;

	for (;;) {
		if (c->up != NULL && !c->closing && !(c->resp_done && c->state == KH_RC_REQ)) {
			if (!kh_rbuf_take(&c->out)) {
				kh_rconn_close(c);
				return -1;
			}
			rd = kh_rconn_read_up(c, &got);
			if (got > 0) {
				c->last_io = kh_mono();
				if (c->state == KH_RC_REQ) {
					if (kh_rconn_parse_answer(c, got) != 0)
						return -1;
				} else {
					c->bytes_out += got;
				}
			}
			if ((rd == KH_RD_EOF || rd == KH_RD_ERROR) &&
			    kh_rconn_up_ended(c, rd == KH_RD_ERROR) != 0)
				return -1;
		}
		r = kh_rconn_flush_down(c);
		if (r < 0)
			return -1;
		if (r > 0) {
			/* The client is slow: stop reading its answer until it drains. */
			if (c->up != NULL)
				kh_rup_read(c->up, false);
			return 0;
		}
		if (c->closing && c->up == NULL) {
			kh_rconn_close(c);
			return -1;
		}
		if (c->resp_done && c->state == KH_RC_REQ)
			return kh_rconn_end_request(c);
		if (rd != KH_RD_FULL || c->up == NULL)
			return 0;
	}
}

/* ------------------------------------------------------------------ */
/* upstream events                                                      */

static void
kh_rconn_up_ready(void *arg, struct kh_rup *up)
{
	struct kh_rconn *c = arg;

	c->up = up;
	c->state = KH_RC_REQ;
	(void)kh_rconn_process(c);
}

static void
kh_rconn_up_failed(void *arg, const char *why)
{
	struct kh_rconn *c = arg;
	char msg[KH_RDENY_MSG_MAX];

	c->up = NULL;           /* gone already */
	(void)snprintf(msg, sizeof(msg), "kubehsm-relayd: cluster %s: %s", c->cl->conf->name, why);
	(void)kh_rconn_deny(c, 503, msg, "upstream unreachable");
}

static void
kh_rconn_up_readable(void *arg)
{
	(void)kh_rconn_pump_down(arg);
}

static void
kh_rconn_up_writable(void *arg)
{
	struct kh_rconn *c = arg;

	if (kh_rconn_process(c) != 0 || c->up == NULL)
		return;
	(void)kh_rconn_pump_down(c);
}

/* ------------------------------------------------------------------ */
/* client events and the timer                                          */

static void
kh_rconn_on_read(evutil_socket_t fd, short what, void *arg)
{
	struct kh_rconn *c = arg;

	(void)fd;
	(void)what;
	if (c->state == KH_RC_LINGER) {
		kh_rconn_linger_read(c);
		return;
	}
	if (kh_rconn_read_client(c) != 0)
		return;
	(void)kh_rconn_process(c);
}

static void
kh_rconn_on_write(evutil_socket_t fd, short what, void *arg)
{
	struct kh_rconn *c = arg;
	int r;

	(void)fd;
	(void)what;
	r = kh_rconn_flush_down(c);
	if (r != 0)
		return;
	if (c->state == KH_RC_LINGER) {
		(void)shutdown(c->fd, SHUT_WR);
		return;
	}
	if (c->closing && c->up == NULL) {
		kh_rconn_close(c);
		return;
	}
	if (c->up != NULL) {
		/* Resume: OpenSSL may hold bytes already read, which no event announces. */
		kh_rup_read(c->up, true);
		(void)kh_rconn_pump_down(c);
	}
}

static void
kh_rconn_on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct kh_rconn *c = arg;
	time_t now = kh_mono(), idle = c->rd->policy->relay.idle_timeout;

	(void)fd;
	(void)what;
	switch (c->state) {
	case KH_RC_REQ:
	case KH_RC_TUNNEL:
	case KH_RC_UPWAIT:
		if (now - c->last_io < idle) {
			kh_rconn_arm(c, idle - (now - c->last_io));
			return;
		}
		kh_rlog(LOG_DEBUG, "uid %u: idle for %lds: closing", (unsigned)c->user->uid,
			(long)idle);
		break;
	case KH_RC_HEAD:
		kh_rlog(LOG_DEBUG, "uid %u: %s: closing", (unsigned)c->user->uid,
			c->head_started ? "a request head took too long" : "no request");
		break;
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
	uint64_t inode = 0;
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
	    kh_rpeer_lookup(rd->netlink_fd, (struct sockaddr *)&local, peer, &uid, &inode,
			    &err) != 0) {
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
	c->fd = fd;
	c->state = KH_RC_HEAD;
	kh_rhttp_init_request(&c->req, c->target);
	TAILQ_INSERT_TAIL(&u->conns, c, by_user);
	u->nconns++;
	rd->nconns++;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->ev_read = event_new(rd->base, fd, EV_READ | EV_PERSIST, kh_rconn_on_read, c);
	c->ev_write = event_new(rd->base, fd, EV_WRITE, kh_rconn_on_write, c);
	c->timer = evtimer_new(rd->base, kh_rconn_on_timer, c);
	if (c->ev_read == NULL || c->ev_write == NULL || c->timer == NULL) {
		kh_rconn_close(c);
		return;
	}
	kh_rconn_reading(c, true);
	if (kh_raudit_enabled(rd->audit))
		kh_rconn_prog_ask(c, uid, inode);
	/* The first request comes within handshake_timeout, or never. */
	kh_rconn_arm(c, rd->policy->relay.handshake_timeout);
	return;
refuse:
	(void)close(fd);
}
