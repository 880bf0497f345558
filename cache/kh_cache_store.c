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
 *   5. a child that fully becomes the user links it into the destination
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
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kh_cache_int.h"
#include "kh_index.h"
#include "kh_keyops.h"
#include "kh_mem.h"
#include "kh_rundir.h"

#define KH_QUOTA_RETRIES 24     /* ~3 s of backoff in all */
#define KH_LOGINS_MAX 100000
#define KH_MAX_OPS 64

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

/* How many of the batch's INVALIDATE/DROP operations removed a key. */
static int
batch_removed(const struct batch *b)
{
	int n = 0;
	size_t i;

	for (i = 0; i < b->nres; i++) {
		enum kh_keyop_kind k = b->ops[b->res[i].op].kind;

		if ((k == KH_KEYOP_INVALIDATE || k == KH_KEYOP_DROP) && b->res[i].err == 0)
			n++;
	}
	return n;
}

/* Did one of the batch's DROP operations remove key? */
static bool
batch_dropped(const struct batch *b, key_serial_t key)
{
	size_t i;

	for (i = 0; i < b->nres; i++)
		if (b->ops[b->res[i].op].kind == KH_KEYOP_DROP && b->res[i].err == 0 &&
		    b->res[i].key == key)
			return true;
	return false;
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
		.logins = kind == KH_INDEX_SESSION ? rec->logins : 0,
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
	size_t len = 0, link_rec, link_pin = SIZE_MAX, i;
	bool *superseded = NULL;
	struct batch b;
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
	if (kh_record_encode(rec, &payload, &len, err) != 0 || batch_begin(&b, rec->uid, err) != 0) {
		if (payload != NULL)
			kh_secure_free(payload, len + 1);
		free(superseded);
		return -1;
	}
	key = stage_key(&b, desc, payload, len, timeout, err);
	kh_secure_free(payload, len + 1);
	if (key < 0)
		goto out;
	if (pin_do == PIN_SET && (pin_key = stage_key(&b, pin_desc, pin, strlen(pin),
						      timeout, err)) < 0)
		goto out;
	link_rec = batch_op(&b, KH_KEYOP_LINK, key, ring, NULL);
	if (pin_key > 0)
		link_pin = batch_op(&b, KH_KEYOP_LINK, pin_key, ring, NULL);
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
			(void)batch_op(&b, KH_KEYOP_INVALIDATE, e->serial, 0, NULL);
		}
	}
	(void)batch_op(&b, KH_KEYOP_DROP, 0, ring, ended_desc);
	if (pin_do == PIN_DROP)
		(void)batch_op(&b, KH_KEYOP_DROP, 0, ring, pin_desc);
	if (batch_run(&b, err) != 0 || batch_linked(&b, link_rec, rec->scope, err) != 0 ||
	    (link_pin != SIZE_MAX && batch_linked(&b, link_pin, rec->scope, err) != 0))
		goto out;

	/* The index now says what the user holds. */
	if (strcmp(ix->user, rec->user) != 0)
		(void)snprintf(ix->user, sizeof(ix->user), "%s", rec->user);
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
	batch_end(&b);
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

/* ---- login accounting ---------------------------------------------------------- */

/* The index entry of the uid's scope-user record for issuer_id, or NULL. */
static struct kh_index_entry *
user_scope_record(struct kh_index *ix, const char *issuer_id)
{
	size_t i;

	for (i = 0; i < ix->n; i++)
		if (entry_matches(&ix->e[i], KH_INDEX_SESSION, issuer_id, KH_SCOPE_USER))
			return &ix->e[i];
	return NULL;
}

/* Is the key the index names still there and the user's?  (The user may
 * have ended it with kubehsm logout, which root's index cannot see.) */
static bool
key_alive(uid_t uid, key_serial_t key)
{
	struct kh_keyop op = { .kind = KH_KEYOP_DESCRIBE, .key = key };
	struct kh_keyop_result *res = NULL;
	size_t n = 0;
	bool alive;

	if (kh_keyops_run(uid, &op, 1, &res, &n, NULL) != 0)
		return false;
	alive = n == 1 && res[0].err == 0 && res[0].owner == uid;
	kh_keyop_results_free(res, n);
	return alive;
}

