/*
 * kh_fail_ssl — kh_fail plus OpenSSL's reason.  Kept apart from kh_error.c
 * so the lean core (what `kubehsm exec` links) needs no libcrypto.
 */
#include "config.h"

#include <stdarg.h>

#include <openssl/err.h>

#include "lib/kh_error.h"

int
kh_fail_ssl(kh_error *err, enum kh_errcode code, const char *fmt, ...)
{
	unsigned long e = ERR_peek_last_error();
	char reason[256];
	va_list ap;

	if (err != NULL) {
		va_start(ap, fmt);
		(void)kh_vfail(err, code, fmt, ap);
		va_end(ap);
		if (e != 0) {
			ERR_error_string_n(e, reason, sizeof(reason));
			kh_error_append(err, " (%s)", reason);
		}
	}
	ERR_clear_error();
	return -1;
}
