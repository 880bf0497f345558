/*
 * kh_keydesc — keyctl_describe's text, parsed.  A file of its own: the
 * reader and the keyring helper (cache/kubehsm-keyops, a static program
 * that links nothing else of the cache) both need it.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/kh_cache_int.h"

int
kh_cache_parse_description(const char *text, uid_t *owner, key_perm_t *perm,
			   char *desc, size_t desclen)
{
	const char *p;
	char *end;
	unsigned long v;

	if (strncmp(text, "user;", 5) != 0)
		return -1;
	p = text + 5;
	errno = 0;
	v = strtoul(p, &end, 10);
	if (errno != 0 || end == p || *end != ';' || v > UINT32_MAX)
		return -1;
	*owner = (uid_t)v;
	p = strchr(end + 1, ';');   /* skip the gid */
	if (p == NULL)
		return -1;
	errno = 0;
	v = strtoul(p + 1, &end, 16);
	if (errno != 0 || end == p + 1 || *end != ';' || v > UINT32_MAX)
		return -1;
	*perm = (key_perm_t)v;
	if (desc != NULL) {
		size_t l = strlen(end + 1);

		if (l >= desclen)
			return -1;
		memcpy(desc, end + 1, l + 1);
	}
	return 0;
}
