/*
 * kh_cache_store — the writer (root): store, login accounting, logout,
 * revoke.
 *
 * How a key reaches the user:
 *   1. root adds it to a private staging keyring hanging off its thread
 *      keyring, so no other process can reach it yet;
 *   2. sets the kernel timeout (root still may);
 *   3. chowns it to the user — the kernel moves the quota charge, so a full
 *      quota fails here, before anything visible has changed;
 *   4. sets the final permissions: user view/read/search/link, nothing for
 *      the possessor, group or other (KH_CACHE_PERM) — from here on root
 *      itself can do nothing with it;
 *   5. the keyring helper, which fully becomes the user, links it into the destination
 *      (the user keyring, or for scope "session" the login's session
 *      keyring), displacing the earlier key of that name in one atomic
 *      keyring edit, and invalidates what it supersedes (kh_keyops);
 *   6. root drops the staging keyring; a key the child did not link has no
 *      link left and is collected.
 * Then root records what it issued in its index (kh_index), under the uid's
 * lock, so logout and revocation reach the key wherever it is linked.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/kh_asuser.h"
#include "cache/kh_cache_int.h"
#include "cache/kh_index.h"
#include "cache/kh_keyops.h"
#include "lib/kh_mem.h"
#include "lib/kh_rundir.h"

#define KH_QUOTA_RETRIES 24     /* ~3 s of backoff in all */
#define KH_MAX_OPS (2 * KH_INDEX_MAX_ENTRIES + 16)
#define KH_MAX_DESCS 32

/* ---- staging (steps 1-4) ---------------------------------------------------- */

/*
 * The kernel frees a displaced key asynchronously (key garbage collection),
 * so right after a replacement the old record may still be charged to the
 * user.  A quota failure that is only that backlog clears within
 * milliseconds (seconds on a machine under heavy load); a quota that is
 * really full fails after ~3 s.
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

static long
seconds_until(int64_t when, long at_least)
{
	int64_t left = when - kh_cache_now();

	if (left < at_least)
		left = at_least;
	if (left > UINT32_MAX)
		left = UINT32_MAX;
	return (long)left;
}

/* A write in progress for one uid: the staging keyring and the operations
 * the user's child will run. */
struct batch {
	uid_t uid;
	key_serial_t stage;
	struct kh_keyop ops[KH_MAX_OPS];
	size_t nops;
	char descs[KH_MAX_DESCS][KH_DESC_MAX];   /* names the ops refer to */
	size_t ndescs;
	struct kh_keyop_result *res;
	size_t nres;
};

static int
batch_begin(struct batch *b, uid_t uid, kh_error *err)
{
	memset(b, 0, sizeof(*b));
	b->uid = uid;
	b->stage = add_key("keyring", "kubehsm:staging", NULL, 0, KEY_SPEC_THREAD_KEYRING);
	if (b->stage < 0)
		return kh_cache_keyring_fail(err, errno, "creating a staging keyring");
	return 0;
}

static void
batch_end(struct batch *b)
{
	if (b->stage > 0)
		(void)keyctl_invalidate(b->stage);
	kh_keyop_results_free(b->res, b->nres);
	b->res = NULL;
	b->nres = 0;
}

/* Add an operation; returns its index. */
static size_t
batch_op(struct batch *b, enum kh_keyop_kind kind, key_serial_t key,
	 key_serial_t ring, const char *desc)
{
	size_t i = b->nops;

	if (i >= KH_MAX_OPS)
		return SIZE_MAX;   /* never with the bounded callers here */
	b->ops[i] = (struct kh_keyop){ .kind = kind, .key = key, .ring = ring, .desc = desc };
	b->nops++;
	return i;
}

/* A key description kept alive for the batch's operations, made once per
 * kind and issuer; NULL when the pool is full or the id is invalid. */
static const char *
batch_desc(struct batch *b, const char *kind, const char *issuer_id)
{
	char desc[KH_DESC_MAX];
	size_t i;

	if (kh_record_description(kind, issuer_id, desc, sizeof(desc), NULL) != 0)
		return NULL;
	for (i = 0; i < b->ndescs; i++)
		if (strcmp(b->descs[i], desc) == 0)
			return b->descs[i];
	if (b->ndescs == KH_MAX_DESCS)
		return NULL;
	memcpy(b->descs[b->ndescs], desc, sizeof(desc));
	return b->descs[b->ndescs++];
}

