/*
 * kh_cache — session records in the kernel keyring.
 *
 * How a record reaches the user (root side):
 *   1. root adds the key to a private staging keyring hanging off its
 *      thread keyring, so no other process can reach it yet;
 *   2. sets the kernel timeout (needs setattr, which root still has);
 *   3. chowns it to the user — the kernel moves the quota charge, so a
 *      full quota fails here, before anything visible has changed;
 *   4. sets the final permissions (possessor+user read-only);
 *   5. links it into the destination keyring, displacing the earlier
 *      record of the same description in one atomic keyring edit;
 *   6. drops the staging keyring.
 * For scope "user" the destination is the uid's user keyring.  The kernel
 * resolves KEY_SPEC_USER_KEYRING from the *real* uid and checks permissions
 * against the fs (effective) uid, so for every operation on a user's keyring
 * root takes the user's real and effective uid, keeping root as saved uid to
 * return (as pam_keyinit does).  Acting with the user's own permissions,
 * rather than through possession, works whatever session keyring the
 * calling process has.
 *
 * The reader (the user) finds the key, then checks what the kernel says of
 * it (owner, permissions) before it trusts a byte of the payload.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <keyutils.h>

#include "kh_cache.h"
#include "kh_mem.h"

#define KH_DESC_MAX 96
#define KH_ENDED_MIN_TIMEOUT 60
#define KH_READ_RETRIES 3
#define KH_QUOTA_RETRIES 24     /* ~3 s of backoff in all */

/* Any of these bits would let the holder change the record. */
#define KH_PERM_MUTATE (KEY_POS_WRITE | KEY_POS_SETATTR | KEY_USR_WRITE | KEY_USR_SETATTR)
#define KH_PERM_OTHERS (KEY_GRP_ALL | KEY_OTH_ALL)

static int64_t
now_seconds(void)
{
	return (int64_t)time(NULL);
}

/* Map a keyctl errno to one clear error. */
static int
keyring_fail(kh_error *err, int e, const char *what)
{
	switch (e) {
	case ENOSYS:
	case EOPNOTSUPP:
	case EPERM:
		return kh_fail(err, KH_ERR_UNSUPPORTED,
			       "the kernel refused a keyring call (%s: %s); kubehsm keeps sessions "
			       "only in the kernel keyring, which this container or sandbox blocks",
			       what, strerror(e));
	case EDQUOT:
		return kh_fail(err, KH_ERR_QUOTA,
			       "the user's kernel key quota is full (%s); the previous session "
			       "was kept; see /proc/key-users and kernel.keys.maxbytes", what);
	case EACCES:
		return kh_fail(err, KH_ERR_PERM, "%s: permission denied by the kernel keyring", what);
	default:
		return kh_fail(err, KH_ERR_INTERNAL, "%s: %s", what, strerror(e));
	}
}

/* ---- real-uid switching (root only) ------------------------------------ */

struct ruid_switch {
	uid_t ruid, euid, suid;
	int active;
};

static int
ruid_switch_to(uid_t uid, struct ruid_switch *s, kh_error *err)
{
	s->active = 0;
	if (getresuid(&s->ruid, &s->euid, &s->suid) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "getresuid: %s", strerror(errno));
	if (s->ruid == uid && s->euid == uid)
		return 0;
	if (setresuid(uid, uid, (uid_t)-1) != 0)
		return kh_fail(err, KH_ERR_PERM, "cannot act on uid %u's keyring: %s",
			       (unsigned)uid, strerror(errno));
	s->active = 1;
	return 0;
}

static int
ruid_restore(struct ruid_switch *s, kh_error *err)
{
	if (!s->active)
		return 0;
	s->active = 0;
	if (setresuid(s->ruid, s->euid, (uid_t)-1) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot restore the real uid: %s",
			       strerror(errno));
	return 0;
}

/* ---- per-uid lock for login accounting --------------------------------- */

