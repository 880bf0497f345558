/*
 * kh_cache_find — the reader: a user's own processes find their record.
 *
 * This is `kubehsm exec`'s path on every kube request, so it links nothing
 * of the root side.  The reader looks in its session keyring first (scope
 * "session", or the user keyring linked beneath it by pam_keyinit), then
 * in the user keyring directly, so a process with no session keyring of
 * its own (su, cron) or a revoked one (a tmux server whose login ended,
 * pam_keyinit revoke) still finds a record of scope "user".
 *
 * Keys of another uid are passed over, never reported: a process of another
 * uid that shares the login's session keyring (sudo -u, su) can plant a key
 * of the same name there, and that must neither be used nor hide the
 * user's own record.  Of the user's own keys, the kernel's word (owner,
 * permissions) is checked before a byte of the payload is trusted.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/kh_cache_int.h"
#include "lib/kh_mem.h"

/* Where a lookup stands: the most telling reason so far. */
struct lookup {
	enum kh_cache_miss miss;
	kh_error why;           /* detail of a refusal */
	int fatal_errno;        /* the kernel refuses keyring calls at all */
};

static int
miss_rank(enum kh_cache_miss m)
{
	switch (m) {
	case KH_MISS_REFUSED: return 4;
	case KH_MISS_EXPIRED: return 3;
	case KH_MISS_REVOKED: return 2;
	case KH_MISS_ABSENT:  return 1;
	case KH_MISS_NONE:    return 0;
	}
	return 0;
}

static void
note_miss(struct lookup *lk, enum kh_cache_miss m, const kh_error *why)
{
	if (miss_rank(m) <= miss_rank(lk->miss))
		return;
	lk->miss = m;
	if (why != NULL)
		lk->why = *why;
}

int
kh_cache_keyring_unsupported(int e)
{
	return e == ENOSYS || e == EPERM || e == EOPNOTSUPP;
}

/* Owner and permissions of a key the caller can see. */
static int
describe_key(key_serial_t key, uid_t *owner, key_perm_t *perm, kh_error *err)
{
	char text[512];
	long n = keyctl_describe(key, text, sizeof(text));

	if (n < 0)
		return kh_cache_keyring_fail(err, errno, "describing the session key");
	if ((size_t)n > sizeof(text) ||
	    kh_cache_parse_description(text, owner, perm, NULL, 0) != 0)
		return kh_fail(err, KH_ERR_REFUSED, "unexpected key description from the kernel");
	return 0;
}

/*
 * Read a key's payload into a buffer we own (and wipe).  One read into a
 * buffer one byte larger than any record: the kernel copies what fits and
 * returns the whole size, so a larger key is seen as such, and a key
 * replaced between two reads (size, then data) cannot happen.
 */
