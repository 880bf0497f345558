/*
 * kh_keyops — root's operations on a user's keys, run by a helper program
 * that fully becomes the user (see kh_keyops.h for why).
 *
 * The helper, $(pkglibexecdir)/kubehsm-keyops (cache/kh_keyops_child.c),
 * is started with posix_spawn — glibc's clone(CLONE_VM|CLONE_VFORK) and
 * exec, so a PAM host with libcrypto and a PKCS#11 module mapped is not
 * copied (a fork of it cost 0.85-0.96 ms per call at login, this about a
 * fifth of that) — with an empty environment, all signals at their
 * defaults, and nothing open but one socket to us.  Its request (uid, gid,
 * the operations: nothing secret) goes over that socket, never in argv or
 * the environment; its answers come back on it, one frame per result.  We
 * write and read with a deadline and bound every length we are told; a
 * helper that hangs (a user may SIGSTOP a process of their own uid) is
 * killed at the deadline.  Our own ids never change.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dlfcn.h>

#include "cache/kh_asuser.h"
#include "cache/kh_cache_int.h"
#include "cache/kh_keyops.h"
#include "cache/kh_keyops_wire.h"
#include "lib/kh_mem.h"
#include "lib/kh_path.h"

#define KH_KEYOPS_MAX_RESULTS 1024
#define KH_KEYOPS_TIMEOUT_MS  10000
#define KH_KEYOPS_NAME        "kubehsm-keyops"

/* ---- the parent ----------------------------------------------------------- */

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The helper's answers, read in pieces as large as they arrive: it writes
 * them together at the end (kh_keyops_child.c), so one wakeup and one read
 * usually bring all of them.  The buffer may hold key payloads: wiped by
 * reader_wipe.
 */
struct reader {
	int fd;
	int64_t deadline;
	size_t off, len;
	char buf[2 * KH_KEYOPS_PAYLOAD_MAX];
};

/* More from the helper, before the deadline.  0, or -1 (errno set). */
static int
reader_fill(struct reader *r)
{
	for (;;) {
		struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
		int64_t left = r->deadline - now_ms();
		ssize_t n;
		int rc;

		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		rc = poll(&pfd, 1, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -1;
		if (rc == 0)
			continue;   /* the deadline check above ends it */
		n = read(r->fd, r->buf, sizeof(r->buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EPIPE;   /* the child ended early */
			return -1;
		}
		r->off = 0;
		r->len = (size_t)n;
		return 0;
	}
}

/* Exactly len bytes.  0, or -1 (errno set). */
static int
read_exact(struct reader *r, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		size_t k;

		if (r->off == r->len && reader_fill(r) != 0)
			return -1;
		k = r->len - r->off < len ? r->len - r->off : len;
		memcpy(p, r->buf + r->off, k);
		r->off += k;
		p += k;
		len -= k;
	}
	return 0;
}

static void
reader_wipe(struct reader *r)
{
	explicit_bzero(r->buf, sizeof(r->buf));
	r->off = r->len = 0;
}

static int
push_result(struct kh_keyop_result **res, size_t *n, size_t *cap,
	    struct kh_keyop_result **slot)
{
	struct kh_keyop_result *nr;

	if (*n >= KH_KEYOPS_MAX_RESULTS)
		return -1;
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		nr = reallocarray(*res, *cap, sizeof(**res));
		if (nr == NULL)
			return -1;
		*res = nr;
	}
	*slot = &(*res)[(*n)++];
	memset(*slot, 0, sizeof(**slot));
	return 0;
}

/* Read every answer up to the child's DONE.  0, or -1 with err. */
static int
read_results(struct reader *rd, uid_t uid, const char *path, size_t nops,
	     struct kh_keyop_result **res, size_t *n, kh_error *err)
{
	size_t cap = 0;