static int
lock_uid(uid_t uid, kh_error *err)
{
	char path[sizeof(KH_RUNDIR) + 32];
	struct stat st;
	int fd;

	if (mkdir(KH_RUNDIR, 0700) != 0 && errno != EEXIST)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot create %s: %s", KH_RUNDIR, strerror(errno));
	if (lstat(KH_RUNDIR, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022) != 0)
		return kh_fail(err, KH_ERR_PERM, "%s must be a root-owned directory not writable "
			       "by others", KH_RUNDIR);
	(void)snprintf(path, sizeof(path), "%s/%u.lock", KH_RUNDIR, (unsigned)uid);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot open %s: %s", path, strerror(errno));
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			close(fd);
			return kh_fail(err, KH_ERR_INTERNAL, "cannot lock %s: %s", path, strerror(errno));
		}
	}
	return fd;
}

static void
unlock_uid(int fd)
{
	if (fd >= 0)
		close(fd);   /* releases the flock */
}

/* ---- the root-side hand-off -------------------------------------------- */

struct handoff {
	const char *desc;
	const void *payload;
	size_t len;
	uid_t uid;
	long timeout;
	key_perm_t perm;
	enum kh_scope scope;
};

static int
link_into_destination(key_serial_t key, const struct handoff *h, kh_error *err)
{
	struct ruid_switch sw;
	int rc, e;

	if (h->scope == KH_SCOPE_SESSION) {
		if (keyctl_link(key, KEY_SPEC_SESSION_KEYRING) != 0)
			return keyring_fail(err, errno, "linking into the login's session keyring");
		return 0;
	}
	if (ruid_switch_to(h->uid, &sw, err) != 0)
		return -1;
	rc = keyctl_link(key, KEY_SPEC_USER_KEYRING);
	e = errno;
	if (ruid_restore(&sw, err) != 0)
		return -1;
	if (rc != 0)
		return keyring_fail(err, e, "linking into the user keyring");
	return 0;
}

/*
 * The kernel frees a displaced record asynchronously (key garbage
 * collection), so right after a replacement the old record may still be
 * charged to the user.  A quota failure that is only that backlog clears
 * within milliseconds (seconds on a machine under heavy load); a quota that
 * is really full fails after ~3 s.
 */
static int
chown_to_user(key_serial_t key, uid_t uid)
{
	struct timespec pause = { 0, 0 };
	int attempt;

	for (attempt = 0; attempt < KH_QUOTA_RETRIES; attempt++) {
		if (keyctl_chown(key, uid, (gid_t)-1) == 0)
			return 0;
		if (errno != EDQUOT)
			return -1;
		pause.tv_nsec = 10000000L * (attempt + 1);   /* 10, 20, ... ms */
		(void)nanosleep(&pause, NULL);
	}
	errno = EDQUOT;
	return -1;
}

/* Steps 1–6 above.  On any failure nothing visible to the user changed. */
static key_serial_t
hand_off(const struct handoff *h, kh_error *err)
{
	key_serial_t stage, key = -1;

	stage = add_key("keyring", "kubehsm:staging", NULL, 0, KEY_SPEC_THREAD_KEYRING);
	if (stage < 0)
		return keyring_fail(err, errno, "creating a staging keyring");
	key = add_key("user", h->desc, h->payload, h->len, stage);
	if (key < 0) {
		keyring_fail(err, errno, "adding the session key");
		goto out;
	}
	if (keyctl_set_timeout(key, (unsigned)h->timeout) != 0 ||
	    chown_to_user(key, h->uid) != 0 ||
	    keyctl_setperm(key, h->perm) != 0) {
		keyring_fail(err, errno, "handing the session key to the user");
		(void)keyctl_invalidate(key);
		key = -1;
		goto out;
	}
	if (link_into_destination(key, h, err) != 0) {
		(void)keyctl_invalidate(key);
		key = -1;
	}
out:
	(void)keyctl_invalidate(stage);
	return key;
}

static long
seconds_left(int64_t expires, kh_error *err)
{
	int64_t left = expires - now_seconds();

	if (left <= 0) {
		kh_fail(err, KH_ERR_EXPIRED, "the session would already be expired");
		return -1;
	}
	if (left > UINT32_MAX)
		left = UINT32_MAX;
	return (long)left;
}

/* ---- finding keys ------------------------------------------------------- */

/* The reader looks in its session keyring first (session scope, or the
 * user keyring linked beneath it), then in the user keyring directly: a
 * process without a session keyring of its own (su, cron) still finds a
 * user-scope record.  A session keyring it may not search is not an error. */
