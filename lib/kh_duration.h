/*
 * kh_duration — the durations an admin writes in kubehsm.conf ("8h",
 * "1h30m"), read and written back.
 *
 * Return convention: 0 on success, -1 on failure (with err set where the
 * function takes one).
 */
#ifndef KH_DURATION_H
#define KH_DURATION_H

#include <stddef.h>

#include "lib/kh_error.h"

/*
 * Parse a duration: one or more <number><unit> with unit s, m, h or d
 * ("90s", "15m", "8h", "1h30m"), largest unit first, each at most once.
 * Rejects empty, negative, unitless, overflowing or unknown-unit input.
 * Returns 0 and sets *seconds.
 */
int kh_duration_parse(const char *text, long *seconds, kh_error *err);

/*
 * Format seconds as the shortest duration string kh_duration_parse reads
 * back (5400 -> "1h30m", 0 -> "0s").  Returns 0, or -1 if seconds is
 * negative or buf (size n) is too small.
 */
int kh_duration_format(long seconds, char *buf, size_t n);

#endif
