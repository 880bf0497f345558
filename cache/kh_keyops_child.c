/*
 * kh_keyops_child — the keyring helper's side of kh_keyops: the program
 * kubehsm-keyops (cache/kubehsm-keyops.c) runs this.
 *
 * It is started by kh_keyops_run with an empty environment, its standard
 * input and output on one socket to the caller and nothing else open.  It
 * reads the whole request (operations, uid, gid: nothing secret), fully
 * becomes the user — setgroups, setresgid, setresuid, each checked, then
 * verified with getres[ug]id — and only then touches a key.  It answers
 * one frame per result, all written together at the end, and exits; its
 * buffers are wiped first.
 *
 * Being a program of its own, started by exec, it carries none of the
 * caller's memory (a PAM host's PINs, PKCS#11 sessions, libcrypto state):
 * nothing of root's is in a process the user may signal.  It does nothing
 * but system calls and copies into static buffers.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

#include "cache/kh_cache_int.h"
#include "cache/kh_keyops_wire.h"
#include "lib/kh_io.h"

#define KH_KEYOPS_MAX_KEYS    2048     /* keys looked at in one SCAN */

/* The request, as read: static like everything the helper fills. */
static struct kh_keyop req_ops[KH_KEYOPS_MAX_OPS];
static char req_descs[KH_KEYOPS_MAX_OPS][KH_KEYOPS_DESC_MAX];

/* The helper's buffers: static, so it allocates nothing. */
static char child_payload[KH_KEYOPS_PAYLOAD_MAX];
static char child_describe[512];
static key_serial_t child_keys[KH_KEYOPS_MAX_KEYS];

/*
 * The answers go out together: the caller sent every operation up front
 * and only reads, so frames written one by one would only wake it once
 * per frame.  They are collected here (key payloads too: wiped at each
 * flush) and written when full and at the end.
 */
static char child_out[2 * KH_KEYOPS_PAYLOAD_MAX];
static size_t child_out_len;

static int
child_flush(int fd)
{
	int rc = child_out_len > 0 ? kh_write_all(fd, child_out, child_out_len) : 0;

	explicit_bzero(child_out, child_out_len);
	child_out_len = 0;
	return rc;
}

static int
child_put(int fd, const void *p, size_t len)
{
	if (len > sizeof(child_out) - child_out_len && child_flush(fd) != 0)
		return -1;
	if (len > sizeof(child_out))
		return kh_write_all(fd, p, len);
	memcpy(child_out + child_out_len, p, len);
	child_out_len += len;
	return 0;
}

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

	if (child_put(fd, &h, sizeof(h)) != 0 ||
	    (h.desclen > 0 && child_put(fd, desc, h.desclen) != 0) ||
	    (h.len > 0 && child_put(fd, payload, h.len) != 0))
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

/* The request as it arrives, in as few reads as the caller's writes allow
 * (it sends the whole request at once).  Nothing in it is secret. */
static char child_in[4096];
static size_t child_in_off, child_in_len;

/* Read exactly len bytes (blocking: the caller keeps the deadline). */
static int
child_read_exact(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		size_t k;

		if (child_in_off == child_in_len) {
			ssize_t n = read(fd, child_in, sizeof(child_in));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return -1;
			child_in_off = 0;
			child_in_len = (size_t)n;
		}
		k = child_in_len - child_in_off < len ? child_in_len - child_in_off : len;
		memcpy(p, child_in + child_in_off, k);
		child_in_off += k;
		p += k;
		len -= k;
	}
	return 0;
}

/* The request: 0, or an errno-style reason (EPROTO: another protocol). */
static int
child_read_request(int fd, uid_t *uid, gid_t *gid, size_t *nops)
{
	struct wire_request rq;
	struct wire_op op;
	size_t i;

	if (child_read_exact(fd, &rq, sizeof(rq)) != 0)
		return EIO;
	if (rq.magic != WIRE_MAGIC || rq.version != WIRE_VERSION)
		return EPROTO;
	if (rq.nops > KH_KEYOPS_MAX_OPS || rq.uid == (uint32_t)-1 || rq.gid == (uint32_t)-1)
		return EINVAL;
	for (i = 0; i < rq.nops; i++) {
		if (child_read_exact(fd, &op, sizeof(op)) != 0)
			return EIO;
		if (op.desclen >= KH_KEYOPS_DESC_MAX ||
		    child_read_exact(fd, req_descs[i], op.desclen) != 0)
			return EINVAL;
		req_descs[i][op.desclen] = '\0';
		req_ops[i] = (struct kh_keyop){
			.kind = (enum kh_keyop_kind)op.kind, .key = op.key, .ring = op.ring,
			.desc = req_descs[i], .read = op.read != 0,
		};
	}
	*uid = (uid_t)rq.uid;
	*gid = (gid_t)rq.gid;
	*nops = rq.nops;
	return 0;
}

int
kh_keyops_serve(int fd)
{
	pid_t parent = getppid();
	size_t nops = 0, i;
	uid_t uid = 0;
	gid_t gid = 0;
	int e;

	e = child_read_request(fd, &uid, &gid, &nops);
	if (e == 0)
		e = child_become(uid, gid);
	if (e != 0) {
		if (child_send(fd, WIRE_SETUP, e, 0, 0, 0, NULL, NULL, 0) == 0)
			(void)child_flush(fd);
		return 1;
	}
	/* Never dumped, never traced by the user it now is (the kernel made it
	 * so when the ids changed, unless fs.suid_dumpable says otherwise; the
	 * helper holds nothing of root's either way); and gone with the caller
	 * (set after becoming the user: a change of ids clears it), unless the
	 * caller is gone already. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent)
		return 1;
	for (i = 0; i < nops; i++)
		if (child_run_op(fd, i, &req_ops[i], uid) != 0)
			break;
	explicit_bzero(child_payload, sizeof(child_payload));
	if (i < nops) {
		/* The caller reads what there is, then finds no DONE. */
		(void)child_flush(fd);
		return 1;
	}
	return child_send(fd, WIRE_DONE, 0, 0, 0, 0, NULL, NULL, 0) == 0 &&
	       child_flush(fd) == 0 ? 0 : 1;
}
