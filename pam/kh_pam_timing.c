/*
 * kh_pam_timing — the module option timing=PATH|syslog (bench/TIMING.md):
 * each entry point writes one line of its steps' durations, so the bench's
 * login breakdown comes from the module itself.
 *
 * Off (the option absent) it costs one NULL test per step boundary: no
 * clock is read, nothing allocated, no system call made.  On, it never
 * changes what the module does or returns: a clock or a file that fails
 * only loses the line.  The line names no user and no token.
 */
#include "config.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "pam/kh_pam.h"

/* In the order of enum kh_pam_step, which is the order of the line. */
static const char *const step_names[KH_STEP_MAX] = {
	"user", "policy", "handoff", "p11_load", "find", "validate", "conv", "login",
	"challenge", "identity", "p11_close", "join", "polkit_load", "polkit", "issuer",
	"keygen", "mint", "relay", "store", "logout",
};

/* Microseconds from a to b; 0 if the clock did not move forward. */
static uint64_t
us_between(const struct timespec *a, const struct timespec *b)
{
	int64_t us = ((int64_t)b->tv_sec - (int64_t)a->tv_sec) * 1000000 +
		     ((int64_t)b->tv_nsec - (int64_t)a->tv_nsec) / 1000;

	return us > 0 ? (uint64_t)us : 0;
}

/* Now on CLOCK_MONOTONIC; false (the line is then dropped) if it fails. */
static bool
now(struct kh_pam_timing *t, struct timespec *ts)
{
	if (clock_gettime(CLOCK_MONOTONIC, ts) == 0)
		return true;
	t->broken = true;
	return false;
}

void
kh_pam_timing_begin(struct kh_pam_timing *t, const char *dest, const char *phase)
{
	memset(t, 0, sizeof(*t));
	t->dest = dest;
	t->phase = phase;
	if (now(t, &t->start))
		t->mark = t->start;
}

void
kh_pam_time_mark_(struct kh_pam_timing *t)
{
	(void)now(t, &t->mark);
}

void
kh_pam_time_add_(struct kh_pam_timing *t, enum kh_pam_step s)
{
	struct timespec ts;

	if (!now(t, &ts))
		return;
	t->us[s] += us_between(&t->mark, &ts);
	t->ran[s] = true;
	t->mark = ts;
}

/* Append " key=value" (or the head) to line; false when it does not fit. */
static bool
append(char *line, size_t size, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static bool
append(char *line, size_t size, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(line + *n, size - *n, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= size - *n)
		return false;
	*n += (size_t)k;
	return true;
}

void
kh_pam_timing_end(pam_handle_t *pamh, struct kh_pam_timing *t, int rc)
{
	struct timespec end;
	struct stat st;
	char line[KH_TIMING_LINE_MAX];
	size_t n = 0;
	ssize_t w;
	int fd;

	if (!now(t, &end) || t->broken)
		return;
	/* One byte kept for the newline. */
	if (!append(line, sizeof(line) - 1, &n, "kh-timing v1 module=pam_kubehsm pid=%ld "
		    "phase=%s rc=%d start=%llu total=%llu", (long)getpid(), t->phase, rc,
		    (unsigned long long)t->start.tv_sec * 1000000ULL +
		    (unsigned long long)t->start.tv_nsec / 1000ULL,
		    (unsigned long long)us_between(&t->start, &end)))
		return;
	for (int s = 0; s < KH_STEP_MAX; s++)
		if (t->ran[s] && !append(line, sizeof(line) - 1, &n, " %s=%llu", step_names[s],
					 (unsigned long long)t->us[s]))
			return;
	if (strcmp(t->dest, KH_TIMING_SYSLOG) == 0) {
		pam_syslog(pamh, LOG_DEBUG, "%s", line);
		return;
	}
	line[n++] = '\n';
	/* O_NONBLOCK: a FIFO at the path must not hang the login (its open
	 * fails without a reader); only a regular file of our own is written. */
	fd = open(t->dest, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
		  O_NONBLOCK, 0600);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
		/* One write: appends of concurrent logins do not interleave.  A
		 * short or failed write loses the line and nothing else. */
		w = write(fd, line, n);
		(void)w;
	}
	(void)close(fd);
}