static key_serial_t
search_for_reader(const char *desc, int *last_errno)
{
	key_serial_t k;

	k = keyctl_search(KEY_SPEC_SESSION_KEYRING, "user", desc, 0);
	if (k >= 0)
		return k;
	*last_errno = errno;
	if (errno == EKEYEXPIRED || errno == EKEYREVOKED)
		return -1;
	k = keyctl_search(KEY_SPEC_USER_KEYRING, "user", desc, 0);
	if (k < 0)
		*last_errno = errno;
	return k;
}

/* Parse "type;uid;gid;perm;description" from keyctl_describe. */
static int
describe_key(key_serial_t key, uid_t *uid, key_perm_t *perm, char *desc,
	     size_t desclen, kh_error *err)
{
	char *text = NULL, *p, *end;
	unsigned long v;
	int rc = -1;

	if (keyctl_describe_alloc(key, &text) < 0)
		return keyring_fail(err, errno, "describing the session key");
	p = strchr(text, ';');
	if (p == NULL || strncmp(text, "user;", 5) != 0)
		goto bad;
	p++;
	errno = 0;
	v = strtoul(p, &end, 10);
	if (errno != 0 || *end != ';' || v > UINT32_MAX)
		goto bad;
	*uid = (uid_t)v;
	p = strchr(end + 1, ';');   /* skip gid */
	if (p == NULL)
		goto bad;
	v = strtoul(p + 1, &end, 16);
	if (*end != ';')
		goto bad;
	*perm = (key_perm_t)v;
	if (desc != NULL && snprintf(desc, desclen, "%s", end + 1) >= (int)desclen)
		goto bad;
	rc = 0;
	goto out;
bad:
	kh_fail(err, KH_ERR_REFUSED, "unexpected key description from the kernel");
out:
	free(text);
	return rc;
}

/* What the kernel says of the key must match what the writer set. */
static int
check_key_attributes(key_serial_t key, uid_t owner, kh_error *err)
{
	key_perm_t perm;
	uid_t uid;

	if (describe_key(key, &uid, &perm, NULL, 0, err) != 0)
		return -1;
	if (uid != owner)
		return kh_fail(err, KH_ERR_REFUSED,
			       "the session key is owned by uid %u, not %u; not using it",
			       (unsigned)uid, (unsigned)owner);
	if ((perm & KH_PERM_MUTATE) != 0)
		return kh_fail(err, KH_ERR_REFUSED,
			       "the session key is writable (permissions %08x); not using it",
			       (unsigned)perm);
	if ((perm & KH_PERM_OTHERS) != 0)
		return kh_fail(err, KH_ERR_REFUSED,
			       "the session key is visible to other users (permissions %08x); "
			       "not using it", (unsigned)perm);
	return 0;
}

/* Read a key's payload into a buffer we own (and wipe). */
static int
read_payload(key_serial_t key, char **buf, size_t *len, kh_error *err)
{
	long size, got;
	int tries;

	for (tries = 0; tries < KH_READ_RETRIES; tries++) {
		size = keyctl_read(key, NULL, 0);
		if (size < 0)
			return keyring_fail(err, errno, "reading the session key");
		if (size == 0 || size > KH_RECORD_MAX)
			return kh_fail(err, KH_ERR_REFUSED,
				       "session record size %ld is outside 1..%d bytes",
				       size, KH_RECORD_MAX);
		*buf = malloc((size_t)size + 1);
		if (*buf == NULL)
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		got = keyctl_read(key, *buf, (size_t)size);
		if (got == size) {
			(*buf)[size] = '\0';
			*len = (size_t)size;
			return 0;
		}
		kh_secure_free(*buf, (size_t)size + 1);
		*buf = NULL;
		if (got < 0)
			return keyring_fail(err, errno, "reading the session key");
	}
	return kh_fail(err, KH_ERR_REFUSED, "the session key kept changing while read");
}

/* Read, check and decode the record behind key for owner (at time now). */
static int
load_record(key_serial_t key, uid_t owner, const char *issuer_id,
	    struct kh_record **out, kh_error *err)
{
	struct kh_record *rec = NULL;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (check_key_attributes(key, owner, err) != 0)
		return -1;
	if (read_payload(key, &buf, &len, err) != 0)
		return -1;
	rc = kh_record_decode(buf, len, &rec, err);
	kh_secure_free(buf, len + 1);
	if (rc != 0)
		return -1;
	if (strcmp(rec->issuer_id, issuer_id) != 0) {
		kh_record_free(rec);
		return kh_fail(err, KH_ERR_REFUSED, "session record is for another issuer");
	}
	if (kh_record_check(rec, owner, now_seconds(), err) != 0) {
		kh_record_free(rec);
		return -1;
	}
	*out = rec;
	return 0;
}

