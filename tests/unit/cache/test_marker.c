/*
 * Unit tests for the "ended" marker's payload (cache/kh_cache_common.c):
 * it names the account whose session ended, so that a new account on a
 * reused uid is not told that a session it never had was ended.  Round
 * trips, and every payload that names no account.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cache/kh_cache_int.h"

static void
t_round_trip(void **state)
{
	static const char *const names[] = { "alice", "a", "svc-kube_01", "jürgen",
					     "DOMAIN\\\\bob", "bob@example.com" };
	char buf[KH_MARKER_MAX], user[256];
	int n;

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		n = kh_cache_marker_format(buf, sizeof(buf), 1700000000, names[i]);
		assert_true(n > 0);
		assert_int_equal((size_t)n, strlen(buf));
		assert_int_equal(kh_cache_marker_user(buf, (size_t)n, user, sizeof(user)), 0);
		assert_string_equal(user, names[i]);
	}
	/* The longest name the index keeps fits. */
	memset(user, 'x', 255);
	user[255] = '\0';
	n = kh_cache_marker_format(buf, sizeof(buf), INT64_MAX, user);
	assert_true(n > 0);
	assert_int_equal(kh_cache_marker_user(buf, (size_t)n, user, sizeof(user)), 0);
	assert_int_equal(strlen(user), 255);
}

/* Names a marker cannot carry are not written at all. */
static void
t_format_refuses(void **state)
{
	char buf[KH_MARKER_MAX], name[300];

	(void)state;
	assert_int_equal(kh_cache_marker_format(buf, sizeof(buf), 1, NULL), -1);
	assert_int_equal(kh_cache_marker_format(buf, sizeof(buf), 1, ""), -1);
	assert_int_equal(kh_cache_marker_format(buf, sizeof(buf), 1, "two words"), -1);
	assert_int_equal(kh_cache_marker_format(buf, sizeof(buf), 1, "new\nline"), -1);
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(kh_cache_marker_format(buf, sizeof(buf), 1, name), -1);
	assert_int_equal(kh_cache_marker_format(buf, 12, 1, "alice"), -1);
}

/* A payload that names no account is nobody's marker. */
static void
t_parse_refuses(void **state)
{
	static const char *const bad[] = {
		"revoked 1700000000",            /* an older kubehsm's: no name */
		"revoked 1700000000 ",
		"revoked  1700000000 alice",
		"revoked x alice",
		"revoked 1700000000 alice bob",
		"revoked 1700000000 alice\n",
		"revoked 123456789012345678901 alice",
		"ended 1700000000 alice",
		"revoked",
		"",
	};
	char user[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(kh_cache_marker_user(bad[i], strlen(bad[i]), user,
						      sizeof(user)), -1);
	/* An embedded NUL: the length is the kernel's, not strlen's. */
	assert_int_equal(kh_cache_marker_user("revoked 1 al\0ce", 15, user, sizeof(user)), -1);
	/* A name longer than the caller's buffer. */
	assert_int_equal(kh_cache_marker_user("revoked 1 alice", 15, user, 5), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_round_trip),
		cmocka_unit_test(t_format_refuses),
		cmocka_unit_test(t_parse_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
