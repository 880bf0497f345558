/*
 * kh_keyops — root's operations on a user's keys, run in a child that
 * fully becomes the user (see kh_keyops.h for why).
 *
 * The child does nothing but system calls and copies into buffers that
 * existed before the fork (no malloc, no stdio), so it is safe whatever
 * the host process was doing in other threads.  It writes one framed
 * answer per result to a pipe; the parent reads them with a deadline and
 * bounds every length it is told.  A child that hangs (a user may SIGSTOP
 * a process of their own uid) is killed at the deadline.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache/kh_cache_int.h"
#include "lib/kh_io.h"
#include "cache/kh_keyops.h"
#include "lib/kh_mem.h"

#define KH_KEYOPS_PAYLOAD_MAX 8192     /* a record is at most 6144 bytes */
#define KH_KEYOPS_MAX_RESULTS 1024
#define KH_KEYOPS_MAX_KEYS    2048     /* keys looked at in one SCAN */
#define KH_KEYOPS_TIMEOUT_MS  10000
#define KH_NOGROUP            65534

#define WIRE_MAGIC 0x4b484b4fu         /* "KHKO" */
#define WIRE_DONE  UINT32_MAX          /* the child finished every operation */
#define WIRE_SETUP (UINT32_MAX - 1)    /* the child could not become the user */

struct wire_head {
	uint32_t magic;
	uint32_t op;
	int32_t err;
	int32_t key;
	uint32_t owner;
	uint32_t perm;
	uint32_t desclen;
	uint32_t len;
};

/* ---- the child ------------------------------------------------------------ */

/* Buffers the child fills: they exist before the fork, so the child
 * allocates nothing.  The parent never touches them. */
static char child_payload[KH_KEYOPS_PAYLOAD_MAX];
static char child_describe[512];
static key_serial_t child_keys[KH_KEYOPS_MAX_KEYS];

static int
child_send(int fd, uint32_t op, int err, key_serial_t key, uid_t owner,
	   key_perm_t perm, const char *desc, const char *payload, size_t len)
{
	struct wire_head h = {
		.magic = WIRE_MAGIC, .op = op, .err = err, .key = key,
		.owner = owner, .perm = perm,
		.desclen = desc ? (uint32_t)strnlen(desc, KH_KEYOPS_DESC_MAX - 1) : 0,
		.len = payload ? (uint32_t)len : 0,
	};

	if (kh_write_all(fd, &h, sizeof(h)) != 0 ||
	    (h.desclen > 0 && kh_write_all(fd, desc, h.desclen) != 0) ||
	    (h.len > 0 && kh_write_all(fd, payload, h.len) != 0))
		return -1;
	return 0;
}

/* Owner and permissions from a "keyring;uid;gid;perm;description" text. */
static int
child_parse_keyring(const char *text, uid_t *owner, key_perm_t *perm)
{
	char *end;
	unsigned long v;

	if (strncmp(text, "keyring;", 8) != 0)
		return -1;
	v = strtoul(text + 8, &end, 10);
	if (end == text + 8 || *end != ';' || v > UINT32_MAX)
		return -1;
	*owner = (uid_t)v;
	end = strchr(end + 1, ';');
	if (end == NULL)
		return -1;
	v = strtoul(end + 1, &end, 16);
	if (*end != ';' || v > UINT32_MAX)
		return -1;
	*perm = (key_perm_t)v;
	return 0;
}

/* describe `key` into owner/perm/desc; errno-style result. */
static int
child_describe_key(key_serial_t key, uid_t *owner, key_perm_t *perm, char *desc,
		   size_t desclen)
{
	long n = keyctl_describe(key, child_describe, sizeof(child_describe));

	if (n < 0)
		return errno;
	if ((size_t)n > sizeof(child_describe))
		return ENAMETOOLONG;
	child_describe[sizeof(child_describe) - 1] = '\0';
	if (kh_cache_parse_description(child_describe, owner, perm, desc, desclen) != 0)
		return EINVAL;
	return 0;
}

/* Read `key` into child_payload; errno-style result, *len its size. */
static int
child_read_key(key_serial_t key, size_t *len)
{
	long n = keyctl_read(key, child_payload, sizeof(child_payload));

	if (n < 0)
		return errno;
	if ((size_t)n > sizeof(child_payload))
		return EFBIG;
	*len = (size_t)n;
	return 0;
}

static int
child_describe_op(int fd, size_t i, key_serial_t key)
{
	char desc[KH_KEYOPS_DESC_MAX] = "";
	uid_t owner = (uid_t)-1;
	key_perm_t perm = 0;
	int e = child_describe_key(key, &owner, &perm, desc, sizeof(desc));

	return child_send(fd, (uint32_t)i, e, key, owner, perm, desc, NULL, 0);
}

