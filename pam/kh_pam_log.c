/*
 * kh_pam_log — the module's syslog lines (pam_syslog: LOG_AUTHPRIV, the
 * module and service named by libpam).
 *
 * A line names the user and what failed; never a PIN, a key or the
 * hand-off handle in full.
 */
#include "config.h"

#include <stdarg.h>
#include <syslog.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "pam/kh_pam.h"

void
kh_pam_log_fail(pam_handle_t *pamh, const char *user, const char *what,
		const kh_error *err)
{
	pam_syslog(pamh, LOG_NOTICE, "user '%s': %s: %s (%s)",
		   user ? user : "?", what, err->msg[0] ? err->msg : "failed",
		   kh_errcode_name(err->code));
}

void
kh_pam_debug(pam_handle_t *pamh, const struct kh_pam_opts *opts,
	     const char *fmt, ...)
{
	va_list ap;

	if (!opts->debug)
		return;
	va_start(ap, fmt);
	pam_vsyslog(pamh, LOG_DEBUG, fmt, ap);
	va_end(ap);
}