/* ---- store -------------------------------------------------------------- */

static int
store_key(const char *kind, const struct kh_record *rec, const void *payload,
	  size_t len, kh_error *err)
{
	char desc[KH_DESC_MAX];
	struct handoff h;
	long timeout;

	if (kh_record_description(kind, rec->issuer_id, desc, sizeof(desc), err) != 0)
		return -1;
	timeout = seconds_left(rec->expires, err);
	if (timeout < 0)
		return -1;
	h = (struct handoff){ .desc = desc, .payload = payload, .len = len,
			      .uid = rec->uid, .timeout = timeout,
			      .perm = KH_CACHE_PERM, .scope = rec->scope };
	return hand_off(&h, err) < 0 ? -1 : 0;
}

/*
 * Root acting on a user's keys: for scope user, with the user's uids (see
 * the top of this file); for scope session, the login's session keyring is
 * root's own, so possession already grants what is needed.
 */
static int
act_as_user(uid_t uid, enum kh_scope scope, struct ruid_switch *sw, kh_error *err)
{
	sw->active = 0;
	if (scope == KH_SCOPE_SESSION)
		return 0;
	return ruid_switch_to(uid, sw, err);
}

static key_serial_t
scope_search(enum kh_scope scope, const char *desc)
{
	return keyctl_search(scope == KH_SCOPE_SESSION ? KEY_SPEC_SESSION_KEYRING
			     : KEY_SPEC_USER_KEYRING, "user", desc, 0);
}

/* Invalidate the key of this kind, if any.  Call while acting as the user. */
static void
drop_kind(enum kh_scope scope, const char *kind, const char *issuer_id)
{
	char desc[KH_DESC_MAX];
	key_serial_t k;

	if (kh_record_description(kind, issuer_id, desc, sizeof(desc), NULL) != 0)
		return;
	k = scope_search(scope, desc);
	if (k >= 0)
		(void)keyctl_invalidate(k);
}

static void
root_drop(uid_t uid, enum kh_scope scope, const char *kind, const char *issuer_id)
{
	struct ruid_switch sw;

	if (act_as_user(uid, scope, &sw, NULL) != 0)
		return;
	drop_kind(scope, kind, issuer_id);
	(void)ruid_restore(&sw, NULL);
}

static int
store_record(const struct kh_record *rec, kh_error *err)
{
	char *payload = NULL;
	size_t len = 0;
	int rc;

	if (kh_record_encode(rec, &payload, &len, err) != 0)
		return -1;
	rc = store_key("session", rec, payload, len, err);
	kh_secure_free(payload, len + 1);
	return rc;
}

int
kh_cache_store(const struct kh_record *rec, const char *pin, kh_error *err)
{
	int rc = 0;

	if (geteuid() != 0)
		return kh_fail(err, KH_ERR_PERM, "storing a session needs root");
	if (store_record(rec, err) != 0)
		return -1;
	/* The PIN lives in its own key so the record never carries it; without
	 * cache_pin an older PIN key must not outlive the policy change. */
	if (pin != NULL)
		rc = store_key("pin", rec, pin, strlen(pin), err);
	else
		root_drop(rec->uid, rec->scope, "pin", rec->issuer_id);
	root_drop(rec->uid, rec->scope, "ended", rec->issuer_id);
	return rc;
}

/* ---- login accounting --------------------------------------------------- */

/* The uid's current valid record in a scope, or NULL (root). */
static struct kh_record *
root_load(uid_t uid, enum kh_scope scope, const char *issuer_id, key_serial_t *key)
{
	char desc[KH_DESC_MAX];
	struct kh_record *rec = NULL;
	struct ruid_switch sw;
	key_serial_t k;

	if (kh_record_description("session", issuer_id, desc, sizeof(desc), NULL) != 0)
		return NULL;
	if (act_as_user(uid, scope, &sw, NULL) != 0)
		return NULL;
	k = scope_search(scope, desc);
	if (k >= 0 && load_record(k, uid, issuer_id, &rec, NULL) != 0)
		rec = NULL;
	if (ruid_restore(&sw, NULL) != 0) {
		kh_record_free(rec);
		return NULL;
	}
	if (rec != NULL && key != NULL)
		*key = k;
	return rec;
}