	for (;;) {
		struct kh_keyop_result *r;
		struct wire_head h;

		if (read_exact(rd, &h, sizeof(h)) != 0)
			return kh_fail(err, KH_ERR_INTERNAL, "the keyring helper for uid %u "
				       "did not finish: %s", (unsigned)uid, strerror(errno));
		if (h.magic != WIRE_MAGIC || h.desclen >= KH_KEYOPS_DESC_MAX ||
		    h.len > KH_KEYOPS_PAYLOAD_MAX)
			return kh_fail(err, KH_ERR_INTERNAL, "the keyring helper for uid %u "
				       "sent a malformed answer", (unsigned)uid);
		if (h.op == WIRE_DONE)
			return 0;
		if (h.op == WIRE_SETUP && h.err == EPROTO)
			return kh_fail(err, KH_ERR_INTERNAL, "%s speaks another protocol than "
				       "this kubehsm; is kubehsm completely installed?", path);
		if (h.op == WIRE_SETUP)
			return kh_fail(err, KH_ERR_INTERNAL, "cannot act as uid %u: %s",
				       (unsigned)uid, strerror(h.err));
		if (h.op >= nops || push_result(res, n, &cap, &r) != 0)
			return kh_fail(err, KH_ERR_INTERNAL, "the keyring helper for uid %u "
				       "sent too many answers", (unsigned)uid);
		r->op = h.op;
		r->err = h.err;
		r->key = h.key;
		r->owner = h.owner;
		r->perm = h.perm;
		if (read_exact(rd, r->desc, h.desclen) != 0)
			return kh_fail(err, KH_ERR_INTERNAL, "keyring helper: %s", strerror(errno));
		r->desc[h.desclen] = '\0';
		if (h.len == 0)
			continue;
		r->payload = malloc((size_t)h.len + 1);
		if (r->payload == NULL)
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		r->len = h.len;
		if (read_exact(rd, r->payload, h.len) != 0)
			return kh_fail(err, KH_ERR_INTERNAL, "keyring helper: %s", strerror(errno));
		r->payload[h.len] = '\0';
	}
}

/* Reap the helper, which has been sent SIGKILL: a host that reaps every
 * child itself (SIGCHLD handler, SIG_IGN) leaves ECHILD, which is fine. */
static void
reap(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) != pid && errno == EINTR)
		;
}

/*
 * The helper: beside the object this code is in (an install that keeps them
 * together, or a build tree, where the build puts a link to it beside each
 * program and module that runs it), else $(pkglibexecdir).  Never from the
 * environment: a PAM module runs as root in su and sudo, whose environment
 * the user chooses.
 */
static int
helper_path(char *buf, size_t size)
{
	static const char *const names[] = { KH_KEYOPS_NAME };
	Dl_info self;

	if (dladdr((const void *)kh_keyops_run, &self) == 0)
		self.dli_fname = NULL;
	return kh_path_beside(self.dli_fname, names, 1, KH_KEYOPS_PATH, buf, size);
}

/* The request, in one buffer (ops and descriptions are bounded).  NULL
 * when out of memory or out of bounds. */
static char *
build_request(uid_t uid, gid_t gid, const struct kh_keyop *ops, size_t nops, size_t *len)
{
	struct wire_request rq = {
		.magic = WIRE_MAGIC, .version = WIRE_VERSION, .uid = (uint32_t)uid,
		.gid = (uint32_t)gid, .nops = (uint32_t)nops,
	};
	size_t i, n = sizeof(rq), off;
	char *buf;

	if (nops > KH_KEYOPS_MAX_OPS)
		return NULL;
	for (i = 0; i < nops; i++) {
		if (ops[i].desc != NULL && strlen(ops[i].desc) >= KH_KEYOPS_DESC_MAX)
			return NULL;
		n += sizeof(struct wire_op) + (ops[i].desc != NULL ? strlen(ops[i].desc) : 0);
	}
	buf = malloc(n);
	if (buf == NULL)
		return NULL;
	memcpy(buf, &rq, sizeof(rq));
	off = sizeof(rq);
	for (i = 0; i < nops; i++) {
		struct wire_op op = {
			.kind = (uint32_t)ops[i].kind, .key = ops[i].key, .ring = ops[i].ring,
			.read = ops[i].read ? 1 : 0,
			.desclen = ops[i].desc != NULL ? (uint32_t)strlen(ops[i].desc) : 0,
		};

		memcpy(buf + off, &op, sizeof(op));
		off += sizeof(op);
		if (op.desclen > 0)
			memcpy(buf + off, ops[i].desc, op.desclen);
		off += op.desclen;
	}
	*len = n;
	return buf;
}

/* Send all len bytes before the deadline, never raising SIGPIPE in the
 * host.  0, or -1 (errno set). */
static int
send_all(int fd, const char *p, size_t len, int64_t deadline)
{
	while (len > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		int64_t left = deadline - now_ms();
		ssize_t n;

		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -1;
	}
	return 0;
}

/* Start the helper with `fd` as its standard input and output, /dev/null as
 * its standard error, nothing else open, an empty environment and every
 * signal at its default.  0, or an errno value. */
