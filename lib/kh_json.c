#include "config.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "lib/kh_json.h"

/*
 * The allocators jansson had when wiping was first turned on: the host
 * process (a login program that uses jansson itself) may have set its own,
 * and turning wiping off must give exactly those back.  Enables nest; the
 * outermost disable restores.
 */
static json_malloc_t host_malloc;
static json_free_t host_free;
static unsigned wipe_depth;

static void *
kh_json_malloc(size_t n)
{
	return host_malloc(n);
}

/* Cleanse the whole usable block, not just the string: the lexer's growth
 * buffers may hold earlier copies past the current length.  The usable
 * size is known only for the C library's own allocator; with a host
 * allocator the block is handed back as it is. */
static void
kh_json_wiping_free(void *p)
{
	if (p == NULL)
		return;
	if (host_free == free)
		explicit_bzero(p, malloc_usable_size(p));
	host_free(p);
}

void
kh_json_wipe_on_free(bool enable)
{
	if (enable) {
		if (wipe_depth++ > 0)
			return;
		json_get_alloc_funcs(&host_malloc, &host_free);
		if (host_malloc == NULL || host_free == NULL) {
			host_malloc = malloc;
			host_free = free;
		}
		json_set_alloc_funcs(kh_json_malloc, kh_json_wiping_free);
		return;
	}
	if (wipe_depth == 0 || --wipe_depth > 0)
		return;
	json_set_alloc_funcs(host_malloc, host_free);
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
