#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/kh_path.h"

int
kh_path_beside(const char *self, const char *const *names, size_t nnames,
	       const char *fallback, char *buf, size_t size)
{
	const char *slash = self != NULL ? strrchr(self, '/') : NULL;
	size_t i;
	int n;

	for (i = 0; slash != NULL && i < nnames; i++) {
		n = snprintf(buf, size, "%.*s/%s", (int)(slash - self), self, names[i]);
		if (n > 0 && (size_t)n < size && access(buf, R_OK) == 0)
			return 0;
	}
	n = snprintf(buf, size, "%s", fallback);
	return n > 0 && (size_t)n < size ? 0 : -1;
}