static int
spawn_helper(const char *path, int fd, pid_t *pid)
{
	static char *const argv[] = { (char *)KH_KEYOPS_NAME, NULL };
	static char *const envp[] = { NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int rc;

	if ((rc = posix_spawn_file_actions_init(&fa)) != 0)
		return rc;
	if ((rc = posix_spawnattr_init(&attr)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return rc;
	}
	sigemptyset(&none);
	sigfillset(&all);
	if ((rc = posix_spawn_file_actions_adddup2(&fa, fd, STDIN_FILENO)) == 0 &&
	    (rc = posix_spawn_file_actions_adddup2(&fa, fd, STDOUT_FILENO)) == 0 &&
	    (rc = posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY,
						   0)) == 0 &&
#ifdef HAVE_POSIX_SPAWN_FILE_ACTIONS_ADDCLOSEFROM_NP
	    (rc = posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1)) == 0 &&
#endif
	    (rc = posix_spawnattr_setsigmask(&attr, &none)) == 0 &&
	    (rc = posix_spawnattr_setsigdefault(&attr, &all)) == 0 &&
	    (rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
					   POSIX_SPAWN_SETSIGDEF)) == 0)
		rc = posix_spawn(pid, path, &fa, &attr, argv, envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

int
kh_keyops_run(uid_t uid, const struct kh_keyop *ops, size_t nops,
	      struct kh_keyop_result **res, size_t *nres, kh_error *err)
{
	char path[PATH_MAX], *req;
	size_t req_len = 0;
	int64_t deadline;
	gid_t gid;
	pid_t pid;
	int sv[2], rc;

	*res = NULL;
	*nres = 0;
	if (geteuid() != 0 && (getuid() != uid || geteuid() != uid))
		return kh_fail(err, KH_ERR_PERM, "acting on another user's keys needs root");
	if (helper_path(path, sizeof(path)) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot locate %s", KH_KEYOPS_NAME);
	gid = geteuid() == 0 ? kh_asuser_account_gid(uid) : getgid();
	req = build_request(uid, gid, ops, nops, &req_len);
	if (req == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot build the keyring helper's request");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		free(req);
		return kh_fail(err, KH_ERR_INTERNAL, "socketpair: %s", strerror(errno));
	}
	rc = spawn_helper(path, sv[1], &pid);
	close(sv[1]);
	if (rc != 0) {
		free(req);
		close(sv[0]);
		return kh_fail(err, KH_ERR_INTERNAL, "cannot run %s: %s; is kubehsm completely "
			       "installed?", path, strerror(rc));
	}
	deadline = now_ms() + KH_KEYOPS_TIMEOUT_MS;
	rc = send_all(sv[0], req, req_len, deadline);
	free(req);   /* holds no secret */
	if (rc != 0)
		rc = kh_fail(err, KH_ERR_INTERNAL, "the keyring helper for uid %u did not take "
			     "its request: %s", (unsigned)uid, strerror(errno));
	else if (shutdown(sv[0], SHUT_WR) != 0)
		rc = kh_fail(err, KH_ERR_INTERNAL, "shutdown: %s", strerror(errno));
	else {
		struct reader *rd = malloc(sizeof(*rd));

		if (rd == NULL) {
			rc = kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		} else {
			rd->fd = sv[0];
			rd->deadline = deadline;
			rd->off = rd->len = 0;
			rc = read_results(rd, uid, path, nops, res, nres, err);
			reader_wipe(rd);
			free(rd);
		}
	}
	close(sv[0]);
	/* Its DONE, not its exit status, says the work is complete, and it
	 * has nothing left to do after it: killed either way, so that a helper
	 * its user stops between DONE and exit cannot hold the host in
	 * waitpid. */
	(void)kill(pid, SIGKILL);
	reap(pid);
	if (rc != 0) {
		kh_keyop_results_free(*res, *nres);
		*res = NULL;
		*nres = 0;
	}
	return rc;
}

void
kh_keyop_results_free(struct kh_keyop_result *res, size_t n)
{
	size_t i;

	if (res == NULL)
		return;
	for (i = 0; i < n; i++)
		if (res[i].payload != NULL)
			kh_secure_free(res[i].payload, res[i].len + 1);
	free(res);
}

const struct kh_keyop_result *
kh_keyop_result_of(const struct kh_keyop_result *res, size_t n, size_t op)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (res[i].op == op)
			return &res[i];
	return NULL;
}