int
kh_cache_login(struct kh_record *rec, const char *pin, int32_t *serial, kh_error *err)
{
	struct kh_index_entry *prev;
	struct kh_index ix;
	int lock, rc;

	if (need_root(err) != 0 || index_begin(rec->uid, &ix, &lock, err) != 0)
		return -1;
	rec->logins = 1;
	prev = rec->scope == KH_SCOPE_USER && strcmp(ix.user, rec->user) == 0
		       ? user_scope_record(&ix, rec->issuer_id) : NULL;
	if (prev != NULL && key_alive(rec->uid, prev->serial) && prev->logins < KH_LOGINS_MAX)
		rec->logins = prev->logins + 1;
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
	SCAN_USER_KEYRING,    /* records and PINs of the issuer the index does not
			       * know, in the user keyring (admin revoke) */
	SCAN_SESSION_PIN,     /* the login's own PIN key in its session keyring */
};

/*
 * Invalidate the index entries selected by `pick` (and what `scan` finds),
 * leave an "ended" marker in `marker_ring` when anything was picked, and
 * drop them from the index.  Returns how many keys went, or -1.
 */
static int
revoke_locked(struct kh_index *ix, const bool *pick, const char *issuer_id,
	      enum revoke_scan scan, key_serial_t marker_ring, kh_error *err)
{
	char desc[KH_DESC_MAX], pin_desc[KH_DESC_MAX], ended_desc[KH_DESC_MAX], payload[64];
	int64_t until = 0;
	key_serial_t marker = -1;
	struct batch b;
	size_t i, picked = 0;
	int n, removed;

	if (kh_record_description("session", issuer_id, desc, sizeof(desc), err) != 0 ||
	    kh_record_description("pin", issuer_id, pin_desc, sizeof(pin_desc), err) != 0 ||
	    kh_record_description("ended", issuer_id, ended_desc, sizeof(ended_desc), err) != 0 ||
	    batch_begin(&b, ix->uid, err) != 0)
		return -1;
	for (i = 0; i < ix->n; i++) {
		if (!pick[i])
			continue;
		picked++;
		if (ix->e[i].expires > until)
			until = ix->e[i].expires;
		(void)batch_op(&b, KH_KEYOP_INVALIDATE, ix->e[i].serial, 0, NULL);
	}
	if (scan == SCAN_USER_KEYRING) {
		(void)batch_op(&b, KH_KEYOP_DROP, 0, KEY_SPEC_USER_KEYRING, desc);
		(void)batch_op(&b, KH_KEYOP_DROP, 0, KEY_SPEC_USER_KEYRING, pin_desc);
	} else if (scan == SCAN_SESSION_PIN) {
		(void)batch_op(&b, KH_KEYOP_DROP, 0, KEY_SPEC_SESSION_KEYRING, pin_desc);
	}
	if (picked > 0) {
		/* The marker only improves the reader's message; losing it is
		 * harmless, so its failures are not errors. */
		n = snprintf(payload, sizeof(payload), "revoked %" PRId64, kh_cache_now());
		marker = stage_key(&b, ended_desc, payload, (size_t)n,
				   seconds_until(until, KH_ENDED_MIN_TIMEOUT), NULL);
		if (marker > 0)
			(void)batch_op(&b, KH_KEYOP_LINK, marker, marker_ring, NULL);
	}
	if (b.nops == 0) {
		batch_end(&b);
		return 0;
	}
	if (batch_run(&b, err) != 0) {
		batch_end(&b);
		return -1;
	}
	removed = batch_removed(&b);
	for (i = ix->n; i-- > 0;)
		if (pick[i] || batch_dropped(&b, ix->e[i].serial))
			kh_index_remove(ix, i);
	batch_end(&b);
	return removed;
}

/* Pick every entry of issuer_id in scope `scope` (-1: any) of kind `kind`
 * (-1: any). */
