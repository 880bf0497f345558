/*
 * Unit tests for lib/kh_duration: the "8h" / "1h30m" durations of
 * kubehsm.conf, parsed strictly and formatted so they read back.
 */
#include "config.h"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lib/kh_duration.h"
#include "lib/kh_error.h"

static void
test_duration_good(void **state)
{
	static const struct { const char *in; long secs; } cases[] = {
		{ "90s", 90 }, { "15m", 900 }, { "8h", 28800 }, { "1h30m", 5400 },
		{ "1d", 86400 }, { "7d", 604800 }, { "0s", 0 }, { "007s", 7 },
		{ "1d2h3m4s", 93784 }, { "3600s", 3600 }, { "1d1s", 86401 },
		{ "2562047788015215h", 2562047788015215L * 3600 },
	};
	size_t i;
	kh_error err;
	long s;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		s = -1;
		if (kh_duration_parse(cases[i].in, &s, &err) != 0)
			print_error("%s: %s\n", cases[i].in, err.msg);
		assert_int_equal(s, cases[i].secs);
	}
}

static void
test_duration_bad(void **state)
{
	static const char *const bad[] = {
		"", "0", "h", "1", "-1s", "+1s", " 1h", "1h ", "1h 30m", "1x", "1.5h", "1H",
		"30m1h", "1h1h", "1s1m", "99999999999999999999s", "9223372036854775807m",
		"106751991167301d", "2562047788015215h1h", "1h30", "s1", "1e3s", "0x10s",
	};
	size_t i;
	kh_error err;
	long s = 42;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		kh_error_clear(&err);
		if (kh_duration_parse(bad[i], &s, &err) == 0) {
			print_error("\"%s\" was accepted as %ld\n", bad[i], s);
			fail();
		}
		assert_int_equal(err.code, KH_ERR_INPUT);
		assert_true(err.msg[0] != '\0');
		assert_int_equal(s, 42);                    /* untouched on failure */
	}
	assert_int_equal(kh_duration_parse(NULL, &s, &err), -1);
}

static void
test_duration_format(void **state)
{
	static const struct { long secs; const char *out; } cases[] = {
		{ 0, "0s" }, { 59, "59s" }, { 60, "1m" }, { 5400, "1h30m" },
		{ 86400, "1d" }, { 93784, "1d2h3m4s" }, { 604800, "7d" }, { 3601, "1h1s" },
	};
	char buf[32], tiny[3];
	size_t i;
	long back;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(kh_duration_format(cases[i].secs, buf, sizeof(buf)), 0);
		assert_string_equal(buf, cases[i].out);
		assert_int_equal(kh_duration_parse(buf, &back, NULL), 0);
		assert_int_equal(back, cases[i].secs);
	}
	assert_int_equal(kh_duration_format(-1, buf, sizeof(buf)), -1);
	assert_int_equal(kh_duration_format(93784, tiny, sizeof(tiny)), -1);
	assert_int_equal(kh_duration_format(LONG_MAX, buf, sizeof(buf)), 0);
	assert_int_equal(kh_duration_parse(buf, &back, NULL), 0);
	assert_int_equal(back, LONG_MAX);
}

/* Each refusal names its own cause: an admin reads these as the policy's
 * "file:line: session.ttl: ..." messages.  A number that fits but whose
 * seconds do not is "too long", not "number too large". */
static void
test_duration_messages(void **state)
{
	static const struct { const char *in; const char *want; } cases[] = {
		{ "", "empty duration" },
		{ "x1h", "expected a number at \"x1h\"" },
		{ "1h x", "expected a number at \" x\"" },
		{ "90", "missing unit after 90" },
		{ "1x", "unknown unit 'x'" },
		{ "1m1h", "largest to smallest" },
		{ "1h1h", "largest to smallest" },
		{ "99999999999999999999s", "number too large" },
		{ "106751991167301d", "too long" },
		{ "2562047788015215h1h", "largest to smallest" },
		{ "2562047788015215h3600s", "too long" },
	};
	size_t i;
	kh_error err;
	long s;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kh_error_clear(&err);
		assert_int_equal(kh_duration_parse(cases[i].in, &s, &err), -1);
		if (strstr(err.msg, cases[i].want) == NULL)
			fail_msg("\"%s\": '%s' lacks '%s'", cases[i].in, err.msg, cases[i].want);
		assert_int_equal(err.code, KH_ERR_INPUT);
	}
	/* Without an error to fill, a refusal is still a refusal. */
	assert_int_equal(kh_duration_parse("8x", &s, NULL), -1);
}

/* Too small a buffer is a refusal, never a truncated duration that would
 * read back as another one. */
static void
test_duration_format_bounds(void **state)
{
	char buf[8];

	(void)state;
	assert_int_equal(kh_duration_format(0, NULL, sizeof(buf)), -1);
	assert_int_equal(kh_duration_format(0, buf, 0), -1);
	assert_int_equal(kh_duration_format(0, buf, 2), -1);
	assert_int_equal(kh_duration_format(0, buf, 3), 0);
	assert_string_equal(buf, "0s");
	assert_int_equal(kh_duration_format(5400, buf, 5), -1);    /* "1h30m" */
	assert_int_equal(kh_duration_format(5400, buf, 6), 0);
	assert_string_equal(buf, "1h30m");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration_good),
		cmocka_unit_test(test_duration_bad),
		cmocka_unit_test(test_duration_messages),
		cmocka_unit_test(test_duration_format),
		cmocka_unit_test(test_duration_format_bounds),
	};

	return cmocka_run_group_tests_name("duration", tests, NULL, NULL);
}
