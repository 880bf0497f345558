/*
 * kh_rctl — control.sock and user.sock: one request, one reply.
 *
 * control.sock is for root only (mode 0600, and the peer's SO_PEERCRED
 * uid must be 0): deliver a session with its key, forget any uid's
 * session, list all sessions.  user.sock is for anyone: the relay takes
 * the caller's uid from SO_PEERCRED and lets it list or forget only its
 * own sessions (`kubehsm logout`).  Each socket has slots of its own
 * (kh_rctlpool): users' connections, capped per uid and given a second,
 * never hold what root's need.  One datagram of at most KH_RELAY_MSG_MAX
 * bytes each way.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "lib/kh_mem.h"
#include "relay/kh_rctl.h"
#include "relay/kh_rctlpool.h"
#include "relay/kh_rlog.h"
#include "relay/kh_rsession.h"

struct kh_rctl {
	struct kh_relayd *rd;
	int fd;
	bool user;              /* user.sock */
	uid_t uid;              /* the peer's, from SO_PEERCRED */
	pid_t pid;
	struct event *ev;
};

static void
kh_rctl_close(struct kh_rctl *k)
{
	if (k->ev != NULL)
		event_free(k->ev);
	(void)close(k->fd);
	kh_rctlpool_leave(k->rd->ctlpool, k->user, k->uid);
	free(k);
}

static void
kh_rctl_send(struct kh_rctl *k, const struct kh_relay_reply *rep)
{
	char *out = NULL;
	size_t len = 0;
	kh_error err = { 0 };

	if (kh_relay_reply_encode(rep, &out, &len, &err) != 0) {
		kh_rlog(LOG_ERR, "cannot encode a control reply: %s", err.msg);
		return;
	}
	if (send(k->fd, out, len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)len)
		kh_rlog(LOG_DEBUG, "control reply to pid %ld not sent: %s", (long)k->pid,
			strerror(errno));
	kh_secure_free(out, len);
}

static void
kh_rctl_fail(struct kh_rctl *k, const char *msg)
{
	struct kh_relay_reply rep = { .ok = false, .error = (char *)msg };

	kh_rctl_send(k, &rep);
}

static void
kh_rctl_forget(struct kh_rctl *k, struct kh_relay_request *req)
{
	struct kh_relay_reply rep = { .ok = true, .has_counts = true };
	enum kh_relay_reason reason = k->user ? KH_RELAY_LOGOUT : req->reason;
	uid_t uid = k->user ? k->uid : req->uid;

	if (!k->user && !req->has_uid) {
		kh_rctl_fail(k, "forget needs a uid");
		return;
	}
	if (k->user && req->has_uid && req->uid != k->uid) {
		kh_rctl_fail(k, "you can end only your own session");
		return;
	}
	kh_rsession_forget(k->rd, uid, req->issuer, kh_relay_reason_name(reason),
			   &rep.sessions, &rep.connections);
	kh_rlog(LOG_INFO, "uid %u: %s by %s (pid %ld): %u session(s), %u connection(s) closed",
		(unsigned)uid, kh_relay_reason_name(reason), k->user ? "the user" : "root",
		(long)k->pid, rep.sessions, rep.connections);
	kh_rctl_send(k, &rep);
}

static void
kh_rctl_list(struct kh_rctl *k)
{
	struct kh_relay_reply rep = { .ok = true, .has_list = true };

	if (kh_rsession_list(k->rd, !k->user, k->uid, &rep.list, &rep.nlist) != 0) {
		rep.has_list = false;
		kh_relay_reply_clear(&rep);
		kh_rctl_fail(k, "out of memory");
		return;
	}
	kh_rctl_send(k, &rep);
	kh_relay_reply_clear(&rep);
}

