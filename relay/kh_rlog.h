/*
 * kh_rlog — kubehsm-relayd's log: syslog (LOG_DAEMON) when it runs as a
 * daemon, stderr with a level prefix in the foreground.  One line per
 * event; session keys, certificates and request bytes are never logged.
 */
#ifndef KH_RLOG_H
#define KH_RLOG_H

#include <stdbool.h>
#include <syslog.h>

void kh_rlog_init(bool to_stderr, bool debug);
void kh_rlog(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* At most `burst` lines per second for one call site (a hostile peer must
 * not be able to flood the log); *state is that site's static counter. */
struct kh_rlog_limit {
	long second;
	unsigned count;
	unsigned dropped;
};
void kh_rlog_limited(struct kh_rlog_limit *lim, int priority, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
