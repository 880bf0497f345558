/*
 * kh_rstore — session slots in the relay's persistent keyring.
 *
 * Layout: persistent keyring of the relay's uid
 *           └─ keyring "kubehsm-relayd:v1:<name>"   (root's; possessor view/read/search)
 *                └─ user keys "kubehsm-relayd:slot:NNNNN" (root's; possessor
 *                   view/read/write/search/setattr; payload "-" when empty)
 * Root (at start) may add slots and unlink dead ones; the relay (after the
 * drop) reads, updates and times out the slots it possesses.  Updating a
 * key charges its owner, root, so the relay's own small quota is untouched.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <keyutils.h>

#include "lib/kh_mem.h"
#include "relay/kh_rlog.h"
#include "relay/kh_rstore.h"

#define KH_RSTORE_PREFIX "kubehsm-relayd:v1:"
#define KH_RSTORE_SLOT   "kubehsm-relayd:slot:"
#define KH_RSTORE_EMPTY  "-"
/* A slot outlives its session's expiry by this much: the relay empties it
 * first when it runs, and a stopped relay leaves it to the kernel. */
#define KH_RSTORE_GRACE 60

#define KH_RSTORE_VAULT_PERM (KEY_POS_VIEW | KEY_POS_READ | KEY_POS_SEARCH | \
			      KEY_USR_VIEW | KEY_USR_READ | KEY_USR_WRITE | KEY_USR_SEARCH)
#define KH_RSTORE_SLOT_PERM (KEY_POS_VIEW | KEY_POS_READ | KEY_POS_WRITE | KEY_POS_SEARCH | \
			     KEY_POS_SETATTR | KEY_USR_VIEW)

struct kh_rstore {
	key_serial_t persistent;
	key_serial_t vault;
	key_serial_t *slots;     /* 0 = lost (expired or failed) */
	bool *used;
	size_t nslots;
};

/* The slot number in a key description, or -1. */
static long
kh_rstore_slot_of(const char *desc)
{
	/* keyctl_describe: "type;uid;gid;perm;description" */
	const char *d = desc;
	char *end;
	long n;
	int i;

	for (i = 0; i < 4 && d != NULL; i++) {
		d = strchr(d, ';');
		if (d != NULL)
			d++;
	}
	if (d == NULL || strncmp(desc, "user;0;", 7) != 0 ||
	    strncmp(d, KH_RSTORE_SLOT, strlen(KH_RSTORE_SLOT)) != 0)
		return -1;
	d += strlen(KH_RSTORE_SLOT);
	errno = 0;
	n = strtol(d, &end, 10);
	if (errno != 0 || *end != '\0' || end == d || n < 0 || n > 1000000)
		return -1;
	return n;
}