static int
child_read_op(int fd, size_t i, key_serial_t key)
{
	char desc[KH_KEYOPS_DESC_MAX] = "";
	uid_t owner = (uid_t)-1;
	key_perm_t perm = 0;
	size_t len = 0;
	int e = child_describe_key(key, &owner, &perm, desc, sizeof(desc));

	if (e == 0)
		e = child_read_key(key, &len);
	return child_send(fd, (uint32_t)i, e, key, owner, perm, desc,
			  e == 0 ? child_payload : NULL, len);
}

/* SCAN and DROP: the keys directly in op->ring. */
static int
child_scan_op(int fd, size_t i, const struct kh_keyop *op, uid_t self)
{
	long n = keyctl_read(op->ring, (char *)child_keys, sizeof(child_keys));
	size_t count, k, plen = strlen(op->desc);

	if (n < 0)
		return child_send(fd, (uint32_t)i, errno, op->ring, 0, 0, NULL, NULL, 0);
	count = (size_t)n / sizeof(key_serial_t);
	if (count > KH_KEYOPS_MAX_KEYS)
		count = KH_KEYOPS_MAX_KEYS;
	for (k = 0; k < count; k++) {
		char desc[KH_KEYOPS_DESC_MAX];
		key_serial_t key = child_keys[k];
		uid_t owner;
		key_perm_t perm;
		size_t len = 0;
		int e;

		if (child_describe_key(key, &owner, &perm, desc, sizeof(desc)) != 0)
			continue;   /* not a user key, or not ours to see */
		if (op->kind == KH_KEYOP_DROP) {
			if (strcmp(desc, op->desc) != 0 || owner != self)
				continue;
			e = keyctl_invalidate(key) == 0 ? 0 : errno;
			if (child_send(fd, (uint32_t)i, e, key, owner, perm, desc, NULL, 0) != 0)
				return -1;
			continue;
		}
		if (strncmp(desc, op->desc, plen) != 0)
			continue;
		e = op->read ? child_read_key(key, &len) : 0;
		if (child_send(fd, (uint32_t)i, e, key, owner, perm, desc,
			       op->read && e == 0 ? child_payload : NULL, len) != 0)
			return -1;
	}
	return 0;
}

/* GUARD: possessors keep view/read/search/link of the ring, nothing more;
 * its owner gets everything (a session keyring's owner bits lack write by
 * default, which its processes had only through possession). */
static int
child_guard_op(int fd, size_t i, key_serial_t ring, uid_t self)
{
	char text[512];
	key_perm_t perm = 0, want;
	uid_t owner;
	long n = keyctl_describe(ring, text, sizeof(text));
	int e = 0;

	if (n < 0)
		e = errno;
	else if ((size_t)n > sizeof(text) || child_parse_keyring(text, &owner, &perm) != 0)
		e = EINVAL;
	else if (owner != self)
		e = EPERM;   /* not the user's: never re-permission another's keyring */
	if (e == 0) {
		want = (perm & ~(key_perm_t)(KEY_POS_WRITE | KEY_POS_SETATTR)) | KEY_USR_ALL;
		if (want != perm && keyctl_setperm(ring, want) != 0)
			e = errno;
		perm = want;
	}
	return child_send(fd, (uint32_t)i, e, ring, self, perm, NULL, NULL, 0);
}

static int
child_run_op(int fd, size_t i, const struct kh_keyop *op, uid_t self)
{
	int e;

	switch (op->kind) {
	case KH_KEYOP_DESCRIBE:
		return child_describe_op(fd, i, op->key);
	case KH_KEYOP_READ:
		return child_read_op(fd, i, op->key);
	case KH_KEYOP_LINK:
		e = keyctl_link(op->key, op->ring) == 0 ? 0 : errno;
		return child_send(fd, (uint32_t)i, e, op->key, 0, 0, NULL, NULL, 0);
	case KH_KEYOP_INVALIDATE:
		e = keyctl_invalidate(op->key) == 0 ? 0 : errno;
		return child_send(fd, (uint32_t)i, e, op->key, 0, 0, NULL, NULL, 0);
	case KH_KEYOP_SCAN:
	case KH_KEYOP_DROP:
		return child_scan_op(fd, i, op, self);
	case KH_KEYOP_GUARD:
		return child_guard_op(fd, i, op->ring, self);
	}
	return child_send(fd, (uint32_t)i, EINVAL, 0, 0, 0, NULL, NULL, 0);
}

/* Become uid/gid for good and check it took.  A user acting on their own
 * keys has nothing to become.  errno-style result. */
static int
child_become(uid_t uid, gid_t gid)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;

	if (getuid() != uid || geteuid() != uid) {
		if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
		    setresuid(uid, uid, uid) != 0)
			return errno;
		if (getresgid(&rg, &eg, &sg) != 0 || rg != gid || eg != gid || sg != gid)
			return EPERM;
	}
	if (getresuid(&r, &e, &s) != 0 || r != uid || e != uid || s != uid)
		return EPERM;
	return 0;
}

