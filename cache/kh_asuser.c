/*
 * kh_asuser — root acting on a user's keys with the user's filesystem ids
 * (see kh_asuser.h for why, and for what possession still does).
 */
#include "config.h"

#include <errno.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include "cache/kh_asuser.h"
#include "cache/kh_cache_int.h"

#define KH_NOGROUP       65534
#define KH_ASUSER_RING_MAX 2048   /* keys looked at in one keyring */
#define KH_DESC_PREFIX   "kubehsm:"

gid_t
kh_asuser_account_gid(uid_t uid)
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

/* setfsuid/setfsgid answer the previous id and never fail visibly; an
 * invalid id ((uid_t)-1) changes nothing, so it reads the current one. */
static uid_t
current_fsuid(void)
{
	return (uid_t)setfsuid((uid_t)-1);
}

static gid_t
current_fsgid(void)
{
	return (gid_t)setfsgid((gid_t)-1);
}

int
kh_asuser_begin(struct kh_asuser *as, uid_t uid, kh_error *err)
{
	memset(as, 0, sizeof(*as));
	if (geteuid() != 0 || current_fsuid() != 0)
		return kh_fail(err, KH_ERR_PERM, "acting on another user's keys needs root");
	if (uid == (uid_t)-1)
		return kh_fail(err, KH_ERR_INTERNAL, "no uid to act as");
	as->uid = uid;
	as->gid = kh_asuser_account_gid(uid);
	as->saved_fsgid = current_fsgid();
	as->active = true;
	/* The group first, while root still may set it to anything. */
	(void)setfsgid(as->gid);
	(void)setfsuid(uid);
	if (current_fsgid() != as->gid || current_fsuid() != uid) {
		kh_asuser_end(as);
		return kh_fail(err, KH_ERR_PERM, "cannot act as uid %u on its keys",
			       (unsigned)uid);
	}
	return 0;
}

void
kh_asuser_end(struct kh_asuser *as)
{
	if (!as->active)
		return;
	(void)setfsuid(0);
	(void)setfsgid(as->saved_fsgid);
	if (current_fsuid() != 0 || current_fsgid() != as->saved_fsgid)
		abort();   /* never back in the host with the user's ids */
	as->active = false;
}

/* The key's owner and description, when it is a user key. */
static int
describe(key_serial_t key, uid_t *owner, char *desc, size_t size)
{
	char text[KH_DESC_MAX + 64];
	key_perm_t perm;
	long n = keyctl_describe(key, text, sizeof(text));

	if (n < 0)
		return errno;
	if ((size_t)n > sizeof(text))
		return ENAMETOOLONG;   /* longer than any kubehsm description */
	text[sizeof(text) - 1] = '\0';
	if (kh_cache_parse_description(text, owner, &perm, desc, size) != 0)
		return EINVAL;
	return 0;
}

/* Is key the user's, and kubehsm's?  0, or an errno value (EPERM: it is
 * not one to touch). */
static int
check_key(const struct kh_asuser *as, key_serial_t key, char *desc, size_t size)
{
	uid_t owner;
	int e;

	if (!as->active)
		return EPERM;
	e = describe(key, &owner, desc, size);
	if (e != 0)
		return e;
	if (owner != as->uid || strncmp(desc, KH_DESC_PREFIX, strlen(KH_DESC_PREFIX)) != 0)
		return EPERM;
	return 0;
}

int
kh_asuser_invalidate(const struct kh_asuser *as, key_serial_t key)
{
	char desc[KH_DESC_MAX];
	int e = check_key(as, key, desc, sizeof(desc));

	if (e != 0)
		return e;
	return keyctl_invalidate(key) == 0 ? 0 : errno;
}

int
kh_asuser_link(const struct kh_asuser *as, key_serial_t key, key_serial_t ring)
{
	char desc[KH_DESC_MAX];
	int e = check_key(as, key, desc, sizeof(desc));

	if (e != 0)
		return e;
	return keyctl_link(key, ring) == 0 ? 0 : errno;
}

/* Invalidate key when it is the user's and described exactly desc. */
static void
drop_one(const struct kh_asuser *as, key_serial_t key, const char *desc,
	 key_serial_t *gone, size_t max, size_t *ngone)
{
	char have[KH_DESC_MAX];

	if (check_key(as, key, have, sizeof(have)) != 0 || strcmp(have, desc) != 0)
		return;
	if (keyctl_invalidate(key) != 0)
		return;
	if (*ngone < max)
		gone[*ngone] = key;
	(*ngone)++;
}