int
kh_cache_login(struct kh_record *rec, const char *pin, kh_error *err)
{
	struct kh_record *prev;
	int fd, rc;

	if (geteuid() != 0)
		return kh_fail(err, KH_ERR_PERM, "storing a session needs root");
	fd = lock_uid(rec->uid, err);
	if (fd < 0)
		return -1;
	prev = rec->scope == KH_SCOPE_USER ? root_load(rec->uid, rec->scope, rec->issuer_id, NULL)
					   : NULL;
	/* A previous record of another user (a reused uid) is not a login of
	 * this one: it is replaced, not counted. */
	rec->logins = prev != NULL && strcmp(prev->user, rec->user) == 0 &&
		      prev->logins < 100000 ? prev->logins + 1 : 1;
	kh_record_free(prev);
	rc = kh_cache_store(rec, pin, err);
	unlock_uid(fd);
	return rc;
}

static int
mark_ended(uid_t uid, enum kh_scope scope, const char *issuer_id, int64_t until,
	   kh_error *err)
{
	char desc[KH_DESC_MAX], payload[64];
	struct handoff h;
	int64_t left = until - now_seconds();
	int n;

	if (kh_record_description("ended", issuer_id, desc, sizeof(desc), err) != 0)
		return -1;
	n = snprintf(payload, sizeof(payload), "revoked %" PRId64, now_seconds());
	if (left < KH_ENDED_MIN_TIMEOUT)
		left = KH_ENDED_MIN_TIMEOUT;
	if (left > UINT32_MAX)
		left = UINT32_MAX;
	h = (struct handoff){ .desc = desc, .payload = payload, .len = (size_t)n,
			      .uid = uid, .timeout = (long)left,
			      .perm = KH_CACHE_PERM, .scope = scope };
	return hand_off(&h, err) < 0 ? -1 : 0;
}

/* Invalidate (root): the record, any PIN key, and leave an "ended" marker. */
static int
root_revoke(uid_t uid, enum kh_scope scope, const char *issuer_id,
	    key_serial_t key, int64_t expires, kh_error *err)
{
	struct ruid_switch sw;
	int rc = 0, e = 0;

	if (act_as_user(uid, scope, &sw, err) != 0)
		return -1;
	if (keyctl_invalidate(key) != 0) {
		e = errno;
		rc = -1;
	} else {
		drop_kind(scope, "pin", issuer_id);
	}
	if (ruid_restore(&sw, err) != 0)
		return -1;
	if (rc != 0)
		return keyring_fail(err, e, "revoking the session key");
	/* The marker only improves the reader's message; losing it is harmless. */
	(void)mark_ended(uid, scope, issuer_id, expires, NULL);
	return 0;
}

int
kh_cache_logout(uid_t uid, const char *issuer_id, enum kh_scope scope,
		bool revoke_on_logout, kh_error *err)
{
	struct kh_record *rec;
	key_serial_t key = -1;
	int fd, rc = 0;

	if (geteuid() != 0)
		return kh_fail(err, KH_ERR_PERM, "login accounting needs root");
	fd = lock_uid(uid, err);
	if (fd < 0)
		return -1;
	rec = root_load(uid, scope, issuer_id ? issuer_id : "", &key);
	if (rec == NULL)
		goto out;   /* nothing left to account for */
	if (scope == KH_SCOPE_USER && rec->logins > 1) {
		/* Same session, one login fewer; the PIN key (if any) stays. */
		rec->logins--;
		rc = store_record(rec, err);
		goto out;
	}
	if (revoke_on_logout)
		rc = root_revoke(uid, scope, rec->issuer_id, key, rec->expires, err) == 0 ? 1 : -1;
out:
	kh_record_free(rec);
	unlock_uid(fd);
	return rc;
}

/* ---- the reader --------------------------------------------------------- */

static enum kh_cache_miss
miss_from_errno(int e)
{
	switch (e) {
	case EKEYEXPIRED: return KH_MISS_EXPIRED;
	case EKEYREVOKED: return KH_MISS_REVOKED;
	default:          return KH_MISS_ABSENT;
	}
}