/* Become the user; then the operations.  Never returns. */
static void __attribute__((noreturn))
child_main(int fd, uid_t uid, gid_t gid, const struct kh_keyop *ops, size_t nops)
{
	size_t i;
	int e;

	/* Die with the host; never dump the host's memory we inherited. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	(void)prctl(PR_SET_DUMPABLE, 0);
	(void)signal(SIGPIPE, SIG_DFL);
	e = child_become(uid, gid);
	if (e != 0) {
		(void)child_send(fd, WIRE_SETUP, e, 0, 0, 0, NULL, NULL, 0);
		_exit(1);
	}
	for (i = 0; i < nops; i++)
		if (child_run_op(fd, i, &ops[i], uid) != 0)
			_exit(1);
	explicit_bzero(child_payload, sizeof(child_payload));
	(void)child_send(fd, WIRE_DONE, 0, 0, 0, 0, NULL, NULL, 0);
	_exit(0);
}

/* ---- the parent ----------------------------------------------------------- */

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read exactly len bytes before the deadline.  0, or -1 (errno set). */
static int
read_exact(int fd, void *buf, size_t len, int64_t deadline)
{
	char *p = buf;

	while (len > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - now_ms();
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
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EPIPE;   /* the child ended early */
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static gid_t
account_gid(uid_t uid)
{
	struct passwd pw, *found = NULL;
	size_t size = 4096;
	gid_t gid = KH_NOGROUP;
	char *buf = NULL;
	int rc;

	for (;;) {
		char *nb = realloc(buf, size);

		if (nb == NULL)
			break;
		buf = nb;
		rc = getpwuid_r(uid, &pw, buf, size, &found);
		if (rc == ERANGE && size < (1u << 20)) {
			size *= 2;
			continue;
		}
		if (rc == 0 && found != NULL)
			gid = pw.pw_gid;
		break;
	}
	free(buf);
	return gid;
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
read_results(int fd, uid_t uid, size_t nops, struct kh_keyop_result **res,
	     size_t *n, kh_error *err)
{
	int64_t deadline = now_ms() + KH_KEYOPS_TIMEOUT_MS;
	size_t cap = 0;

	for (;;) {
		struct kh_keyop_result *r;
		struct wire_head h;

		if (read_exact(fd, &h, sizeof(h), deadline) != 0)
			return kh_fail(err, KH_ERR_INTERNAL, "the keyring helper for uid %u "
				       "did not finish: %s", (unsigned)uid, strerror(errno));
		if (h.magic != WIRE_MAGIC || h.desclen >= KH_KEYOPS_DESC_MAX ||
		    h.len > KH_KEYOPS_PAYLOAD_MAX)
			return kh_fail(err, KH_ERR_INTERNAL, "the keyring helper for uid %u "
				       "sent a malformed answer", (unsigned)uid);
		if (h.op == WIRE_DONE)
			return 0;
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
		if (read_exact(fd, r->desc, h.desclen, deadline) != 0)
			return kh_fail(err, KH_ERR_INTERNAL, "keyring helper: %s", strerror(errno));
		r->desc[h.desclen] = '\0';
		if (h.len == 0)
			continue;
		r->payload = malloc((size_t)h.len + 1);
		if (r->payload == NULL)
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		r->len = h.len;
		if (read_exact(fd, r->payload, h.len, deadline) != 0)
			return kh_fail(err, KH_ERR_INTERNAL, "keyring helper: %s", strerror(errno));
		r->payload[h.len] = '\0';
	}
}

/* Reap the child; a host that reaps every child itself (SIGCHLD handler,
 * SIG_IGN) leaves ECHILD, which is fine: the answers already arrived. */
static int
reap(pid_t pid)
{
	int status;

	for (;;) {
		if (waitpid(pid, &status, 0) == pid)
			return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
		if (errno == ECHILD)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

int
kh_keyops_run(uid_t uid, const struct kh_keyop *ops, size_t nops,
	      struct kh_keyop_result **res, size_t *nres, kh_error *err)
{
	gid_t gid;
	pid_t pid;
	int fds[2], rc;

	*res = NULL;
	*nres = 0;
	if (geteuid() != 0 && (getuid() != uid || geteuid() != uid))
		return kh_fail(err, KH_ERR_PERM, "acting on another user's keys needs root");
	gid = geteuid() == 0 ? account_gid(uid) : getgid();
	if (pipe2(fds, O_CLOEXEC) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return kh_fail(err, KH_ERR_INTERNAL, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		close(fds[0]);
		child_main(fds[1], uid, gid, ops, nops);
	}
	close(fds[1]);
	rc = read_results(fds[0], uid, nops, res, nres, err);
	close(fds[0]);
	if (rc != 0)
		(void)kill(pid, SIGKILL);
	if (reap(pid) != 0 && rc == 0)
		rc = kh_fail(err, KH_ERR_INTERNAL, "the keyring helper for uid %u failed",
			     (unsigned)uid);
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