/* Steps 1-4 for one key.  Returns its serial, or -1 with err. */
static key_serial_t
stage_key(struct batch *b, const char *desc, const void *payload, size_t len,
	  long timeout, kh_error *err)
{
	key_serial_t key = add_key("user", desc, payload, len, b->stage);

	if (key < 0)
		return kh_cache_keyring_fail(err, errno, "adding the session key");
	if (keyctl_set_timeout(key, (unsigned)timeout) != 0 ||
	    chown_to_user(key, b->uid) != 0 ||
	    keyctl_setperm(key, KH_CACHE_PERM) != 0) {
		kh_cache_keyring_fail(err, errno, "handing the session key to the user");
		(void)keyctl_unlink(key, b->stage);
		return -1;
	}
	return key;
}

static key_serial_t
dest_ring(enum kh_scope scope)
{
	return scope == KH_SCOPE_SESSION ? KEY_SPEC_SESSION_KEYRING : KEY_SPEC_USER_KEYRING;
}

static int
batch_run(struct batch *b, kh_error *err)
{
	return kh_keyops_run(b->uid, b->ops, b->nops, &b->res, &b->nres, err);
}

/* Did operation i (a LINK) succeed?  Explains a failure in err. */
static int
batch_linked(const struct batch *b, size_t i, enum kh_scope scope, kh_error *err)
{
	const struct kh_keyop_result *r = kh_keyop_result_of(b->res, b->nres, i);

	if (r == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "the keyring helper did not link the key");
	if (r->err == 0)
		return 0;
	if (scope == KH_SCOPE_SESSION && r->err == EACCES)
		return kh_fail(err, KH_ERR_PERM, "cannot link into the login's session keyring: "
			       "it is not the user's (put 'session optional pam_keyinit.so force "
			       "revoke' before pam_kubehsm in the session stack)");
	return kh_cache_keyring_fail(err, r->err, scope == KH_SCOPE_SESSION
				     ? "linking into the login's session keyring"
				     : "linking into the user keyring");
}

/* Did operation i (a GUARD) succeed?  A keyring we cannot close to
 * possessors of other uids is no place for a record. */
static int
batch_guarded(const struct batch *b, size_t i, enum kh_scope scope, kh_error *err)
{
	const struct kh_keyop_result *r = kh_keyop_result_of(b->res, b->nres, i);

	if (r != NULL && r->err == 0)
		return 0;
	if (r != NULL && r->err == EPERM && scope == KH_SCOPE_SESSION)
		return kh_fail(err, KH_ERR_PERM, "the login's session keyring is not the user's "
			       "(put 'session optional pam_keyinit.so force revoke' before "
			       "pam_kubehsm in the session stack)");
	return kh_cache_keyring_fail(err, r != NULL ? r->err : EIO,
				     "closing the destination keyring to other uids");
}

/* ---- what the index says ---------------------------------------------------- */

static int
entry_matches(const struct kh_index_entry *e, enum kh_index_kind kind,
	      const char *issuer_id, int scope /* -1: any */)
{
	return e->kind == kind && strcmp(e->issuer, issuer_id) == 0 &&
	       (scope < 0 || e->scope == (enum kh_scope)scope);
}

static int
index_begin(uid_t uid, struct kh_index *ix, int *lock, kh_error *err)
{
	*lock = kh_rundir_lock_uid(uid, err);
	if (*lock < 0)
		return -1;
	if (kh_index_load(uid, ix, err) != 0) {
		kh_rundir_unlock(*lock);
		*lock = -1;
		return -1;
	}
	kh_index_prune_expired(ix, kh_cache_now());
	return 0;
}

static void
index_end(struct kh_index *ix, int lock)
{
	kh_index_clear(ix);
	kh_rundir_unlock(lock);
}

/* ---- store -------------------------------------------------------------------- */

enum pin_action {
	PIN_DROP,        /* no cache_pin: an earlier PIN key must not outlive it */
	PIN_KEEP,        /* re-storing the same session (logout accounting) */
	PIN_SET,
};

