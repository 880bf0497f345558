#include "config.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "kh_json.h"

static void *
kh_json_malloc(size_t n)
{
	return malloc(n);
}

/* Cleanse the whole usable block, not just the string: the lexer's growth
 * buffers may hold earlier copies past the current length. */
static void
kh_json_wiping_free(void *p)
{
	if (p == NULL)
		return;
	explicit_bzero(p, malloc_usable_size(p));
	free(p);
}

void
kh_json_wipe_on_free(bool enable)
{
	if (enable)
		json_set_alloc_funcs(kh_json_malloc, kh_json_wiping_free);
	else
		json_set_alloc_funcs(malloc, free);
}

void
kh_json_seed(void)
{
	uint32_t seed;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed))
		json_object_seed(seed);   /* 0 means "seed yourself": fine too */
}

char *
kh_json_dump_secret(const json_t *doc, size_t *len)
{
	char *out;

	out = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (out != NULL && len != NULL)
		*len = strlen(out);
	return out;
}
