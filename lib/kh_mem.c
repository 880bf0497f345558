#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "lib/kh_mem.h"

void
kh_secure_free(void *p, size_t n)
{
	if (p == NULL)
		return;
	explicit_bzero(p, n);
	free(p);
}

void
kh_secure_strfree(char *s)
{
	if (s == NULL)
		return;
	kh_secure_free(s, strlen(s));
}

char *
kh_strdup_or_null(const char *s)
{
	return s == NULL ? NULL : strdup(s);
}