static void
kh_rctl_handle(struct kh_rctl *k, const char *buf, size_t len)
{
	struct kh_relay_request req;
	struct kh_relay_reply ok = { .ok = true };
	kh_error err = { 0 };
	uid_t uid;

	if (kh_relay_request_decode(buf, len, &req, &err) != 0) {
		kh_rlog(LOG_WARNING, "bad request on %s from uid %u pid %ld: %s",
			k->user ? KH_RELAY_USER_SOCK : KH_RELAY_CONTROL_SOCK, (unsigned)k->uid,
			(long)k->pid, err.msg);
		kh_rctl_fail(k, err.msg);
		return;
	}
	switch (req.op) {
	case KH_RELAY_OP_DELIVER:
		if (k->user) {
			kh_rctl_fail(k, "deliver is for root, on control.sock");
			break;
		}
		uid = req.session.uid;
		/* kh_rsession_add consumes (and wipes) the session. */
		if (kh_rsession_add(k->rd, &req.session, -1, true, &err) != 0) {
			kh_rlog(LOG_WARNING, "uid %u: session refused: %s", (unsigned)uid, err.msg);
			kh_rctl_fail(k, err.msg);
			break;
		}
		kh_rctl_send(k, &ok);
		break;
	case KH_RELAY_OP_FORGET:
		kh_rctl_forget(k, &req);
		break;
	case KH_RELAY_OP_LIST:
		kh_rctl_list(k);
		break;
	default:
		kh_rctl_fail(k, "unknown operation");
		break;
	}
	kh_relay_request_clear(&req);
}

static void
kh_rctl_read(evutil_socket_t fd, short what, void *arg)
{
	struct kh_rctl *k = arg;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	char *buf;
	ssize_t n;

	if (what & EV_TIMEOUT) {
		kh_rctl_close(k);
		return;
	}
	buf = malloc(KH_RELAY_MSG_MAX + 1);
	if (buf == NULL) {
		kh_rctl_close(k);
		return;
	}
	iov.iov_base = buf;
	iov.iov_len = KH_RELAY_MSG_MAX + 1;
	do {
		n = recvmsg(fd, &mh, MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN) {
		free(buf);
		return;
	}
	if (n > (ssize_t)KH_RELAY_MSG_MAX || (mh.msg_flags & MSG_TRUNC))
		kh_rctl_fail(k, "request too large");
	else if (n > 0)
		kh_rctl_handle(k, buf, (size_t)n);
	/* It may have carried a key. */
	explicit_bzero(buf, KH_RELAY_MSG_MAX + 1);
	free(buf);
	kh_rctl_close(k);
}

static void
kh_rctl_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
	       void *arg)
{
	static struct kh_rlog_limit lim;
	struct kh_relayd *rd = arg;
	bool user = evconnlistener_get_fd(l) == evconnlistener_get_fd(rd->user_listener);
	int ms = kh_rctlpool_timeout_ms(user);
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = ms % 1000 * 1000 };
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	struct kh_rctl *k;

	(void)sa;
	(void)salen;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0) {
		(void)close(fd);
		return;
	}
	if (!kh_rctlpool_admit(rd->ctlpool, user, cred.uid)) {
		kh_rlog_limited(&lim, LOG_WARNING, "%s: uid %u: too many requests at once; "
				"refused", user ? KH_RELAY_USER_SOCK : KH_RELAY_CONTROL_SOCK,
				(unsigned)cred.uid);
		(void)close(fd);
		return;
	}
	k = calloc(1, sizeof(*k));
	if (k == NULL) {
		kh_rctlpool_leave(rd->ctlpool, user, cred.uid);
		(void)close(fd);
		return;
	}
	k->rd = rd;
	k->fd = fd;
	k->user = user;
	k->uid = cred.uid;
	k->pid = cred.pid;
	/* The file mode already keeps others out; the kernel's word settles it. */
	if (!user && cred.uid != 0) {
		kh_rlog(LOG_WARNING, "%s: uid %u (pid %ld) is not root; refused",
			KH_RELAY_CONTROL_SOCK, (unsigned)cred.uid, (long)cred.pid);
		kh_rctl_fail(k, "control.sock is for root only; use user.sock");
		kh_rctl_close(k);
		return;
	}
	k->ev = event_new(rd->base, fd, EV_READ, kh_rctl_read, k);
	if (k->ev == NULL || event_add(k->ev, &tv) != 0)
		kh_rctl_close(k);
}

int
kh_rctl_start(struct kh_relayd *rd, kh_error *err)
{
	rd->ctl_listener = evconnlistener_new(rd->base, kh_rctl_accept, rd,
					      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0,
					      rd->ctl_fd);
	if (rd->ctl_listener == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot listen on %s", KH_RELAY_CONTROL_SOCK);
	rd->ctl_fd = -1;
	rd->user_listener = evconnlistener_new(rd->base, kh_rctl_accept, rd,
					       LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0,
					       rd->user_fd);
	if (rd->user_listener == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot listen on %s", KH_RELAY_USER_SOCK);
	rd->user_fd = -1;
	return 0;
}
