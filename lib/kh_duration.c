/*
 * kh_duration — parse and format kubehsm.conf durations.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>

#include "lib/kh_duration.h"
#include "lib/kh_error.h"

/* Seconds per unit; units must appear largest first, each at most once. */
static long
kh_duration_unit(char c, int *rank)
{
	switch (c) {
	case 'd': *rank = 4; return 86400;
	case 'h': *rank = 3; return 3600;
	case 'm': *rank = 2; return 60;
	case 's': *rank = 1; return 1;
	}
	return 0;
}

int
kh_duration_parse(const char *text, long *seconds, kh_error *err)
{
	const char *p = text;
	long total = 0, n, unit, part;
	int rank, last_rank = 5;

	if (text == NULL || text[0] == '\0')
		return kh_fail(err, KH_ERR_INPUT, "empty duration (write e.g. \"8h\" or \"1h30m\")");
	while (*p != '\0') {
		if (!isdigit((unsigned char)*p))
			return kh_fail(err, KH_ERR_INPUT,
				       "bad duration \"%s\": expected a number at \"%s\" "
				       "(write e.g. \"90s\", \"15m\", \"8h\", \"1h30m\")", text, p);
		n = 0;
		while (isdigit((unsigned char)*p)) {
			/* Checked arithmetic: a huge number must not wrap into a small one. */
			if (__builtin_mul_overflow(n, 10L, &n) ||
			    __builtin_add_overflow(n, (long)(*p - '0'), &n))
				return kh_fail(err, KH_ERR_INPUT, "bad duration \"%s\": number too large", text);
			p++;
		}
		if (*p == '\0')
			return kh_fail(err, KH_ERR_INPUT,
				       "bad duration \"%s\": missing unit after %ld (use s, m, h or d)",
				       text, n);
		unit = kh_duration_unit(*p, &rank);
		if (unit == 0)
			return kh_fail(err, KH_ERR_INPUT,
				       "bad duration \"%s\": unknown unit '%c' (use s, m, h or d)",
				       text, *p);
		if (rank >= last_rank)
			return kh_fail(err, KH_ERR_INPUT,
				       "bad duration \"%s\": units must go from largest to smallest, "
				       "each once (e.g. \"1d2h30m\")", text);
		last_rank = rank;
		if (__builtin_mul_overflow(n, unit, &part) ||
		    __builtin_add_overflow(total, part, &total))
			return kh_fail(err, KH_ERR_INPUT, "bad duration \"%s\": too long", text);
		p++;
	}
	*seconds = total;
	return 0;
}

int
kh_duration_format(long seconds, char *buf, size_t n)
{
	static const struct { long secs; char unit; } units[] = {
		{ 86400, 'd' }, { 3600, 'h' }, { 60, 'm' }, { 1, 's' },
	};
	size_t i, used = 0;
	int w;

	if (seconds < 0 || buf == NULL || n == 0)
		return -1;
	if (seconds == 0) {
		w = snprintf(buf, n, "0s");
		return (w < 0 || (size_t)w >= n) ? -1 : 0;
	}
	buf[0] = '\0';
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (seconds < units[i].secs)
			continue;
		w = snprintf(buf + used, n - used, "%ld%c", seconds / units[i].secs, units[i].unit);
		if (w < 0 || (size_t)w >= n - used)
			return -1;
		used += (size_t)w;
		seconds %= units[i].secs;
	}
	return 0;
}