static int
drop_in_ring(const struct kh_asuser *as, key_serial_t ring, const char *desc,
	     key_serial_t *gone, size_t max, size_t *ngone)
{
	key_serial_t *keys = calloc(KH_ASUSER_RING_MAX, sizeof(*keys));
	long n;
	size_t i, count;

	if (keys == NULL)
		return ENOMEM;
	n = keyctl_read(ring, (char *)keys, KH_ASUSER_RING_MAX * sizeof(*keys));
	if (n < 0) {
		int e = errno;

		free(keys);
		return e;
	}
	count = (size_t)n / sizeof(*keys);
	if (count > KH_ASUSER_RING_MAX)
		count = KH_ASUSER_RING_MAX;
	for (i = 0; i < count; i++)
		drop_one(as, keys[i], desc, gone, max, ngone);
	free(keys);
	return 0;
}

/*
 * One line of /proc/keys: "SERIAL FLAGS USAGE TIMEOUT PERM UID GID TYPE
 * DESCRIPTION: SUMMARY".  Its serial, owner and type, and where the
 * description starts.  0, or -1 for a line of another shape.
 */
static int
parse_proc_line(const char *line, key_serial_t *serial, uid_t *owner, char *type,
		const char **desc)
{
	unsigned int s, perm, uid, gid;
	int off = -1;

	if (sscanf(line, "%x %*s %*d %*s %x %u %u %15s %n", &s, &perm, &uid, &gid, type,
		   &off) != 5 || off < 0 || s == 0 || s > INT32_MAX)
		return -1;
	*serial = (key_serial_t)s;
	*owner = (uid_t)uid;
	*desc = line + off;
	return 0;
}

/* Does the description at p (then ": summary" or the end) equal want? */
static bool
desc_is(const char *p, const char *want)
{
	size_t n = strlen(want);

	return strncmp(p, want, n) == 0 && (p[n] == ':' || p[n] == '\n' || p[n] == '\0');
}

/*
 * The user's keys of one type and description, as /proc/keys shows them
 * to a reader with the user's fsuid (it lists what the opener may view).
 * Calls fn for each; 0, or an errno value.
 */
static int
scan_proc(const struct kh_asuser *as, const char *want_type, const char *want_desc,
	  void (*fn)(key_serial_t key, void *ctx), void *ctx)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0;

	if (!as->active)
		return EPERM;
	f = fopen("/proc/keys", "re");
	if (f == NULL)
		return errno;
	while (getline(&line, &cap, f) > 0) {
		char type[16];
		const char *desc;
		key_serial_t key;
		uid_t owner;

		if (parse_proc_line(line, &key, &owner, type, &desc) != 0 || owner != as->uid ||
		    strcmp(type, want_type) != 0 || !desc_is(desc, want_desc))
			continue;
		fn(key, ctx);
	}
	free(line);
	(void)fclose(f);
	return 0;
}

struct drop_ctx {
	const struct kh_asuser *as;
	const char *desc;
	key_serial_t *gone;
	size_t max, *ngone;
};

static void
drop_found(key_serial_t key, void *ctx)
{
	struct drop_ctx *c = ctx;

	drop_one(c->as, key, c->desc, c->gone, c->max, c->ngone);
}

int
kh_asuser_drop(const struct kh_asuser *as, key_serial_t ring, const char *desc,
	       key_serial_t *gone, size_t max, size_t *ngone)
{
	struct drop_ctx c = { as, desc, gone, max, ngone };

	if (strncmp(desc, KH_DESC_PREFIX, strlen(KH_DESC_PREFIX)) != 0)
		return EINVAL;
	if (ring != 0)
		return drop_in_ring(as, ring, desc, gone, max, ngone);
	return scan_proc(as, "user", desc, drop_found, &c);
}

struct ring_ctx {
	key_serial_t found;
	unsigned count;
};

static void
ring_found(key_serial_t key, void *ctx)
{
	struct ring_ctx *c = ctx;

	c->found = key;
	c->count++;
}

key_serial_t
kh_asuser_user_keyring(const struct kh_asuser *as)
{
	struct ring_ctx c = { -1, 0 };
	char name[32];

	(void)snprintf(name, sizeof(name), "_uid.%u", (unsigned)as->uid);
	if (scan_proc(as, "keyring", name, ring_found, &c) != 0 || c.count != 1)
		return -1;
	return c.found;
}