static bool *
pick_entries(const struct kh_index *ix, const char *issuer_id, int scope, int kind,
	     int32_t serial /* 0: any */, kh_error *err)
{
	bool *pick = calloc(ix->n ? ix->n : 1, sizeof(*pick));
	size_t i;

	if (pick == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	for (i = 0; i < ix->n; i++) {
		const struct kh_index_entry *e = &ix->e[i];

		pick[i] = strcmp(e->issuer, issuer_id) == 0 &&
			  (scope < 0 || e->scope == (enum kh_scope)scope) &&
			  (kind < 0 || e->kind == (enum kh_index_kind)kind) &&
			  (serial == 0 || e->serial == serial);
	}
	return pick;
}

/* One login of scope user fewer: re-store the record with the count down. */
static int
count_down(struct kh_index *ix, struct kh_index_entry *e, kh_error *err)
{
	struct kh_keyop op = { .kind = KH_KEYOP_READ, .key = e->serial };
	struct kh_keyop_result *res = NULL;
	struct kh_record *rec = NULL;
	size_t n = 0;
	int rc;

	if (kh_keyops_run(ix->uid, &op, 1, &res, &n, err) != 0)
		return -1;
	if (n != 1 || res[0].err != 0 || res[0].payload == NULL) {
		/* Gone already (the user's own logout): nothing to count down. */
		kh_keyop_results_free(res, n);
		return 0;
	}
	rc = kh_cache_check_attributes(res[0].owner, res[0].perm, ix->uid, err) != 0 ||
	     kh_cache_decode(res[0].payload, res[0].len, ix->uid, e->issuer, &rec, err) != 0
		     ? -1 : 0;
	kh_keyop_results_free(res, n);
	if (rc != 0)
		return -1;
	rec->logins = e->logins > 1 ? e->logins - 1 : 1;
	rc = store_locked(ix, rec, PIN_KEEP, NULL, NULL, err);
	kh_record_free(rec);
	return rc;
}

int
kh_cache_logout(uid_t uid, const char *user, const char *issuer_id,
		enum kh_scope scope, int32_t serial, bool revoke_on_logout,
		kh_error *err)
{
	struct kh_index_entry *e;
	struct kh_index ix;
	bool *pick = NULL;
	int lock, rc = 0;

	if (geteuid() != 0)
		return kh_fail(err, KH_ERR_PERM, "login accounting needs root");
	if (issuer_id == NULL)
		issuer_id = "";
	if (index_begin(uid, &ix, &lock, err) != 0)
		return -1;
	if (ix.n == 0 || strcmp(ix.user, user) != 0)
		goto out;   /* nothing of this login's left (expired, revoked, reused uid) */
	if (scope == KH_SCOPE_USER) {
		e = user_scope_record(&ix, issuer_id);
		if (e == NULL)
			goto out;
		if (e->logins > 1) {
			rc = count_down(&ix, e, err);
			goto save;
		}
		if (!revoke_on_logout) {
			e->logins = 0;
			goto save;
		}
		pick = pick_entries(&ix, issuer_id, KH_SCOPE_USER, -1, 0, err);
	} else {
		if (!revoke_on_logout)
			goto out;
		/* This login's own record; its PIN key lives in the same session
		 * keyring and goes with a DROP there. */
		pick = pick_entries(&ix, issuer_id, KH_SCOPE_SESSION, KH_INDEX_SESSION, serial, err);
	}
	if (pick == NULL) {
		rc = -1;
		goto out;
	}
	rc = revoke_locked(&ix, pick, issuer_id,
			   scope == KH_SCOPE_SESSION ? SCAN_SESSION_PIN : SCAN_NONE,
			   dest_ring(scope), err);
	rc = rc < 0 ? -1 : 1;
save:
	if (rc >= 0 && kh_index_save(&ix, err) != 0)
		rc = -1;
out:
	free(pick);
	index_end(&ix, lock);
	return rc;
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
	pick = pick_entries(&ix, issuer_id, -1, -1, 0, err);
	rc = pick == NULL ? -1 : revoke_locked(&ix, pick, issuer_id, SCAN_USER_KEYRING,
					      KEY_SPEC_USER_KEYRING, err);
	if (rc >= 0 && kh_index_save(&ix, err) != 0)
		rc = -1;
	free(pick);
	index_end(&ix, lock);
	return rc < 0 ? -1 : rc > 0 ? 0 : 1;
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
