#include "config.h"

#include <dlfcn.h>
#include <stddef.h>

#include "lib/kh_dl.h"

bool
kh_pin_library_of(const void *symbol)
{
	Dl_info info;
	void *h;

	if (dladdr(symbol, &info) == 0 || info.dli_fname == NULL)
		return false;
	/* NOLOAD: only the copy already mapped; NODELETE sticks to it. */
	h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
	if (h == NULL)
		return false;
	dlclose(h);     /* drops our reference; the mapping stays */
	return true;
}
