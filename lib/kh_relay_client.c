/*
 * kh_relay_client — one request to kubehsm-relayd per connection.
 *
 * The socket is non-blocking throughout and every wait is bounded: the
 * caller may be a login program (sshd, login, su) that must not hang
 * because the relay does, and that must not get a SIGPIPE either.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lib/kh_mem.h"
#include "lib/kh_relay_client.h"
#include "lib/kh_rundir.h"

/* The directory holding the sockets: root's, and only root's to change. */
static int
kh_relay_check_rundir(const char *rundir, kh_error *err)
{
	struct stat st;

	if (rundir == NULL || rundir[0] != '/')
		return kh_fail(err, KH_ERR_CONFIG, "relay.rundir must be an absolute path");
	if (lstat(rundir, &st) != 0) {
		if (errno == ENOENT)
			return kh_fail(err, KH_ERR_NOTFOUND, "kubehsm-relayd is not running "
				       "(no %s)", rundir);
		return kh_fail(err, KH_ERR_INTERNAL, "%s: %s", rundir, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) != 0)
		return kh_fail(err, KH_ERR_PERM, "%s must be a directory owned by root and "
			       "writable by root only; not talking to a relay there", rundir);
	return 0;
}

/* Milliseconds left until deadline (CLOCK_MONOTONIC), at least 0. */
static int
kh_relay_ms_left(const struct timespec *deadline)
{
	struct timespec now;
	long long ms;

	if (clock_gettime(CLOCK_MONOTONIC, &now) != 0)
		return 0;
	ms = (long long)(deadline->tv_sec - now.tv_sec) * 1000 +
	     (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : (int)ms;
}

static int
kh_relay_wait(int fd, short events, const struct timespec *deadline, kh_error *err)
{
	struct pollfd p = { .fd = fd, .events = events };
	int r;

	for (;;) {
		r = poll(&p, 1, kh_relay_ms_left(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return kh_fail(err, KH_ERR_INTERNAL, "poll: %s", strerror(errno));
		if (r == 0)
			return kh_fail(err, KH_ERR_INTERNAL, "kubehsm-relayd did not answer in time");
		return 0;
	}
}

static int
kh_relay_connect(const char *rundir, const char *sockname, kh_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, n;

	if (kh_relay_check_rundir(rundir, err) != 0)
		return -1;
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", rundir, sockname);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return kh_fail(err, KH_ERR_CONFIG, "relay socket path %s/%s is too long",
			       rundir, sockname);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return kh_fail(err, KH_ERR_INTERNAL, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = errno;

		(void)close(fd);
		if (e == ENOENT || e == ECONNREFUSED)
			return kh_fail(err, KH_ERR_NOTFOUND, "kubehsm-relayd is not running "
				       "(nothing listens on %s)", sa.sun_path);
		if (e == EACCES || e == EPERM)
			return kh_fail(err, KH_ERR_PERM, "%s: %s", sa.sun_path, strerror(e));
		if (e == EAGAIN)
			return kh_fail(err, KH_ERR_INTERNAL, "kubehsm-relayd is busy (%s has a "
				       "full backlog)", sa.sun_path);
		return kh_fail(err, KH_ERR_INTERNAL, "%s: %s", sa.sun_path, strerror(e));
	}
	return fd;
}

static int
kh_relay_call_ms(const char *rundir, const char *sockname, const struct kh_relay_request *req,
		 struct kh_relay_reply *rep, int ms, kh_error *err)
{
	struct timespec deadline;
	char *msg = NULL, *buf = NULL;
	size_t len = 0;
	ssize_t n;
	int fd, rc = -1;

	memset(rep, 0, sizeof(*rep));
	if (clock_gettime(CLOCK_MONOTONIC, &deadline) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "clock_gettime: %s", strerror(errno));
	deadline.tv_sec += ms / 1000;
	deadline.tv_nsec += (long)(ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	if (kh_relay_request_encode(req, &msg, &len, err) != 0)
		return -1;
	fd = kh_relay_connect(rundir, sockname, err);
	if (fd < 0)
		goto out;
	for (;;) {
		n = send(fd, msg, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (kh_relay_wait(fd, POLLOUT, &deadline, err) != 0)
				goto out;
			continue;
		}
		break;
	}
	if (n < 0 || (size_t)n != len) {
		kh_fail(err, KH_ERR_INTERNAL, "cannot send to kubehsm-relayd: %s",
			n < 0 ? strerror(errno) : "short send");
		goto out;
	}
	buf = malloc(KH_RELAY_LIST_MAX + 1);
	if (buf == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	for (;;) {
		if (kh_relay_wait(fd, POLLIN, &deadline, err) != 0)
			goto out;
		n = recv(fd, buf, KH_RELAY_LIST_MAX + 1, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		break;
	}
	if (n <= 0) {
		kh_fail(err, KH_ERR_INTERNAL, "kubehsm-relayd closed the connection without "
			"an answer%s%s", n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
		goto out;
	}
	if (kh_relay_reply_decode(buf, (size_t)n, rep, err) != 0) {
		kh_error_append(err, " (from kubehsm-relayd)");
		goto out;
	}
	if (!rep->ok) {
		kh_fail(err, KH_ERR_REFUSED, "kubehsm-relayd: %s", rep->error);
		kh_relay_reply_clear(rep);
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		(void)close(fd);
	free(buf);
	kh_secure_free(msg, len);
	return rc;
}

int
kh_relay_call(const char *rundir, const char *sockname, const struct kh_relay_request *req,
	      struct kh_relay_reply *rep, kh_error *err)
{
	return kh_relay_call_ms(rundir, sockname, req, rep, KH_RELAY_CLIENT_TIMEOUT_MS, err);
}

int
kh_relay_deliver(const char *rundir, const struct kh_relay_session *s, kh_error *err)
{
	struct kh_relay_request req = { .op = KH_RELAY_OP_DELIVER };
	struct kh_relay_reply rep;
	int rc;

	/* Borrowed, not copied: the caller owns (and wipes) the key. */
	req.session = *s;
	rc = kh_relay_call(rundir, KH_RELAY_CONTROL_SOCK, &req, &rep, err);
	if (rc != 0 && err->code == KH_ERR_REFUSED && strstr(err->msg, "\"origin\"") != NULL) {
		/* A relay from before the login origin: the session without it. */
		memset(&req.session.origin, 0, sizeof(req.session.origin));
		rc = kh_relay_call(rundir, KH_RELAY_CONTROL_SOCK, &req, &rep, err);
	}
	memset(&req.session, 0, sizeof(req.session));
	if (rc == 0)
		kh_relay_reply_clear(&rep);
	return rc;
}

static int
kh_relay_forget_at(const char *rundir, const char *sockname, const struct kh_relay_request *req,
		   unsigned *sessions, unsigned *connections, kh_error *err)
{
	struct kh_relay_reply rep;

	if (kh_relay_call_ms(rundir, sockname, req, &rep, KH_RELAY_FORGET_TIMEOUT_MS, err) != 0)
		return -1;
	if (sessions != NULL)
		*sessions = rep.sessions;
	if (connections != NULL)
		*connections = rep.connections;
	kh_relay_reply_clear(&rep);
	return 0;
}

/* Remove uid's notes older than keep_ns: a newer forget covers them. */
static void
kh_relay_prune_notes(const char *dir, uid_t uid, int64_t keep_ns)
{
	char prefix[32], *end;
	struct dirent *de;
	DIR *d = opendir(dir);
	size_t plen;

	if (d == NULL)
		return;
	plen = (size_t)snprintf(prefix, sizeof(prefix), "%u", (unsigned)uid);
	while ((de = readdir(d)) != NULL) {
		const char *rest = de->d_name + plen;
		long long ns = 0;

		if (strncmp(de->d_name, prefix, plen) != 0 || (*rest != '\0' && *rest != '-'))
			continue;
		if (*rest == '-') {
			rest = strrchr(rest, '-') + 1;
			ns = strtoll(rest, &end, 10);
			if (*end != '\0')
				continue;
		}
		if (ns < keep_ns)
			(void)unlinkat(dirfd(d), de->d_name, 0);
	}
	(void)closedir(d);
}

/*
 * The relay did not take the forget (not running, hung, too slow): leave a
 * note it acts on within KH_RPENDING_SCAN_MS while it runs, and at its next
 * start otherwise (its keyring store outlives it).  Root-only, under
 * KH_RUNDIR/relay-forget; the name says it all: UID-REASON-NANOSECONDS.
 */
static int
kh_relay_forget_later(uid_t uid, enum kh_relay_reason reason, kh_error *err)
{
	char dir[256], path[320];
	struct timespec now;
	int64_t ns;
	int fd, n;

	if (kh_rundir_sub(KH_RELAY_PENDING_DIR, dir, sizeof(dir), err) != 0)
		return -1;
	(void)clock_gettime(CLOCK_REALTIME, &now);
	ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	n = snprintf(path, sizeof(path), "%s/%u-%s-%lld", dir, (unsigned)uid,
		     kh_relay_reason_name(reason), (long long)ns);
	if (n < 0 || (size_t)n >= sizeof(path))
		return kh_fail(err, KH_ERR_INTERNAL, "runtime path too long");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || close(fd) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "%s: %s", path, strerror(errno));
	kh_relay_prune_notes(dir, uid, ns);
	return 0;
}

int
kh_relay_forget(const char *rundir, uid_t uid, const char *issuer,
		enum kh_relay_reason reason, unsigned *sessions, unsigned *connections,
		kh_error *err)
{
	struct kh_relay_request req = {
		.op = KH_RELAY_OP_FORGET, .has_uid = true, .uid = uid, .issuer = (char *)issuer,
		.reason = reason,
	};
	kh_error nerr = { 0 };
	struct timespec asked;
	char dir[256];

	if (sessions != NULL)
		*sessions = 0;
	if (connections != NULL)
		*connections = 0;
	(void)clock_gettime(CLOCK_REALTIME, &asked);
	if (kh_relay_forget_at(rundir, KH_RELAY_CONTROL_SOCK, &req, sessions, connections,
			       err) == 0) {
		/* Told: the uid's notes older than this forget have nothing left to
		 * do — when it covers what they do.  A note is for every issuer of
		 * the uid, so only a forget of every issuer covers one; a forget of
		 * one issuer leaves the notes (a logout or revocation of all of them
		 * the relay has not applied yet) alone. */
		if (issuer == NULL && geteuid() == 0 &&
		    kh_rundir_sub(KH_RELAY_PENDING_DIR, dir, sizeof(dir), &nerr) == 0)
			kh_relay_prune_notes(dir, uid, (int64_t)asked.tv_sec * 1000000000 +
					     asked.tv_nsec);
		return 0;
	}
	/* The relay answered and refused: that is an answer, not a lost forget. */
	if (err->code == KH_ERR_REFUSED || err->code == KH_ERR_PERM || geteuid() != 0)
		return -1;
	/* Not taken: a note it cannot miss (every issuer of the uid). */
	if (kh_relay_forget_later(uid, reason, &nerr) != 0) {
		kh_error_append(err, "; and no note for it either: %s", nerr.msg);
		return -1;
	}
	return 1;
}

int
kh_relay_forget_self(const char *rundir, const char *issuer, unsigned *sessions,
		     unsigned *connections, kh_error *err)
{
	struct kh_relay_request req = { .op = KH_RELAY_OP_FORGET, .issuer = (char *)issuer };

	return kh_relay_forget_at(rundir, KH_RELAY_USER_SOCK, &req, sessions, connections, err);
}