static int
add_entry(struct kh_index *ix, enum kh_index_kind kind, const struct kh_record *rec,
	  key_serial_t serial, kh_error *err)
{
	struct kh_index_entry e = {
		.kind = kind, .scope = rec->scope, .serial = serial,
		.created = rec->created, .expires = rec->expires,
	};

	(void)snprintf(e.issuer, sizeof(e.issuer), "%s", rec->issuer_id);
	return kh_index_add(ix, &e, err);
}

/*
 * Store rec (and its PIN key) for rec->uid, superseding what the index
 * says it replaces; the index is updated in memory (the caller saves).
 * Under the uid's lock.
 */
static int
store_locked(struct kh_index *ix, const struct kh_record *rec, enum pin_action pin_do,
	     const char *pin, int32_t *serial, kh_error *err)
{
	char desc[KH_DESC_MAX], pin_desc[KH_DESC_MAX], ended_desc[KH_DESC_MAX];
	key_serial_t ring = dest_ring(rec->scope), key, pin_key = -1;
	char *payload = NULL;
	size_t len = 0, link_rec, link_pin = SIZE_MAX, guard, i;
	bool *superseded = NULL;
	struct batch *b = NULL;
	long timeout;
	int rc = -1;

	if (kh_record_description("session", rec->issuer_id, desc, sizeof(desc), err) != 0 ||
	    kh_record_description("pin", rec->issuer_id, pin_desc, sizeof(pin_desc), err) != 0 ||
	    kh_record_description("ended", rec->issuer_id, ended_desc, sizeof(ended_desc), err) != 0)
		return -1;
	if (rec->expires <= kh_cache_now())
		return kh_fail(err, KH_ERR_EXPIRED, "the session would already be expired");
	timeout = seconds_until(rec->expires, 1);
	superseded = calloc(ix->n ? ix->n : 1, sizeof(*superseded));
	if (superseded == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	b = malloc(sizeof(*b));
	if (b == NULL || kh_record_encode(rec, &payload, &len, err) != 0 ||
	    batch_begin(b, rec->uid, err) != 0) {
		if (b == NULL)
			kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		if (payload != NULL)
			kh_secure_free(payload, len + 1);
		free(superseded);
		free(b);
		return -1;
	}
	key = stage_key(b, desc, payload, len, timeout, err);
	kh_secure_free(payload, len + 1);
	if (key < 0)
		goto out;
	if (pin_do == PIN_SET && (pin_key = stage_key(b, pin_desc, pin, strlen(pin),
						      timeout, err)) < 0)
		goto out;
	/* First make the destination hold on to what it gets. */
	guard = batch_op(b, KH_KEYOP_GUARD, 0, ring, NULL);
	link_rec = batch_op(b, KH_KEYOP_LINK, key, ring, NULL);
	if (pin_key > 0)
		link_pin = batch_op(b, KH_KEYOP_LINK, pin_key, ring, NULL);
	/* What this key replaces: every key issued under this uid to another
	 * account (a reused uid); for scope user, the earlier record of this
	 * issuer and, unless kept, its PIN key.  (Scope-session keys belong
	 * to other logins and stay.) */
	for (i = 0; i < ix->n; i++) {
		const struct kh_index_entry *e = &ix->e[i];
		bool user_scope = rec->scope == KH_SCOPE_USER && e->scope == KH_SCOPE_USER;

		if (strcmp(ix->user, rec->user) != 0 ||
		    (user_scope && entry_matches(e, KH_INDEX_SESSION, rec->issuer_id, -1)) ||
		    (user_scope && pin_do != PIN_KEEP &&
		     entry_matches(e, KH_INDEX_PIN, rec->issuer_id, -1))) {
			superseded[i] = true;
			(void)batch_op(b, KH_KEYOP_INVALIDATE, e->serial, 0, NULL);
		}
	}
	(void)batch_op(b, KH_KEYOP_DROP, 0, ring, ended_desc);
	if (pin_do == PIN_DROP)
		(void)batch_op(b, KH_KEYOP_DROP, 0, ring, pin_desc);
	if (batch_run(b, err) != 0 || batch_guarded(b, guard, rec->scope, err) != 0 ||
	    batch_linked(b, link_rec, rec->scope, err) != 0 ||
	    (link_pin != SIZE_MAX && batch_linked(b, link_pin, rec->scope, err) != 0))
		goto out;

	/* The index now says what the user holds; another account's logins
	 * of a reused uid are not this one's. */
	if (strcmp(ix->user, rec->user) != 0) {
		(void)snprintf(ix->user, sizeof(ix->user), "%s", rec->user);
		ix->logins = 0;
	}
	for (i = ix->n; i-- > 0;)
		if (superseded[i])
			kh_index_remove(ix, i);
	if (add_entry(ix, KH_INDEX_SESSION, rec, key, err) != 0 ||
	    (pin_key > 0 && add_entry(ix, KH_INDEX_PIN, rec, pin_key, err) != 0))
		goto out;
	if (serial != NULL)
		*serial = key;
	rc = 0;
out:
	batch_end(b);
	free(b);
	free(superseded);
	return rc;
}

static int
need_root(kh_error *err)
{
	if (geteuid() != 0)
		return kh_fail(err, KH_ERR_PERM, "storing a session needs root");
	return 0;
}

int
kh_cache_store(const struct kh_record *rec, const char *pin, int32_t *serial,
	       kh_error *err)
{
	struct kh_index ix;
	int lock, rc;

	if (need_root(err) != 0 || index_begin(rec->uid, &ix, &lock, err) != 0)
		return -1;
	rc = store_locked(&ix, rec, pin != NULL ? PIN_SET : PIN_DROP, pin, serial, err);
	if (rc == 0)
		rc = kh_index_save(&ix, err);
	index_end(&ix, lock);
	return rc;
}

/* ---- ending sessions ------------------------------------------------------------- */

/* What else revoke_locked looks for beyond the index entries it is given. */
enum revoke_scan {
	SCAN_NONE,
	SCAN_USER_KEYS,       /* records and PINs of one issuer the index does not
			       * know, wherever the user has them (admin revoke) */
	SCAN_SESSION_PIN,     /* the PIN keys of the ended scope-session records,
			       * in the login's own session keyring (logout) */
};

/* The keys a revocation removed, for the count and the index. */
struct revoked {
	key_serial_t gone[KH_MAX_OPS];
	size_t n;
};

static bool
revoked_has(const struct revoked *rv, key_serial_t key)
{
	size_t i;

	for (i = 0; i < rv->n && i < KH_MAX_OPS; i++)
		if (rv->gone[i] == key)
			return true;
	return false;
}

/* Drop the user's keys described `kind`/`issuer` (directly in ring, or
 * anywhere when ring is 0). */
static void
revoke_drop(const struct kh_asuser *as, key_serial_t ring, const char *kind,
	    const char *issuer, struct revoked *rv)
{
	char desc[KH_DESC_MAX];

	if (kh_record_description(kind, issuer, desc, sizeof(desc), NULL) != 0)
		return;
	(void)kh_asuser_drop(as, ring, desc, rv->gone, KH_MAX_OPS, &rv->n);
}

/*
 * The revocation itself, as root with the user's fsuid (kh_asuser): the
 * index's keys by serial, then what `scan` looks for.  No process of the
 * user's takes part, so the user cannot delay or stop it.
 */
static int
revoke_keys(const struct kh_index *ix, const bool *pick, enum revoke_scan scan,
	    const char *scan_issuer, struct revoked *rv, kh_error *err)
{
	struct kh_asuser as;
	size_t i;

	if (kh_asuser_begin(&as, ix->uid, err) != 0)
		return -1;
	for (i = 0; i < ix->n; i++) {
		const struct kh_index_entry *e = &ix->e[i];

		if (!pick[i])
			continue;
		if (kh_asuser_invalidate(&as, e->serial) == 0 && rv->n < KH_MAX_OPS)
			rv->gone[rv->n++] = e->serial;
		if (scan == SCAN_SESSION_PIN && e->kind == KH_INDEX_SESSION &&
		    e->scope == KH_SCOPE_SESSION)
			revoke_drop(&as, KEY_SPEC_SESSION_KEYRING, "pin", e->issuer, rv);
	}
	if (scan == SCAN_USER_KEYS) {
		revoke_drop(&as, 0, "session", scan_issuer, rv);
		revoke_drop(&as, 0, "pin", scan_issuer, rv);
	}
	kh_asuser_end(&as);
	return 0;
}

/* An "ended" marker for a session record of `user` that went, in the
 * keyring the record was meant for; once per issuer and scope.  Only
 * improves the reader's message: failures are not errors.  Staged as root;
 * linked with the user's fsuid. */
static void
leave_marker(struct batch *b, const struct kh_index_entry *e, const char *user,
	     int64_t until, key_serial_t user_ring)
{
	const char *desc = batch_desc(b, "ended", e->issuer);
	char payload[KH_MARKER_MAX], tag[KH_DESC_MAX + 8];
	key_serial_t marker, ring;
	struct kh_asuser as;
	int n;

	ring = e->scope == KH_SCOPE_SESSION ? KEY_SPEC_SESSION_KEYRING : user_ring;
	if (desc == NULL || ring == -1)
		return;
	/* One marker per issuer and ring: remember the pair in the pool. */
	(void)snprintf(tag, sizeof(tag), "%s@%s", e->scope == KH_SCOPE_SESSION ? "s" : "u", desc);
	for (size_t i = 0; i < b->ndescs; i++)
		if (strcmp(b->descs[i], tag) == 0)
			return;
	if (b->ndescs == KH_MAX_DESCS || strlen(tag) >= KH_DESC_MAX)
		return;
	n = kh_cache_marker_format(payload, sizeof(payload), kh_cache_now(), user);
	if (n < 0)
		return;
	memcpy(b->descs[b->ndescs++], tag, strlen(tag) + 1);
	marker = stage_key(b, desc, payload, (size_t)n,
			   seconds_until(until, KH_ENDED_MIN_TIMEOUT), NULL);
	if (marker > 0 && kh_asuser_begin(&as, b->uid, NULL) == 0) {
		(void)kh_asuser_link(&as, marker, ring);
		kh_asuser_end(&as);
	}
}

/* The markers for the session records that went. */
static void
leave_markers(const struct kh_index *ix, const bool *pick, int64_t until)
{
	struct batch *b = malloc(sizeof(*b));
	key_serial_t user_ring = -1;
	struct kh_asuser as;
	size_t i;

	if (b == NULL || batch_begin(b, ix->uid, NULL) != 0) {
		free(b);
		return;
	}
	for (i = 0; i < ix->n; i++)
		if (pick[i] && ix->e[i].kind == KH_INDEX_SESSION && ix->e[i].scope == KH_SCOPE_USER)
			break;
	if (i < ix->n && kh_asuser_begin(&as, ix->uid, NULL) == 0) {
		user_ring = kh_asuser_user_keyring(&as);
		kh_asuser_end(&as);
	}
	for (i = 0; i < ix->n; i++)
		if (pick[i] && ix->e[i].kind == KH_INDEX_SESSION)
			leave_marker(b, &ix->e[i], ix->user, until, user_ring);
	batch_end(b);
	free(b);
}

/*
 * Invalidate the index entries selected by `pick`, and what `scan` finds,
 * leave "ended" markers for the session records among them, and drop them
 * from the index.  Returns how many keys went, or -1.
 */
static int
revoke_locked(struct kh_index *ix, const bool *pick, enum revoke_scan scan,
	      const char *scan_issuer, kh_error *err)
{
	struct revoked *rv = calloc(1, sizeof(*rv));
	int64_t until = 0;
	size_t i;
	int removed;

	if (rv == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	for (i = 0; i < ix->n; i++)
		if (pick[i] && ix->e[i].expires > until)
			until = ix->e[i].expires;
	if (revoke_keys(ix, pick, scan, scan_issuer, rv, err) != 0) {
		free(rv);
		return -1;
	}
	/* The revocation is done; what follows only improves messages. */
	leave_markers(ix, pick, until);
	removed = rv->n > INT_MAX ? INT_MAX : (int)rv->n;
	for (i = ix->n; i-- > 0;)
		if (pick[i] || revoked_has(rv, ix->e[i].serial))
			kh_index_remove(ix, i);
	free(rv);
	return removed;
}

/* Pick every entry of issuer_id (NULL: any) in scope `scope` (-1: any). */
static bool *
pick_entries(const struct kh_index *ix, const char *issuer_id, int scope, kh_error *err)
{
	bool *pick = calloc(ix->n ? ix->n : 1, sizeof(*pick));
	size_t i;

	if (pick == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	for (i = 0; i < ix->n; i++)
		pick[i] = (issuer_id == NULL || strcmp(ix->e[i].issuer, issuer_id) == 0) &&
			  (scope < 0 || ix->e[i].scope == (enum kh_scope)scope);
	return pick;
}

/* ---- login accounting ---------------------------------------------------------- */

/*
 * The index counts the uid's open logins through pam_kubehsm, whether they
 * minted a record or not: a record of scope user is the session of every
 * login of the uid, and lives until the last of them closes.  (A record
 * minted later inside one of them — kubehsm login, for a token that only
 * arrives after sshd has authenticated — joins them.)  Each record carries
 * the count for `kubehsm status`, and is re-stored when it changes.
 */

/* A login of `user` opens under uid: count it.  Keys the index holds for
 * another account of a reused uid go. */
static int
count_login(struct kh_index *ix, const char *user, kh_error *err)
{
	bool *all;
	int rc = 0;

	if (strcmp(ix->user, user) != 0) {
		if (ix->n > 0) {
			all = pick_entries(ix, NULL, -1, err);
			if (all == NULL)
				return -1;
			rc = revoke_locked(ix, all, SCAN_NONE, NULL, err) < 0 ? -1 : 0;
			free(all);
		}
		ix->logins = 0;
	}
	(void)snprintf(ix->user, sizeof(ix->user), "%s", user);
	if (ix->logins < KH_LOGINS_MAX)
		ix->logins++;
	return rc;
}

/* Re-store the uid's scope-user records whose login count is out of date;
 * records the user has ended already (kubehsm logout) leave the index. */
/*
 * Save the index after login accounting, also when a keyring step failed.
 * Those steps run as the user (kubehsm-keyops), who may kill them: the
 * count a login added or a logout took off, and whatever the steps did
 * manage, must stand regardless, or a user who stops the helper at each
 * logout keeps root counting logins that have ended — and their last
 * logout then ends nothing.  err keeps the first failure.
 */
static int
save_index_anyway(const struct kh_index *ix, int rc, kh_error *err)
{
	kh_error save_err = { 0 };

	if (kh_index_save(ix, rc == 0 ? err : &save_err) == 0)
		return 0;
	return -1;
}

static int
refresh_counts(struct kh_index *ix, kh_error *err)
{
	struct kh_keyop ops[KH_INDEX_MAX_ENTRIES];
	int32_t serials[KH_INDEX_MAX_ENTRIES];
	struct kh_keyop_result *res = NULL;
	size_t nops = 0, nres = 0, i, j;
	int rc = 0;

	for (i = 0; i < ix->n; i++)
		if (ix->e[i].kind == KH_INDEX_SESSION && ix->e[i].scope == KH_SCOPE_USER) {
			serials[nops] = ix->e[i].serial;
			ops[nops++] = (struct kh_keyop){ .kind = KH_KEYOP_READ, .key = ix->e[i].serial };
		}
	if (nops == 0)
		return 0;
	if (kh_keyops_run(ix->uid, ops, nops, &res, &nres, err) != 0)
		return -1;
	for (i = 0; i < nres && rc == 0; i++) {
		const struct kh_keyop_result *r = &res[i];
		struct kh_record *rec = NULL;
		const char *issuer = kh_cache_desc_issuer(r->desc, "session");

		if (r->err != 0 || issuer == NULL ||
		    kh_cache_check_attributes(r->owner, r->perm, ix->uid, NULL) != 0 ||
		    kh_cache_decode(r->payload, r->len, ix->uid, issuer, &rec, NULL) != 0) {
			/* Gone or unusable: no longer a record to account for. */
			for (j = 0; j < ix->n; j++)
				if (ix->e[j].serial == serials[r->op]) {
					kh_index_remove(ix, j);
					break;
				}
			continue;
		}
		if (rec->logins != ix->logins) {
			rec->logins = ix->logins;
			rc = store_locked(ix, rec, PIN_KEEP, NULL, NULL, err);
		}
		kh_record_free(rec);
	}
	kh_keyop_results_free(res, nres);
	return rc;
}

int
kh_cache_login(struct kh_record *rec, const char *pin, enum kh_login_kind kind,
	       int32_t *serial, kh_error *err)
{
	struct kh_index ix;
	int lock, rc = 0;

	if (need_root(err) != 0 || index_begin(rec->uid, &ix, &lock, err) != 0)
		return -1;
	if (kind == KH_LOGIN_NEW)
		rc = count_login(&ix, rec->user, err);
	rec->logins = strcmp(ix.user, rec->user) == 0 ? ix.logins : 0;
	if (rc == 0)
		rc = store_locked(&ix, rec, pin != NULL ? PIN_SET : PIN_DROP, pin, serial, err);
	if (rc == 0)
		rc = kh_index_save(&ix, err);
	index_end(&ix, lock);
	return rc;
}

int
kh_cache_login_count(uid_t uid, const char *user, kh_error *err)
{
	struct kh_index ix;
	int lock, rc;

	if (need_root(err) != 0 || index_begin(uid, &ix, &lock, err) != 0)
		return -1;
	rc = count_login(&ix, user, err);
	if (rc == 0)
		rc = refresh_counts(&ix, err);
	if (save_index_anyway(&ix, rc, err) != 0)
		rc = -1;
	index_end(&ix, lock);
	return rc;
}

int
kh_cache_logout(uid_t uid, const char *user, const int32_t *serials, size_t nserials,
		bool revoke_on_logout, kh_cache_ending_fn ending, void *ctx, kh_error *err)
{
	struct kh_index ix;
	bool *pick = NULL;
	size_t i, j;
	int lock, rc = 0, ended = 0;

	if (geteuid() != 0)
		return kh_fail(err, KH_ERR_PERM, "login accounting needs root");
	if (index_begin(uid, &ix, &lock, err) != 0)
		return -1;
	if (strcmp(ix.user, user) != 0)
		goto out;   /* nothing of this login's left (a reused uid since) */
	if (ix.logins > 0)
		ix.logins--;
	pick = calloc(ix.n ? ix.n : 1, sizeof(*pick));
	if (pick == NULL) {
		rc = kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	/* This login's own scope-session records, and at the uid's last
	 * login every scope-user key. */
	for (i = 0; i < ix.n; i++) {
		for (j = 0; j < nserials; j++)
			if (ix.e[i].serial == serials[j] && ix.e[i].scope == KH_SCOPE_SESSION)
				pick[i] = true;
		if (ix.logins == 0 && ix.e[i].scope == KH_SCOPE_USER)
			pick[i] = true;
	}
	if (revoke_on_logout) {
		bool any = false;

		for (i = 0; i < ix.n; i++) {
			any = any || pick[i];
			ended = ended || (pick[i] && ix.e[i].kind == KH_INDEX_SESSION);
		}
		if (ended && ending != NULL)
			ending(ctx);
		if (any && revoke_locked(&ix, pick, SCAN_SESSION_PIN, NULL, err) < 0)
			rc = -1;
	}
	if (rc == 0 && refresh_counts(&ix, err) != 0)
		rc = -1;
	if (save_index_anyway(&ix, rc, err) != 0)
		rc = -1;
out:
	free(pick);
	index_end(&ix, lock);
	return rc < 0 ? -1 : ended;
}

/* ---- revoke --------------------------------------------------------------------- */

/* Root: every key of issuer_id the host issued to uid, in any scope,
 * wherever it is linked, and what is left in the user keyring. */
static int
revoke_as_root(uid_t uid, const char *issuer_id, kh_error *err)
{
	struct kh_index ix;
	bool *pick;
	int lock, rc;

	if (index_begin(uid, &ix, &lock, err) != 0)
		return -1;
	pick = pick_entries(&ix, issuer_id, -1, err);
	rc = pick == NULL ? -1 : revoke_locked(&ix, pick, SCAN_USER_KEYS, issuer_id, err);
	if (rc >= 0 && kh_index_save(&ix, err) != 0)
		rc = -1;
	free(pick);
	index_end(&ix, lock);
	return rc < 0 ? -1 : rc > 0 ? 1 : 0;
}

int
kh_cache_revoke(uid_t uid, const char *issuer_id, kh_error *err)
{
	char desc[KH_DESC_MAX];

	if (issuer_id == NULL)
		issuer_id = "";
	if (kh_record_description("session", issuer_id, desc, sizeof(desc), err) != 0)
		return -1;
	if (geteuid() == 0)
		return revoke_as_root(uid, issuer_id, err);
	if (uid != getuid())
		return kh_fail(err, KH_ERR_PERM, "only root may end another user's session");
	return kh_cache_revoke_own(issuer_id, err);
}