/* After ENOKEY: did a logout or revoke leave its marker? */
static int
ended_marker_present(const char *issuer_id)
{
	char desc[KH_DESC_MAX];
	int e;

	if (kh_record_description("ended", issuer_id, desc, sizeof(desc), NULL) != 0)
		return 0;
	return search_for_reader(desc, &e) >= 0;
}

static int
explain_miss(enum kh_cache_miss miss, const char *detail, kh_error *err)
{
	switch (miss) {
	case KH_MISS_EXPIRED:
		return kh_fail(err, KH_ERR_EXPIRED,
			       "your kube session has expired; log in again to start a new one");
	case KH_MISS_REVOKED:
		return kh_fail(err, KH_ERR_REVOKED,
			       "your kube session was ended (logout or revoked); log in again "
			       "to start a new one");
	case KH_MISS_REFUSED:
		return kh_fail(err, KH_ERR_REFUSED,
			       "your kube session record was refused (%s); log in again", detail);
	case KH_MISS_ABSENT:
	case KH_MISS_NONE:
		break;
	}
	return kh_fail(err, KH_ERR_NOTFOUND,
		       "no kube session: log in with your token (PIN) on this host to start one");
}

/*
 * The kernel keeps a uid's keys after the account is deleted, so a uid
 * handed to a new account can find the old holder's record, still valid
 * and naming the old holder.  The record carries the user name it was
 * issued to: it must be the caller's account name, or kubectl would act as
 * the old holder by accident.
 *
 * This guards against accidents, not against the new holder: the record is
 * readable by its uid, so whoever holds the uid can read it with keyctl
 * anyway (revoking at account removal closes that: kubehsm admin revoke).
 * Within that bound the login's LOGNAME, which login, sshd, su and sudo set
 * from the account database, is as good a witness as the database itself:
 * when it names the record's user the names agree, and exec does not pay
 * for an NSS lookup (nsswitch.conf, nscd probes, /etc/passwd or a directory
 * server: a third of its cost with local files) on every kube request.  When
 * LOGNAME is unset or names anyone else, the account database decides.
 */
static int
check_account_name(const struct kh_record *rec, kh_error *err)
{
	const char *logname = getenv("LOGNAME");
	struct passwd pw, *found = NULL;
	char buf[4096];

	if (logname != NULL && strcmp(logname, rec->user) == 0)
		return 0;
	if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &found) != 0 || found == NULL)
		return kh_fail(err, KH_ERR_REFUSED, "uid %u has no account name to match "
			       "the session record against", (unsigned)getuid());
	if (strcmp(rec->user, found->pw_name) != 0)
		return kh_fail(err, KH_ERR_REFUSED, "the session record was issued to user "
			       "'%s', not to '%s' (a reused uid?)", rec->user, found->pw_name);
	return 0;
}

int
kh_cache_find(const char *issuer_id, struct kh_record **out,
	      enum kh_cache_miss *miss, kh_error *err)
{
	char desc[KH_DESC_MAX];
	kh_error why;
	key_serial_t key;
	int e = 0;

	*out = NULL;
	*miss = KH_MISS_ABSENT;
	if (issuer_id == NULL)
		issuer_id = "";
	if (kh_record_description("session", issuer_id, desc, sizeof(desc), err) != 0)
		return -1;
	key = search_for_reader(desc, &e);
	if (key < 0) {
		if (e == ENOSYS || e == EPERM || e == EOPNOTSUPP)
			return keyring_fail(err, e, "searching the keyring");
		*miss = miss_from_errno(e);
		if (*miss == KH_MISS_ABSENT && ended_marker_present(issuer_id))
			*miss = KH_MISS_REVOKED;
		return explain_miss(*miss, NULL, err);
	}
	kh_error_clear(&why);
	if (load_record(key, getuid(), issuer_id, out, &why) != 0 ||
	    check_account_name(*out, &why) != 0) {
		kh_record_free(*out);
		*out = NULL;
		if (why.code == KH_ERR_UNSUPPORTED || why.code == KH_ERR_INTERNAL) {
			if (err != NULL)
				*err = why;
			return -1;
		}
		*miss = why.code == KH_ERR_EXPIRED ? KH_MISS_EXPIRED : KH_MISS_REFUSED;
		return explain_miss(*miss, why.msg, err);
	}
	*miss = KH_MISS_NONE;
	return 0;
}

