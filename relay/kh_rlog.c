#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "relay/kh_rlog.h"

#define KH_RLOG_BURST 10

static bool kh_rlog_stderr;
static bool kh_rlog_debug;

void
kh_rlog_init(bool to_stderr, bool debug)
{
	kh_rlog_stderr = to_stderr;
	kh_rlog_debug = debug;
	if (!to_stderr)
		openlog("kubehsm-relayd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

static const char *
kh_rlog_level(int priority)
{
	switch (priority) {
	case LOG_EMERG: case LOG_ALERT: case LOG_CRIT: case LOG_ERR: return "error";
	case LOG_WARNING: return "warning";
	case LOG_NOTICE: return "notice";
	case LOG_INFO: return "info";
	}
	return "debug";
}

static void
kh_rlog_v(int priority, const char *fmt, va_list ap)
{
	char line[1024];

	if (priority == LOG_DEBUG && !kh_rlog_debug)
		return;
	(void)vsnprintf(line, sizeof(line), fmt, ap);
	if (kh_rlog_stderr)
		(void)fprintf(stderr, "kubehsm-relayd: %s: %s\n", kh_rlog_level(priority), line);
	else
		syslog(priority, "%s", line);
}

void
kh_rlog(int priority, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kh_rlog_v(priority, fmt, ap);
	va_end(ap);
}

void
kh_rlog_limited(struct kh_rlog_limit *lim, int priority, const char *fmt, ...)
{
	struct timespec now;
	va_list ap;

	(void)clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec != lim->second) {
		if (lim->dropped > 0)
			kh_rlog(priority, "(%u similar messages suppressed)", lim->dropped);
		lim->second = now.tv_sec;
		lim->count = 0;
		lim->dropped = 0;
	}
	if (++lim->count > KH_RLOG_BURST) {
		lim->dropped++;
		return;
	}
	va_start(ap, fmt);
	kh_rlog_v(priority, fmt, ap);
	va_end(ap);
}
