/*
 * logcap — what a process sends to syslog(3), kept for its test.
 *
 * Preloaded (LD_PRELOAD) into the programs a test drives PAM through
 * (pamtester, pam_driver, sshd, login, su run by root), it appends each
 * message, with its priority, to the file KH_LOGCAP_FILE names, then hands
 * it to syslog as before.  A test that sees a login fail can then show the
 * PAM module's own reason (tests/harness/tap.sh prints what was logged
 * since the previous assertion) instead of "Error in service module".
 *
 * Why not a sink at /dev/log: there is one per machine, the suites of
 * several checkouts run at once, and a syslog daemon may own it.  A file
 * per test is nobody else's.
 *
 * The path is read once, when the library is loaded: sshd's
 * keyboard-interactive child runs PAM with an empty environment.  Nothing
 * here allocates, so it is safe wherever syslog is (after fork, in the
 * module's keyring child).  Test-only; never installed.
 */
/* These are the functions fortified builds turn syslog() calls into: this
 * file defines them, and must not see its own names as macros. */
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#define LOGCAP_PATH_MAX 4096
#define LOGCAP_LINE_MAX 4096

static char logcap_path[LOGCAP_PATH_MAX];

__attribute__((constructor)) static void
logcap_init(void)
{
	const char *p = getenv("KH_LOGCAP_FILE");

	if (p != NULL && p[0] == '/' && strlen(p) < sizeof(logcap_path))
		memcpy(logcap_path, p, strlen(p) + 1);
}

static const char *
level_name(int pri)
{
	static const char *const names[] = {
		"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
	};

	return names[LOG_PRI(pri)];
}

/* One line per message, written with one write(2) in append mode, so lines
 * of several processes never interleave. */
static void
logcap_keep(int pri, const char *fmt, va_list ap)
{
	char line[LOGCAP_LINE_MAX];
	int saved = errno, fd, n, m;

	if (logcap_path[0] == '\0')
		return;
	n = snprintf(line, sizeof(line), "%s: ", level_name(pri));
	if (n < 0 || (size_t)n >= sizeof(line))
		goto out;
	errno = saved;   /* for %m */
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	if (m < 0)
		goto out;
	n += m;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	while (n > 0 && line[n - 1] == '\n')
		n--;
	line[n++] = '\n';
	fd = open(logcap_path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		(void)!write(fd, line, (size_t)n);
		(void)close(fd);
	}
out:
	errno = saved;
}

typedef void (*vsyslog_fn)(int, const char *, va_list);
typedef void (*vsyslog_chk_fn)(int, int, const char *, va_list);

void
vsyslog(int pri, const char *fmt, va_list ap)
{
	vsyslog_fn next = (vsyslog_fn)dlsym(RTLD_NEXT, "vsyslog");
	va_list copy;

	va_copy(copy, ap);
	logcap_keep(pri, fmt, copy);
	va_end(copy);
	if (next != NULL)
		next(pri, fmt, ap);
}

void
syslog(int pri, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsyslog(pri, fmt, ap);
	va_end(ap);
}

/* What _FORTIFY_SOURCE builds (libpam among them) call instead. */
void __vsyslog_chk(int pri, int flag, const char *fmt, va_list ap);
void __syslog_chk(int pri, int flag, const char *fmt, ...);

void
__vsyslog_chk(int pri, int flag, const char *fmt, va_list ap)
{
	vsyslog_chk_fn next = (vsyslog_chk_fn)dlsym(RTLD_NEXT, "__vsyslog_chk");
	va_list copy;

	va_copy(copy, ap);
	logcap_keep(pri, fmt, copy);
	va_end(copy);
	if (next != NULL)
		next(pri, flag, fmt, ap);
}

void
__syslog_chk(int pri, int flag, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	__vsyslog_chk(pri, flag, fmt, ap);
	va_end(ap);
}