int
kh_cache_find_pin(const char *issuer_id, char **pin, kh_error *err)
{
	char desc[KH_DESC_MAX];
	char *buf = NULL;
	size_t len = 0;
	key_serial_t key;
	int e = 0;

	*pin = NULL;
	if (kh_record_description("pin", issuer_id ? issuer_id : "", desc, sizeof(desc), err) != 0)
		return -1;
	key = search_for_reader(desc, &e);
	if (key < 0)
		return kh_fail(err, KH_ERR_NOTFOUND,
			       "no cached PIN: signing on the token needs session.cache_pin = true "
			       "and a fresh login");
	if (check_key_attributes(key, getuid(), err) != 0 ||
	    read_payload(key, &buf, &len, err) != 0)
		return -1;
	if (strlen(buf) != len) {
		kh_secure_free(buf, len + 1);
		return kh_fail(err, KH_ERR_REFUSED, "the cached PIN is malformed");
	}
	*pin = buf;
	return 0;
}

/* ---- revoke ------------------------------------------------------------- */

int
kh_cache_revoke(uid_t uid, const char *issuer_id, kh_error *err)
{
	char desc[KH_DESC_MAX];
	struct kh_record *rec = NULL;
	key_serial_t key;
	int e = 0, rc;

	if (issuer_id == NULL)
		issuer_id = "";
	if (kh_record_description("session", issuer_id, desc, sizeof(desc), err) != 0)
		return -1;
	if (uid != getuid() && geteuid() != 0)
		return kh_fail(err, KH_ERR_PERM, "only root may end another user's session");

	if (geteuid() == 0) {
		rec = root_load(uid, KH_SCOPE_USER, issuer_id, &key);
		if (rec == NULL) {
			/* An expired or refused record still deserves to go. */
			root_drop(uid, KH_SCOPE_USER, "session", issuer_id);
			root_drop(uid, KH_SCOPE_USER, "pin", issuer_id);
			return 1;
		}
		rc = root_revoke(uid, KH_SCOPE_USER, issuer_id, key, rec->expires, err);
		kh_record_free(rec);
		return rc;
	}

	/* The user ending their own session: search permission is enough to
	 * invalidate; the marker is the user's own key, informational only. */
	key = search_for_reader(desc, &e);
	if (key < 0)
		return e == ENOSYS || e == EPERM ? keyring_fail(err, e, "searching the keyring") : 1;
	if (keyctl_invalidate(key) != 0)
		return keyring_fail(err, errno, "ending the session");
	if (kh_record_description("pin", issuer_id, desc, sizeof(desc), NULL) == 0 &&
	    (key = search_for_reader(desc, &e)) >= 0)
		(void)keyctl_invalidate(key);
	if (kh_record_description("ended", issuer_id, desc, sizeof(desc), NULL) == 0) {
		char payload[64];
		int n = snprintf(payload, sizeof(payload), "revoked %" PRId64, now_seconds());
		key = add_key("user", desc, payload, (size_t)n, KEY_SPEC_USER_KEYRING);
		if (key >= 0)
			(void)keyctl_set_timeout(key, KH_ENDED_MIN_TIMEOUT * 60);
	}
	return 0;
}

/* ---- list --------------------------------------------------------------- */

/* uids that own keys, from /proc/key-users ("  1001:     5 5/5 ..."). */
static int
key_users(uid_t **uids, size_t *n, kh_error *err)
{
	FILE *f = fopen("/proc/key-users", "re");
	char line[256];
	size_t cap = 0;
	uid_t *v = NULL, *nv;
	unsigned long u;
	char *end;

	*uids = NULL;
	*n = 0;
	if (f == NULL)
		return kh_fail(err, KH_ERR_UNSUPPORTED, "cannot read /proc/key-users: %s",
			       strerror(errno));
	while (fgets(line, sizeof(line), f) != NULL) {
		errno = 0;
		u = strtoul(line, &end, 10);
		if (errno != 0 || *end != ':' || u == 0 || u >= UINT32_MAX)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			nv = reallocarray(v, cap, sizeof(*v));
			if (nv == NULL) {
				free(v);
				fclose(f);
				return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
			}
			v = nv;
		}
		v[(*n)++] = (uid_t)u;
	}
	fclose(f);
	*uids = v;
	return 0;
}

