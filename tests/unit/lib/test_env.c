/*
 * test_env — lib/kh_env: pkcs11.env set around a module's initialisation
 * and put back exactly as it was, and the names and values a policy may
 * give, and when two modules' environments are the same.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/kh_env.h"

static struct kh_env
pairs(char **names, char **values, size_t n)
{
	return (struct kh_env){ names, values, n };
}

/* Set: what was there comes back; unset: it is unset again — not empty. */
static void
t_apply_restore(void **state)
{
	char *names[] = { "KH_TEST_WAS_SET", "KH_TEST_WAS_UNSET", "KH_TEST_EMPTY" };
	char *values[] = { "new", "value", "" };
	struct kh_env env = pairs(names, values, 3);
	struct kh_env_saved saved;
	kh_error err = { 0 };

	(void)state;
	assert_int_equal(setenv("KH_TEST_WAS_SET", "old", 1), 0);
	assert_int_equal(unsetenv("KH_TEST_WAS_UNSET"), 0);
	assert_int_equal(setenv("KH_TEST_EMPTY", "", 1), 0);
	assert_int_equal(kh_env_apply(&env, &saved, &err), 0);
	assert_string_equal(getenv("KH_TEST_WAS_SET"), "new");
	assert_string_equal(getenv("KH_TEST_WAS_UNSET"), "value");
	assert_string_equal(getenv("KH_TEST_EMPTY"), "");
	kh_env_restore(&saved);
	assert_string_equal(getenv("KH_TEST_WAS_SET"), "old");
	assert_null(getenv("KH_TEST_WAS_UNSET"));
	assert_non_null(getenv("KH_TEST_EMPTY"));
	assert_string_equal(getenv("KH_TEST_EMPTY"), "");
	assert_int_equal(saved.n, 0);
	(void)unsetenv("KH_TEST_WAS_SET");
	(void)unsetenv("KH_TEST_EMPTY");
}

/* The same name twice (not from a policy, which libconfig keeps unique):
 * restoring in reverse still ends where it began. */
static void
t_same_name_twice(void **state)
{
	char *names[] = { "KH_TEST_TWICE", "KH_TEST_TWICE" };
	char *values[] = { "one", "two" };
	struct kh_env env = pairs(names, values, 2);
	struct kh_env_saved saved;
	kh_error err = { 0 };

	(void)state;
	assert_int_equal(unsetenv("KH_TEST_TWICE"), 0);
	assert_int_equal(kh_env_apply(&env, &saved, &err), 0);
	assert_string_equal(getenv("KH_TEST_TWICE"), "two");
	kh_env_restore(&saved);
	assert_null(getenv("KH_TEST_TWICE"));
}

/* Nothing to set is nothing changed; restoring that is a no-op. */
static void
t_empty(void **state)
{
	struct kh_env_saved saved;
	struct kh_env none = { 0 };
	kh_error err = { 0 };

	(void)state;
	assert_int_equal(kh_env_apply(NULL, &saved, &err), 0);
	kh_env_restore(&saved);
	assert_int_equal(kh_env_apply(&none, &saved, &err), 0);
	kh_env_restore(&saved);
	kh_env_restore(NULL);
}

/* A failure half-way puts back what was set (setenv refuses a name with
 * '=', which a policy never has). */
static void
t_failure_puts_back(void **state)
{
	char *names[] = { "KH_TEST_FIRST", "BAD=NAME" };
	char *values[] = { "set", "x" };
	struct kh_env env = pairs(names, values, 2);
	struct kh_env_saved saved;
	kh_error err = { 0 };

	(void)state;
	assert_int_equal(unsetenv("KH_TEST_FIRST"), 0);
	assert_int_equal(kh_env_apply(&env, &saved, &err), -1);
	assert_non_null(strstr(err.msg, "cannot set BAD=NAME"));
	assert_null(getenv("KH_TEST_FIRST"));
}

static void
t_names(void **state)
{
	static const char *const good[] = {
		"OPENSC_CONF", "PCSCLITE_CSOCK_NAME", "TPM2_PKCS11_STORE", "_X", "A1",
		"DBUS_SESSION_BUS_ADDRESS", "TSS2_LOG",
	};
	static const char *const bad[] = {
		"", "opensc_conf", "1A", "A-B", "A B", "A=B", "LD_PRELOAD", "LD_LIBRARY_PATH",
		"LD_", "Ä",
		"A1234567890123456789012345678901234567890123456789012345678901234",  /* 65 */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (kh_env_name_problem(good[i]) != NULL)
			fail_msg("refused '%s'", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (kh_env_name_problem(bad[i]) == NULL)
			fail_msg("accepted '%s'", bad[i]);
	assert_non_null(strstr(kh_env_name_problem("LD_AUDIT"), "dynamic loader"));
	assert_null(kh_env_name_problem("LDAP_CONF"));       /* not LD_ */
}

static void
t_values(void **state)
{
	char big[KH_ENV_VALUE_MAX + 2];

	(void)state;
	assert_null(kh_env_value_problem(""));
	assert_null(kh_env_value_problem("tabrmd:bus_type=session"));
	assert_null(kh_env_value_problem("unix:path=/run/kubehsm/tpm/bus.sock"));
	assert_non_null(kh_env_value_problem("a\nb"));
	assert_non_null(kh_env_value_problem("a\tb"));
	assert_non_null(kh_env_value_problem("\x1b[2J"));
	assert_non_null(kh_env_value_problem("del\x7f"));
	assert_non_null(kh_env_value_problem(NULL));
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_non_null(kh_env_value_problem(big));
	big[KH_ENV_VALUE_MAX] = '\0';
	assert_null(kh_env_value_problem(big));
}

/* Two modules' environments are the same only with the same variables and
 * values; the order of the policy's lines does not matter, NULL is empty. */
static void
t_equal(void **state)
{
	char *n1[] = { "A", "B" }, *v1[] = { "1", "2" };
	char *n2[] = { "B", "A" }, *v2[] = { "2", "1" };
	char *n3[] = { "A", "B" }, *v3[] = { "1", "3" };
	char *n4[] = { "A", "C" }, *v4[] = { "1", "2" };
	char *n5[] = { "A" }, *v5[] = { "1" };
	struct kh_env a = pairs(n1, v1, 2), b = pairs(n2, v2, 2), c = pairs(n3, v3, 2);
	struct kh_env d = pairs(n4, v4, 2), e = pairs(n5, v5, 1), none = pairs(NULL, NULL, 0);

	(void)state;
	assert_true(kh_env_equal(&a, &a));
	assert_true(kh_env_equal(&a, &b));
	assert_false(kh_env_equal(&a, &c));
	assert_false(kh_env_equal(&a, &d));
	assert_false(kh_env_equal(&a, &e));
	assert_false(kh_env_equal(&e, &a));
	assert_true(kh_env_equal(&none, NULL));
	assert_true(kh_env_equal(NULL, NULL));
	assert_false(kh_env_equal(&e, NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_apply_restore),
		cmocka_unit_test(t_same_name_twice),
		cmocka_unit_test(t_empty),
		cmocka_unit_test(t_failure_puts_back),
		cmocka_unit_test(t_names),
		cmocka_unit_test(t_values),
		cmocka_unit_test(t_equal),
	};

	return cmocka_run_group_tests_name("module environment", tests, NULL, NULL);
}