static int
kh_rstore_grow(struct kh_rstore *st, size_t n, kh_error *err)
{
	key_serial_t *s;
	bool *u;

	if (n <= st->nslots)
		return 0;
	s = realloc(st->slots, n * sizeof(*s));
	if (s == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	st->slots = s;
	u = realloc(st->used, n * sizeof(*u));
	if (u == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	st->used = u;
	memset(st->slots + st->nslots, 0, (n - st->nslots) * sizeof(*s));
	memset(st->used + st->nslots, 0, (n - st->nslots) * sizeof(*u));
	st->nslots = n;
	return 0;
}

/* Index the slots the vault already holds; unlink what is dead or foreign. */
static int
kh_rstore_scan(struct kh_rstore *st, kh_error *err)
{
	key_serial_t *ids = NULL;
	int len, i;

	len = keyctl_read_alloc(st->vault, (void **)&ids);
	if (len < 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot list the relay keyring: %s",
			       strerror(errno));
	for (i = 0; i < len / (int)sizeof(key_serial_t); i++) {
		char *desc = NULL;
		long slot = -1;

		if (keyctl_describe_alloc(ids[i], &desc) >= 0)
			slot = kh_rstore_slot_of(desc);
		free(desc);
		if (slot < 0) {
			/* Expired, or not ours: it must not take a slot number. */
			(void)keyctl_unlink(ids[i], st->vault);
			continue;
		}
		if (kh_rstore_grow(st, (size_t)slot + 1, err) != 0) {
			free(ids);
			return -1;
		}
		if (st->slots[slot] != 0)
			(void)keyctl_unlink(ids[i], st->vault);
		else
			st->slots[slot] = ids[i];
	}
	free(ids);
	return 0;
}

static int
kh_rstore_make_slot(struct kh_rstore *st, size_t i, kh_error *err)
{
	char desc[64];
	key_serial_t k;

	(void)snprintf(desc, sizeof(desc), KH_RSTORE_SLOT "%05zu", i);
	k = add_key("user", desc, KH_RSTORE_EMPTY, strlen(KH_RSTORE_EMPTY), st->vault);
	if (k < 0)
		return kh_fail(err, errno == EDQUOT ? KH_ERR_QUOTA : KH_ERR_INTERNAL,
			       "cannot create relay key slot %zu: %s", i, strerror(errno));
	if (keyctl_setperm(k, KH_RSTORE_SLOT_PERM) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot set the permissions of relay key "
			       "slot %zu: %s", i, strerror(errno));
	st->slots[i] = k;
	return 0;
}

struct kh_rstore *
kh_rstore_open(uid_t relay_uid, const char *name, size_t nslots, kh_error *err)
{
	struct kh_rstore *st = calloc(1, sizeof(*st));
	char desc[160];
	long k;
	size_t i;

	if (st == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory"), NULL;
	/* Linked into our process keyring: the relay possesses it after the drop. */
	k = keyctl_get_persistent(relay_uid, KEY_SPEC_PROCESS_KEYRING);
	if (k < 0) {
		kh_fail(err, KH_ERR_UNSUPPORTED, "cannot get the persistent keyring of uid %u: %s "
			"(the relay keeps session keys there; the kernel needs "
			"CONFIG_PERSISTENT_KEYRINGS)", (unsigned)relay_uid, strerror(errno));
		goto fail;
	}
	st->persistent = (key_serial_t)k;
	(void)snprintf(desc, sizeof(desc), KH_RSTORE_PREFIX "%s", name);
	k = keyctl_search(st->persistent, "keyring", desc, 0);
	if (k < 0) {
		k = add_key("keyring", desc, NULL, 0, st->persistent);
		if (k < 0 || keyctl_setperm((key_serial_t)k, KH_RSTORE_VAULT_PERM) != 0) {
			kh_fail(err, KH_ERR_INTERNAL, "cannot create the relay keyring: %s",
				strerror(errno));
			goto fail;
		}
	}
	st->vault = (key_serial_t)k;
	if (kh_rstore_scan(st, err) != 0 || kh_rstore_grow(st, nslots, err) != 0)
		goto fail;
	for (i = 0; i < st->nslots; i++) {
		if (st->slots[i] == 0 && kh_rstore_make_slot(st, i, err) != 0)
			goto fail;
	}
	return st;
fail:
	kh_rstore_free(st);
	return NULL;
}

void
kh_rstore_free(struct kh_rstore *st)
{
	if (st == NULL)
		return;
	free(st->slots);
	free(st->used);
	free(st);
}

void
kh_rstore_foreach(struct kh_rstore *st,
		  void (*fn)(void *arg, int slot, const char *buf, size_t len), void *arg)
{
	size_t i;

	for (i = 0; i < st->nslots; i++) {
		char *buf = NULL;
		int len;

		if (st->slots[i] == 0)
			continue;
		len = keyctl_read_alloc(st->slots[i], (void **)&buf);
		if (len < 0) {
			kh_rlog(LOG_WARNING, "relay key slot %zu is unreadable (%s); not using it",
				i, strerror(errno));
			st->slots[i] = 0;
			continue;
		}
		if ((size_t)len == strlen(KH_RSTORE_EMPTY) && memcmp(buf, KH_RSTORE_EMPTY, 1) == 0) {
			kh_secure_free(buf, (size_t)len);
			continue;
		}
		st->used[i] = true;
		fn(arg, (int)i, buf, (size_t)len);
		kh_secure_free(buf, (size_t)len);
	}
}

int
kh_rstore_put(struct kh_rstore *st, int slot, const char *buf, size_t len, int64_t expires,
	      int *out, kh_error *err)
{
	int64_t left = expires - (int64_t)time(NULL) + KH_RSTORE_GRACE;
	size_t i;

	if (slot < 0) {
		for (i = 0; i < st->nslots; i++) {
			if (st->slots[i] != 0 && !st->used[i])
				break;
		}
		if (i == st->nslots)
			return kh_fail(err, KH_ERR_QUOTA, "every one of the relay's %zu session "
				       "slots is in use (relay.max_sessions)", st->nslots);
		slot = (int)i;
	}
	if ((size_t)slot >= st->nslots || st->slots[slot] == 0)
		return kh_fail(err, KH_ERR_INTERNAL, "relay key slot %d is gone", slot);
	if (keyctl_update(st->slots[slot], buf, len) != 0) {
		int e = errno;

		/* An expired or otherwise dead slot is not tried again. */
		if (e == EKEYEXPIRED || e == EKEYREVOKED || e == ENOKEY)
			st->slots[slot] = 0;
		return kh_fail(err, e == EDQUOT ? KH_ERR_QUOTA : KH_ERR_INTERNAL,
			       "cannot store the session in relay key slot %d: %s", slot,
			       strerror(e));
	}
	if (left < 1)
		left = 1;
	if (keyctl_set_timeout(st->slots[slot], left > UINT32_MAX ? UINT32_MAX : (unsigned)left)
	    != 0)
		kh_rlog(LOG_WARNING, "relay key slot %d: cannot set its timeout: %s", slot,
			strerror(errno));
	st->used[slot] = true;
	*out = slot;
	return 0;
}

void
kh_rstore_clear(struct kh_rstore *st, int slot)
{
	if (slot < 0 || (size_t)slot >= st->nslots || st->slots[slot] == 0)
		return;
	st->used[slot] = false;
	if (keyctl_update(st->slots[slot], KH_RSTORE_EMPTY, strlen(KH_RSTORE_EMPTY)) != 0 ||
	    keyctl_set_timeout(st->slots[slot], 0) != 0) {
		/* Cannot empty it: make sure it is never read again. */
		kh_rlog(LOG_WARNING, "relay key slot %d: cannot empty it (%s); invalidating it",
			slot, strerror(errno));
		(void)keyctl_invalidate(st->slots[slot]);
		st->slots[slot] = 0;
	}
}

int
kh_rstore_refresh(struct kh_rstore *st, kh_error *err)
{
	(void)st;
	if (keyctl_get_persistent((uid_t)-1, KEY_SPEC_PROCESS_KEYRING) < 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot refresh the persistent keyring: %s",
			       strerror(errno));
	return 0;
}
