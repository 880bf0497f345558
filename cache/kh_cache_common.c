/*
 * kh_cache_common — checks every reader of a record applies, whoever reads
 * it (the user's own processes, or root's keyring helper for the admin
 * views).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cache/kh_cache_int.h"

int
kh_cache_keyring_fail(kh_error *err, int e, const char *what)
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

int
kh_cache_check_attributes(uid_t owner, key_perm_t perm, uid_t want, kh_error *err)
{
	if (owner != want)
		return kh_fail(err, KH_ERR_REFUSED,
			       "the session key is owned by uid %u, not %u; not using it",
			       (unsigned)owner, (unsigned)want);
	if ((perm & KH_PERM_MUTATE) != 0)
		return kh_fail(err, KH_ERR_REFUSED,
			       "the session key is writable (permissions %08x); not using it",
			       (unsigned)perm);
	if ((perm & KH_PERM_OTHERS) != 0)
		return kh_fail(err, KH_ERR_REFUSED,
			       "the session key is visible to other users (permissions %08x); "
			       "not using it", (unsigned)perm);
	if ((perm & KH_PERM_POSSESSOR) != 0)
		return kh_fail(err, KH_ERR_REFUSED,
			       "the session key can be read by whoever possesses it, also "
			       "another uid (permissions %08x); not using it", (unsigned)perm);
	return 0;
}

int
kh_cache_decode_as(const char *payload, size_t len, uid_t owner, const char *issuer_id,
		   enum kh_record_take take, struct kh_record **out, kh_error *err)
{
	struct kh_record *rec = NULL;

	*out = NULL;
	if (kh_record_decode_take(payload, len, take, &rec, err) != 0)
		return -1;
	if (strcmp(rec->issuer_id, issuer_id) != 0) {
		kh_record_free(rec);
		return kh_fail(err, KH_ERR_REFUSED, "session record is for another issuer");
	}
	if (kh_record_check(rec, owner, kh_cache_now(), err) != 0) {
		kh_record_free(rec);
		return -1;
	}
	*out = rec;
	return 0;
}

int
kh_cache_decode(const char *payload, size_t len, uid_t owner, const char *issuer_id,
		struct kh_record **out, kh_error *err)
{
	return kh_cache_decode_as(payload, len, owner, issuer_id, KH_RECORD_TAKE_PEMS, out, err);
}

const char *
kh_cache_desc_issuer(const char *desc, const char *kind)
{
	char prefix[32];
	size_t n;
	int len = snprintf(prefix, sizeof(prefix), "kubehsm:%s:v%d", kind, KH_RECORD_DESC_VERSION);

	if (len < 0 || (size_t)len >= sizeof(prefix))
		return NULL;
	n = (size_t)len;
	if (strncmp(desc, prefix, n) != 0)
		return NULL;
	if (desc[n] == '\0')
		return desc + n;
	return desc[n] == ':' ? desc + n + 1 : NULL;
}

#define MARKER_PREFIX "revoked "

/* A name a marker can carry and a reader can compare: no space or control
 * character (UTF-8 is fine), at most 255 bytes (what the index keeps). */
static int
marker_name_ok(const char *name, size_t len)
{
	size_t i;

	if (len == 0 || len > 255)
		return 0;
	for (i = 0; i < len; i++)
		if ((unsigned char)name[i] <= ' ' || (unsigned char)name[i] == 0x7f)
			return 0;
	return 1;
}

int
kh_cache_marker_format(char *buf, size_t size, int64_t when, const char *user)
{
	int n;

	if (user == NULL || !marker_name_ok(user, strlen(user)))
		return -1;
	n = snprintf(buf, size, MARKER_PREFIX "%" PRId64 " %s", when, user);
	return n > 0 && (size_t)n < size ? n : -1;
}

int
kh_cache_marker_user(const char *payload, size_t len, char *user, size_t size)
{
	const size_t plen = sizeof(MARKER_PREFIX) - 1;
	size_t i = plen, digits;

	if (len <= plen || memcmp(payload, MARKER_PREFIX, plen) != 0)
		return -1;
	for (digits = 0; i < len && payload[i] >= '0' && payload[i] <= '9'; i++)
		digits++;
	if (digits == 0 || digits > 20 || i >= len || payload[i] != ' ')
		return -1;
	i++;
	if (!marker_name_ok(payload + i, len - i) || len - i >= size)
		return -1;
	memcpy(user, payload + i, len - i);
	user[len - i] = '\0';
	return 0;
}
