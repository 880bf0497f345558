/*
 * kh_cache_list — the sessions a uid holds, for `kubehsm status` and the
 * admin views.  Never carries a key out: every listed record has its
 * session key wiped as soon as it is decoded.
 *
 * Root lists what its index says it issued (any scope: also the records
 * living in a login's session keyring, which no keyring search reaches)
 * plus any record left in a user keyring that the index does not know;
 * each uid's keys are read by a child acting as that uid (kh_keyops).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/kh_cache_int.h"
#include "cache/kh_index.h"
#include "cache/kh_keyops.h"
#include "lib/kh_mem.h"
#include "lib/kh_rundir.h"

#define KH_SESSION_PREFIX "kubehsm:session:v"

struct listing {
	struct kh_cache_entry *e;
	size_t n, cap;
};

static struct kh_cache_entry *
listing_push(struct listing *l)
{
	struct kh_cache_entry *ne;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		ne = reallocarray(l->e, l->cap, sizeof(*ne));
		if (ne == NULL)
			return NULL;
		l->e = ne;
	}
	memset(&l->e[l->n], 0, sizeof(l->e[0]));
	return &l->e[l->n++];
}

static bool
listed(const struct listing *l, uid_t uid, key_serial_t key)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->e[i].uid == uid && l->e[i].serial == key)
			return true;
	return false;
}

/* One key the helper read: check it as a reader would, keep it listed
 * without its key. */
static int
add_result(struct listing *l, uid_t uid, const struct kh_keyop_result *r)
{
	struct kh_cache_entry *e;
	const char *issuer;
	kh_error why;

	if (r->err != 0 || listed(l, uid, r->key))
		return 0;   /* gone since it was issued (logout, expiry) */
	issuer = kh_cache_desc_issuer(r->desc, "session");
	if (issuer == NULL)
		return 0;
	e = listing_push(l);
	if (e == NULL)
		return -1;
	e->uid = uid;
	e->serial = r->key;
	(void)snprintf(e->description, sizeof(e->description), "%s", r->desc);
	kh_error_clear(&why);
	if (kh_cache_check_attributes(r->owner, r->perm, uid, &why) != 0 ||
	    r->payload == NULL ||
	    kh_cache_decode(r->payload, r->len, uid, issuer, &e->rec, &why) != 0) {
		if (r->payload == NULL && why.code == KH_OK)
			kh_fail(&why, KH_ERR_REFUSED, "unreadable");
		e->state = why.code == KH_ERR_EXPIRED ? KH_MISS_EXPIRED : KH_MISS_REFUSED;
		(void)snprintf(e->problem, sizeof(e->problem), "%s", why.msg);
		return 0;
	}
	kh_secure_strfree(e->rec->key_pem);
	e->rec->key_pem = NULL;
	e->state = KH_MISS_NONE;
	return 0;
}

/*
 * One uid: the index's session records (root) and whatever the uid's own
 * keyrings hold directly.  A user lists their own session and user
 * keyrings; root reaches a uid's user keyring only (it has no login
 * session of theirs).
 */
static int
list_uid(uid_t uid, const struct kh_index *ix, struct listing *l, kh_error *err)
{
	struct kh_keyop ops[KH_INDEX_MAX_ENTRIES + 2];
	struct kh_keyop_result *res = NULL;
	size_t nops = 0, nres = 0, i;
	int rc = 0;

	for (i = 0; ix != NULL && i < ix->n; i++)
		if (ix->e[i].kind == KH_INDEX_SESSION)
			ops[nops++] = (struct kh_keyop){ .kind = KH_KEYOP_READ, .key = ix->e[i].serial };
	ops[nops++] = (struct kh_keyop){ .kind = KH_KEYOP_SCAN, .ring = KEY_SPEC_USER_KEYRING,
					 .desc = KH_SESSION_PREFIX, .read = true };
	if (geteuid() != 0)
		ops[nops++] = (struct kh_keyop){ .kind = KH_KEYOP_SCAN,
						 .ring = KEY_SPEC_SESSION_KEYRING,
						 .desc = KH_SESSION_PREFIX, .read = true };
	if (kh_keyops_run(uid, ops, nops, &res, &nres, err) != 0)
		return -1;
	for (i = 0; i < nres && rc == 0; i++)
		if (add_result(l, uid, &res[i]) != 0)
			rc = kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	kh_keyop_results_free(res, nres);
	return rc;
}

/* uids that own keys, from /proc/key-users ("  1001:     5 5/5 ..."). */
static int
key_users(uid_t **uids, size_t *n, kh_error *err)
{
	FILE *f = fopen("/proc/key-users", "re");
	char line[256];
	size_t cap = 0;
	uid_t *v = NULL;
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
		if (kh_uids_push(&v, n, &cap, (uid_t)u) != 0) {
			free(v);
			fclose(f);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
	}
	fclose(f);
	*uids = v;
	return 0;
}

/* a ∪ b into *a (both from the allocator). */
static int
merge_uids(uid_t **a, size_t *na, const uid_t *b, size_t nb)
{
	uid_t *v;
	size_t i, j, n = *na;

	v = reallocarray(*a, *na + nb + 1, sizeof(*v));
	if (v == NULL)
		return -1;
	for (i = 0; i < nb; i++) {
		for (j = 0; j < n && v[j] != b[i]; j++)
			;
		if (j == n)
			v[n++] = b[i];
	}
	*a = v;
	*na = n;
	return 0;
}

static int
list_as_root(uid_t only, struct listing *l, kh_error *err)
{
	uid_t *uids = NULL, *more = NULL;
	size_t nuids = 0, nmore = 0, i;
	int rc = 0;

	if (only != (uid_t)-1) {
		uids = malloc(sizeof(*uids));
		if (uids == NULL)
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		uids[0] = only;
		nuids = 1;
	} else if (kh_index_uids(&uids, &nuids, err) != 0 ||
		   key_users(&more, &nmore, err) != 0 ||
		   merge_uids(&uids, &nuids, more, nmore) != 0) {
		free(uids);
		free(more);
		return err != NULL && err->code != KH_OK ? -1
			: kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	}
	free(more);
	for (i = 0; i < nuids && rc == 0; i++) {
		struct kh_index ix;
		int lock = kh_rundir_lock_uid(uids[i], err);

		if (lock < 0) {
			rc = -1;
			break;
		}
		rc = kh_index_load(uids[i], &ix, err);
		if (rc == 0)
			rc = list_uid(uids[i], &ix, l, err);
		kh_index_clear(&ix);
		kh_rundir_unlock(lock);
	}
	free(uids);
	return rc;
}

int
kh_cache_list(uid_t uid, struct kh_cache_entry **out, size_t *n, kh_error *err)
{
	struct listing l = { 0 };
	int rc;

	*out = NULL;
	*n = 0;
	if (geteuid() == 0) {
		rc = list_as_root(uid, &l, err);
	} else if (uid == (uid_t)-1) {
		return kh_fail(err, KH_ERR_PERM, "listing every user's sessions needs root");
	} else if (uid != getuid()) {
		return kh_fail(err, KH_ERR_PERM, "only root may list another user's sessions");
	} else {
		rc = list_uid(uid, NULL, &l, err);
	}
	if (rc != 0) {
		kh_cache_entries_free(l.e, l.n);
		return -1;
	}
	*out = l.e;
	*n = l.n;
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
