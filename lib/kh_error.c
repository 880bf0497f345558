#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/kh_error.h"

/*
 * Messages are one line by contract and often quote input (a kind, an
 * apiVersion, a field name): a quoted "\n" or escape sequence must not break
 * the line or reach the terminal.  Control bytes become '?'.
 */
static void
kh_oneline(char *msg)
{
	for (unsigned char *p = (unsigned char *)msg; *p != '\0'; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static void
kh_vset(kh_error *err, enum kh_errcode code, const char *fmt, va_list ap)
{
	err->code = code;
	/* vsnprintf bounds and terminates; a truncated message is still useful. */
	(void)vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	kh_oneline(err->msg);
}

int
kh_fail(kh_error *err, enum kh_errcode code, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return -1;
	va_start(ap, fmt);
	kh_vset(err, code, fmt, ap);
	va_end(ap);
	return -1;
}

int
kh_vfail(kh_error *err, enum kh_errcode code, const char *fmt, va_list ap)
{
	if (err != NULL)
		kh_vset(err, code, fmt, ap);
	return -1;
}

void
kh_error_append(kh_error *err, const char *fmt, ...)
{
	va_list ap;
	size_t len;

	if (err == NULL)
		return;
	len = strlen(err->msg);
	va_start(ap, fmt);
	(void)vsnprintf(err->msg + len, sizeof(err->msg) - len, fmt, ap);
	va_end(ap);
	kh_oneline(err->msg);
}

void
kh_error_clear(kh_error *err)
{
	if (err == NULL)
		return;
	err->code = KH_OK;
	err->msg[0] = '\0';
}

const char *
kh_errcode_name(enum kh_errcode code)
{
	switch (code) {
	case KH_OK:              return "ok";
	case KH_ERR_INTERNAL:    return "internal";
	case KH_ERR_CONFIG:      return "config";
	case KH_ERR_INPUT:       return "input";
	case KH_ERR_NOTFOUND:    return "not-found";
	case KH_ERR_EXPIRED:     return "expired";
	case KH_ERR_REVOKED:     return "revoked";
	case KH_ERR_REFUSED:     return "refused";
	case KH_ERR_PERM:        return "permission";
	case KH_ERR_QUOTA:       return "quota";
	case KH_ERR_UNSUPPORTED: return "unsupported";
	case KH_ERR_AUTH:        return "auth";
	case KH_ERR_LOCKED:      return "locked";
	case KH_ERR_TOKEN:       return "token";
	}
	return "unknown";
}
