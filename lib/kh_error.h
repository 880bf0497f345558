/*
 * kh_error — one error value threaded through the library.
 *
 * Library code never prints: it fills a kh_error and returns a failure, and
 * the caller (PAM module: syslog; helper: stderr) decides where it goes.
 * Messages are a single line, already phrased for the person who must act.
 *
 * Return convention: kh_fail, kh_vfail and kh_fail_ssl always return -1,
 * so a failing function can `return kh_fail(err, ...)`; err may be NULL.
 * kh_errcode_name never returns NULL.
 */
#ifndef KH_ERROR_H
#define KH_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#define KH_ERROR_MAX 512

/* Broad classes the callers map to PAM codes and exit statuses. */
enum kh_errcode {
	KH_OK = 0,
	KH_ERR_INTERNAL,     /* out of memory, library failure */
	KH_ERR_CONFIG,       /* policy file invalid or insecure */
	KH_ERR_INPUT,        /* malformed request, environment or argument */
	KH_ERR_NOTFOUND,     /* no session, no token, no certificate */
	KH_ERR_EXPIRED,      /* session or certificate past its time */
	KH_ERR_REVOKED,      /* session revoked */
	KH_ERR_REFUSED,      /* a record or certificate failed a security check */
	KH_ERR_PERM,         /* not allowed (uid, polkit, file mode) */
	KH_ERR_QUOTA,        /* kernel key quota exhausted */
	KH_ERR_UNSUPPORTED,  /* the kernel or token cannot do what is asked */
	KH_ERR_AUTH,         /* wrong PIN, failed proof of possession */
	KH_ERR_LOCKED,       /* token PIN locked */
	KH_ERR_TOKEN,        /* token or module failure */
};

typedef struct kh_error {
	enum kh_errcode code;
	char msg[KH_ERROR_MAX];
} kh_error;

/* Set *err (if err is non-NULL); returns -1 so callers can `return kh_fail(...)`. */
int kh_fail(kh_error *err, enum kh_errcode code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* kh_fail with a va_list. */
int kh_vfail(kh_error *err, enum kh_errcode code, const char *fmt, va_list ap);

/* Append to the message (bounded, still one line). */
void kh_error_append(kh_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Like kh_fail, appending the first queued OpenSSL error (and clearing the
 * queue).  In kh_error_ssl.c: part of the full library, not the core. */
int kh_fail_ssl(kh_error *err, enum kh_errcode code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

void kh_error_clear(kh_error *err);

/* Short lower-case name of an error class, for logs and JSON status. */
const char *kh_errcode_name(enum kh_errcode code);

#endif