static int
entries_push(struct kh_cache_entry **list, size_t *n, size_t *cap,
	     struct kh_cache_entry **slot)
{
	struct kh_cache_entry *nl;

	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		nl = reallocarray(*list, *cap, sizeof(**list));
		if (nl == NULL)
			return -1;
		*list = nl;
	}
	*slot = &(*list)[(*n)++];
	memset(*slot, 0, sizeof(**slot));
	return 0;
}

/* One key of the user keyring (we are acting as its uid): describe it,
 * keep it if it is one of our session records. */
static int
list_one_key(key_serial_t key, uid_t uid, struct kh_cache_entry **list,
	     size_t *n, size_t *cap)
{
	static const char prefix[] = "kubehsm:session:v";
	struct kh_cache_entry *e;
	char desc[KH_DESC_MAX];
	const char *issuer;
	key_perm_t perm;
	uid_t owner;
	kh_error why;

	if (describe_key(key, &owner, &perm, desc, sizeof(desc), NULL) != 0 ||
	    strncmp(desc, prefix, sizeof(prefix) - 1) != 0)
		return 0;
	if (entries_push(list, n, cap, &e) != 0)
		return -1;
	e->uid = uid;
	e->serial = key;
	(void)snprintf(e->description, sizeof(e->description), "%s", desc);
	issuer = strchr(desc + sizeof(prefix) - 1, ':');
	issuer = issuer ? issuer + 1 : "";
	kh_error_clear(&why);
	if (load_record(key, uid, issuer, &e->rec, &why) != 0) {
		e->state = why.code == KH_ERR_EXPIRED ? KH_MISS_EXPIRED : KH_MISS_REFUSED;
		(void)snprintf(e->problem, sizeof(e->problem), "%s", why.msg);
		return 0;
	}
	kh_secure_strfree(e->rec->key_pem);
	e->rec->key_pem = NULL;
	e->state = KH_MISS_NONE;
	return 0;
}

static int
list_user_keyring(uid_t uid, struct kh_cache_entry **list, size_t *n,
		  size_t *cap, kh_error *err)
{
	struct ruid_switch sw;
	key_serial_t *keys = NULL;
	long count, i;
	void *raw = NULL;
	int rc = 0;

	sw.active = 0;
	if (geteuid() == 0 && ruid_switch_to(uid, &sw, err) != 0)
		return -1;
	count = keyctl_read_alloc(KEY_SPEC_USER_KEYRING, &raw);
	keys = raw;
	for (i = 0; count > 0 && i < count / (long)sizeof(key_serial_t); i++) {
		if (list_one_key(keys[i], uid, list, n, cap) != 0) {
			rc = kh_fail(err, KH_ERR_INTERNAL, "out of memory");
			break;
		}
	}
	free(raw);
	if (ruid_restore(&sw, rc == 0 ? err : NULL) != 0)
		rc = -1;
	return rc;
}

int
kh_cache_list(uid_t uid, struct kh_cache_entry **out, size_t *n, kh_error *err)
{
	struct kh_cache_entry *list = NULL;
	uid_t *uids = NULL;
	size_t nuids = 0, cap = 0, i;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (uid == (uid_t)-1) {
		if (geteuid() != 0)
			return kh_fail(err, KH_ERR_PERM, "listing every user's sessions needs root");
		if (key_users(&uids, &nuids, err) != 0)
			return -1;
	} else {
		if (uid != getuid() && geteuid() != 0)
			return kh_fail(err, KH_ERR_PERM, "only root may list another user's sessions");
		uids = malloc(sizeof(*uids));
		if (uids == NULL)
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		uids[0] = uid;
		nuids = 1;
	}
	for (i = 0; i < nuids && rc == 0; i++)
		rc = list_user_keyring(uids[i], &list, n, &cap, err);
	free(uids);
	if (rc != 0) {
		kh_cache_entries_free(list, *n);
		*n = 0;
		return -1;
	}
	*out = list;
	return 0;
}

void
kh_cache_entries_free(struct kh_cache_entry *e, size_t n)
{
	size_t i;

	if (e == NULL)
		return;
	for (i = 0; i < n; i++)
		kh_record_free(e[i].rec);
	free(e);
}