static int
read_payload(key_serial_t key, char **buf, size_t *len, kh_error *err)
{
	long got;

	*buf = malloc(KH_RECORD_MAX + 1);
	if (*buf == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	got = keyctl_read(key, *buf, KH_RECORD_MAX + 1);
	if (got > 0 && got <= KH_RECORD_MAX) {
		(*buf)[got] = '\0';
		*len = (size_t)got;
		return 0;
	}
	kh_secure_free(*buf, KH_RECORD_MAX + 1);
	*buf = NULL;
	if (got < 0)
		return kh_cache_keyring_fail(err, errno, "reading the session key");
	return kh_fail(err, KH_ERR_REFUSED, "session record size %ld is outside 1..%d bytes",
		       got, KH_RECORD_MAX);
}

/*
 * What to do with one of the caller's own keys: 0 accepted (stop looking),
 * -1 not usable (the reason is noted in lk, keep looking).
 */
typedef int (*accept_fn)(key_serial_t key, void *ctx, struct lookup *lk);

/*
 * Search `ring` for `desc`.  Returns 1 when accept() took a key, 0 when the
 * ring holds nothing usable of the caller's, -1 when the kernel refuses
 * keyring calls.
 */
static int
search_ring(key_serial_t ring, const char *desc, accept_fn accept, void *ctx,
	    struct lookup *lk)
{
	key_serial_t key = keyctl_search(ring, "user", desc, 0);
	key_perm_t perm;
	uid_t owner;
	kh_error why;

	if (key < 0) {
		if (kh_cache_keyring_unsupported(errno)) {
			lk->fatal_errno = errno;
			return -1;
		}
		/* EKEYREVOKED here is the keyring itself (pam_keyinit revoke at
		 * the end of the login): nothing of ours in it. */
		note_miss(lk, errno == EKEYEXPIRED ? KH_MISS_EXPIRED : KH_MISS_ABSENT, NULL);
		return 0;
	}
	kh_error_clear(&why);
	/* A key the caller may not even describe, or another uid's key, is
	 * not theirs: neither used nor reported. */
	if (describe_key(key, &owner, &perm, &why) != 0 || owner != getuid())
		return 0;
	if (kh_cache_check_attributes(owner, perm, getuid(), &why) != 0) {
		note_miss(lk, KH_MISS_REFUSED, &why);
		return 0;
	}
	return accept(key, ctx, lk) == 0 ? 1 : 0;
}

/* The session keyring, then the user keyring.  1 found, 0 not, -1 fatal. */
static int
find_own(const char *desc, accept_fn accept, void *ctx, struct lookup *lk)
{
	int rc = search_ring(KEY_SPEC_SESSION_KEYRING, desc, accept, ctx, lk);

	if (rc != 0)
		return rc;
	return search_ring(KEY_SPEC_USER_KEYRING, desc, accept, ctx, lk);
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
 * The account check (see kh_cache.h): a record names the account it was
 * issued to, which must be the caller's, or kubectl would act as the old
 * holder of a reused uid by accident.
 *
 * This guards against accidents, not against the new holder: the record is
 * readable by its uid, so whoever holds the uid can read it with keyctl
 * anyway (revoking at account removal closes that: kubehsm admin revoke).
 * Within that bound the login's LOGNAME, which login, sshd, su and sudo set
 * from the account database, is as good a witness as the database itself:
 * when it names the record's user the names agree, and exec does not pay
 * for an NSS lookup (nsswitch.conf, nscd probes, /etc/passwd or a directory
 * server: a third of its cost with local files) on every kube request.
 * When LOGNAME is unset or names anyone else, only the account database can
 * decide (kh_cache_account_db, kh_cache_account.c).
 */
int
kh_cache_account_logname(const char *user, kh_error *err)
{
	const char *logname = getenv("LOGNAME");

	(void)err;
	return logname != NULL && strcmp(logname, user) == 0 ? 0 : KH_CACHE_ACCOUNT_UNKNOWN;
}

/*
 * Is this own "ended" marker about the caller's account?  The kernel keeps
 * a uid's keys after userdel, so a new account given the uid inherits the
 * old holder's marker, and must not be told that a session it never had
 * "was ended".  The marker names the account whose session it was; the
 * rule is the one the record itself is held to (the lookup's account
 * check): the caller's account name.  An account re-created with the same
 * name and uid is, to that check and to the rest of the system, the same
 * account.  A marker naming no account (an older kubehsm's) is nobody's.
 */
struct marker_ctx {
	kh_cache_account_fn account;
	int undecided;          /* the account check could not tell */
};

static int
accept_marker(key_serial_t key, void *ctx, struct lookup *lk)
{
	struct marker_ctx *c = ctx;
	char *buf = NULL, user[256];
	size_t len = 0;
	int rc = -1;

	(void)lk;
	if (read_payload(key, &buf, &len, NULL) != 0)
		return -1;
	if (kh_cache_marker_user(buf, len, user, sizeof(user)) == 0) {
		rc = c->account(user, NULL);
		if (rc == KH_CACHE_ACCOUNT_UNKNOWN) {
			c->undecided = 1;
			rc = 0;
		}
	}
	kh_secure_free(buf, len + 1);
	return rc == 0 ? 0 : -1;
}

/* The user dropped their record (logout) or root revoked it: did that
 * leave its marker?  Only improves the message. */
enum marker { MARKER_NONE, MARKER_OWN, MARKER_UNDECIDED };

static enum marker
ended_marker_present(const char *issuer_id, kh_cache_account_fn account)
{
	struct lookup lk = { .miss = KH_MISS_NONE };
	struct marker_ctx c = { .account = account };
	char desc[KH_DESC_MAX];

	if (kh_record_description("ended", issuer_id, desc, sizeof(desc), NULL) != 0)
		return MARKER_NONE;
	if (find_own(desc, accept_marker, &c, &lk) != 1)
		return MARKER_NONE;
	return c.undecided ? MARKER_UNDECIDED : MARKER_OWN;
}

struct record_ctx {
	const char *issuer_id;
	enum kh_record_take take;
	kh_cache_account_fn account;
	struct kh_record *rec;
	kh_error fatal;         /* an internal failure (memory), not a refusal */
	int failed;
	int undecided;          /* the account check could not tell */
};

static int
accept_record(key_serial_t key, void *ctx, struct lookup *lk)
{
	struct record_ctx *c = ctx;
	struct kh_record *rec = NULL;
	char *buf = NULL;
	size_t len = 0;
	kh_error why;
	int rc;

	kh_error_clear(&why);
	if (read_payload(key, &buf, &len, &why) != 0)
		goto refused;
	rc = kh_cache_decode_as(buf, len, getuid(), c->issuer_id, c->take, &rec, &why);
	kh_secure_free(buf, len + 1);
	if (rc == 0)
		rc = c->account(rec->user, &why);
	if (rc == KH_CACHE_ACCOUNT_UNKNOWN) {
		/* Stop here: a reader that can ask the account database
		 * decides for this record. */
		kh_record_free(rec);
		c->undecided = 1;
		return 0;
	}
	if (rc != 0) {
		kh_record_free(rec);
		goto refused;
	}
	c->rec = rec;
	return 0;
refused:
	if (why.code == KH_ERR_INTERNAL || why.code == KH_ERR_UNSUPPORTED) {
		c->fatal = why;
		c->failed = 1;
	}
	note_miss(lk, why.code == KH_ERR_EXPIRED ? KH_MISS_EXPIRED : KH_MISS_REFUSED, &why);
	return -1;
}

int
kh_cache_lookup(const char *issuer_id, enum kh_record_take take, kh_cache_account_fn account,
		struct kh_record **out, enum kh_cache_miss *miss, kh_error *err)
{
	struct lookup lk = { .miss = KH_MISS_NONE };
	struct record_ctx c = { .take = take, .account = account };
	char desc[KH_DESC_MAX];
	int rc;

	*out = NULL;
	*miss = KH_MISS_ABSENT;
	c.issuer_id = issuer_id != NULL ? issuer_id : "";
	if (kh_record_description("session", c.issuer_id, desc, sizeof(desc), err) != 0)
		return -1;
	kh_error_clear(&lk.why);
	rc = find_own(desc, accept_record, &c, &lk);
	if (rc == 1 && c.undecided) {
		*miss = KH_MISS_NONE;
		return KH_CACHE_ACCOUNT_UNKNOWN;
	}
	if (rc == 1) {
		*out = c.rec;
		*miss = KH_MISS_NONE;
		return 0;
	}
	if (rc < 0)
		return kh_cache_keyring_fail(err, lk.fatal_errno, "searching the keyring");
	if (c.failed) {
		if (err != NULL)
			*err = c.fatal;
		*miss = KH_MISS_NONE;   /* an error, not an answer */
		return -1;
	}
	if (lk.miss == KH_MISS_NONE)
		lk.miss = KH_MISS_ABSENT;
	if (lk.miss == KH_MISS_ABSENT) {
		enum marker m = ended_marker_present(c.issuer_id, account);

		if (m == MARKER_UNDECIDED) {
			/* A reader that can ask the account database says
			 * whether this "ended" is the caller's. */
			*miss = KH_MISS_NONE;
			return KH_CACHE_ACCOUNT_UNKNOWN;
		}
		if (m == MARKER_OWN)
			lk.miss = KH_MISS_REVOKED;
	}
	*miss = lk.miss;
	return explain_miss(lk.miss, lk.why.msg, err);
}

int
kh_cache_find_answer(const char *issuer_id, kh_cache_account_fn account,
		     struct kh_record **out, enum kh_cache_miss *miss, kh_error *err)
{
	return kh_cache_lookup(issuer_id, KH_RECORD_TAKE_ANSWER, account, out, miss, err);
}

struct pin_ctx {
	char *pin;
};

static int
accept_pin(key_serial_t key, void *ctx, struct lookup *lk)
{
	struct pin_ctx *c = ctx;
	char *buf = NULL;
	size_t len = 0;
	kh_error why;

	kh_error_clear(&why);
	if (read_payload(key, &buf, &len, &why) != 0) {
		note_miss(lk, KH_MISS_REFUSED, &why);
		return -1;
	}
	if (strlen(buf) != len) {
		kh_secure_free(buf, len + 1);
		kh_fail(&why, KH_ERR_REFUSED, "the cached PIN is malformed");
		note_miss(lk, KH_MISS_REFUSED, &why);
		return -1;
	}
	c->pin = buf;
	return 0;
}

int
kh_cache_find_pin(const char *issuer_id, char **pin, kh_error *err)
{
	struct lookup lk = { .miss = KH_MISS_NONE };
	struct pin_ctx c = { 0 };
	char desc[KH_DESC_MAX];
	int rc;

	*pin = NULL;
	if (kh_record_description("pin", issuer_id ? issuer_id : "", desc, sizeof(desc), err) != 0)
		return -1;
	kh_error_clear(&lk.why);
	rc = find_own(desc, accept_pin, &c, &lk);
	if (rc < 0)
		return kh_cache_keyring_fail(err, lk.fatal_errno, "searching the keyring");
	if (rc == 0) {
		if (lk.miss == KH_MISS_REFUSED)
			return kh_fail(err, KH_ERR_REFUSED, "the cached PIN was refused (%s)",
				       lk.why.msg);
		return kh_fail(err, KH_ERR_NOTFOUND,
			       "no cached PIN: signing on the token needs session.cache_pin = true "
			       "and a fresh login");
	}
	*pin = c.pin;
	return 0;
}

/* ---- the user ending their own session ------------------------------------- */

int
kh_cache_drop_own(const char *desc)
{
	static const key_serial_t rings[] = { KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING };
	int dropped = 0;
	size_t r;

	for (r = 0; r < sizeof(rings) / sizeof(rings[0]); r++) {
		/* Each pass can only find one key per ring (one name per
		 * keyring); a second pass catches one linked deeper. */
		for (int pass = 0; pass < 4; pass++) {
			key_serial_t key = keyctl_search(rings[r], "user", desc, 0);
			key_perm_t perm;
			uid_t owner;

			if (key < 0 || describe_key(key, &owner, &perm, NULL) != 0 ||
			    owner != getuid() || keyctl_invalidate(key) != 0)
				break;
			dropped++;
		}
	}
	return dropped;
}

int
kh_cache_drop_pin(const char *issuer_id)
{
	char desc[KH_DESC_MAX];

	if (kh_record_description("pin", issuer_id ? issuer_id : "", desc, sizeof(desc),
				  NULL) != 0)
		return 0;
	return kh_cache_drop_own(desc);
}
