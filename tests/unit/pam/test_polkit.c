/*
 * test_polkit — kh_polkit_check without a polkitd: input checks, mode off,
 * and the "unreachable" outcomes.  The system bus address points at a
 * socket that cannot exist, so nothing here can reach a real daemon
 * (tests/integration/polkit/polkit.sh does that).
 */
#include "config.h"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pam/kh_polkit.h"

#define CACHE KH_POLKIT_ACTION_CACHE_CREDENTIALS

static int
check(enum kh_polkit_mode mode, const char *action, pid_t pid, uid_t uid,
      const char *const *details, bool *unreachable, kh_error *err)
{
	kh_error_clear(err);
	*unreachable = true;   /* must be reset by the call */
	return kh_polkit_check(mode, action, pid, uid, details, unreachable, err);
}

static void
t_off_contacts_nothing(void **state)
{
	kh_error err;
	bool unreachable;

	/* Even input that would be refused otherwise: off never looks. */
	assert_int_equal(check(KH_POLKIT_OFF, "Not Valid", -1, 0, NULL, &unreachable, &err), 1);
	assert_false(unreachable);
	assert_int_equal(err.code, KH_OK);
}

static void
t_bad_mode(void **state)
{
	kh_error err;
	bool unreachable;

	assert_int_equal(check((enum kh_polkit_mode)42, CACHE, getpid(), 1000, NULL,
			       &unreachable, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
}

static void
t_bad_action_ids(void **state)
{
	static const char *const bad[] = {
		"", "Org.kubehsm.x", "org.kubehsm x", "org/kubehsm", "org.kubehsm.\xc3\xa9",
	};
	kh_error err;
	bool unreachable;
	size_t i;

	assert_int_equal(check(KH_POLKIT_REQUIRED, NULL, getpid(), 1000, NULL,
			       &unreachable, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(check(KH_POLKIT_REQUIRED, bad[i], getpid(), 1000, NULL,
				       &unreachable, &err), -1);
		assert_int_equal(err.code, KH_ERR_INPUT);
		assert_false(unreachable);
	}
}

static void
t_bad_subject(void **state)
{
	kh_error err;
	bool unreachable;

	assert_int_equal(check(KH_POLKIT_REQUIRED, CACHE, 0, 1000, NULL, &unreachable, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	assert_int_equal(check(KH_POLKIT_REQUIRED, CACHE, -5, 1000, NULL, &unreachable, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	assert_int_equal(check(KH_POLKIT_REQUIRED, CACHE, getpid(), (uid_t)INT_MAX + 1u, NULL,
			       &unreachable, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	/* pid_max is at most 2^22: INT_MAX is never a live process. */
	assert_int_equal(check(KH_POLKIT_IF_AVAILABLE, CACHE, INT_MAX, 1000, NULL,
			       &unreachable, &err), -1);
	assert_int_equal(err.code, KH_ERR_NOTFOUND);
	assert_false(unreachable);
}

static void
t_bad_details(void **state)
{
	static const char *const odd[] = { "user", NULL };
	static const char *const empty_key[] = { "", "x", NULL };
	static const char *const bad_value[] = { "user", "\xff\xfe", NULL };
	static const char *const bad_key[] = { "us\x80r", "x", NULL };
	const char *const *cases[] = { odd, empty_key, bad_value, bad_key };
	kh_error err;
	bool unreachable;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(check(KH_POLKIT_IF_AVAILABLE, CACHE, getpid(), 1000,
				       cases[i], &unreachable, &err), -1);
		assert_int_equal(err.code, KH_ERR_INPUT);
		assert_false(unreachable);
	}
}

static void
t_unreachable_required(void **state)
{
	static const char *const details[] = { "user", "alice", NULL };
	kh_error err;
	bool unreachable;

	assert_int_equal(check(KH_POLKIT_REQUIRED, CACHE, getpid(), 1000, details,
			       &unreachable, &err), -1);
	assert_int_equal(err.code, KH_ERR_PERM);
	assert_non_null(strstr(err.msg, "polkit unreachable"));
	assert_non_null(strstr(err.msg, "required"));
	assert_false(unreachable);
}

static void
t_unreachable_if_available(void **state)
{
	kh_error err;
	bool unreachable;

	assert_int_equal(check(KH_POLKIT_IF_AVAILABLE, CACHE, getpid(), 1000, NULL,
			       &unreachable, &err), 1);
	assert_true(unreachable);
	assert_non_null(strstr(err.msg, "polkit unreachable"));
	assert_non_null(strstr(err.msg, "allowed by polkit.mode = if-available"));
}

static void
t_timeout_bounds(void **state)
{
	kh_error err;
	bool unreachable;

	kh_error_clear(&err);
	assert_int_equal(kh_polkit_check_timeout(KH_POLKIT_REQUIRED, CACHE, getpid(), 1000,
						 NULL, UINT_MAX, &unreachable, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
}

static void
t_login_groups(void **state)
{
	static const char *const ok_groups[] = { "dev", "ops" };
	static const char *const comma[] = { "dev", "a,b" };
	struct kh_polkit_login login = {
		.service = "sshd", .user = "alice", .token_serial = NULL,
		.kube_user = "alice", .kube_groups = comma, .nkube_groups = 2,
	};
	kh_error err;
	bool unreachable = true;

	kh_error_clear(&err);
	assert_int_equal(kh_polkit_check_login(KH_POLKIT_IF_AVAILABLE, getpid(), 1000,
					       &login, &unreachable, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	assert_false(unreachable);

	assert_int_equal(kh_polkit_check_login(KH_POLKIT_REQUIRED, getpid(), 1000,
					       NULL, &unreachable, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	assert_int_equal(kh_polkit_check_login(KH_POLKIT_OFF, getpid(), 1000,
					       NULL, &unreachable, &err), 1);

	/* Valid input (NULL serial = ""): reaches the bus, which is not there. */
	login.kube_groups = ok_groups;
	kh_error_clear(&err);
	assert_int_equal(kh_polkit_check_login(KH_POLKIT_IF_AVAILABLE, getpid(), 1000,
					       &login, &unreachable, &err), 1);
	assert_true(unreachable);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_off_contacts_nothing),
		cmocka_unit_test(t_bad_mode),
		cmocka_unit_test(t_bad_action_ids),
		cmocka_unit_test(t_bad_subject),
		cmocka_unit_test(t_bad_details),
		cmocka_unit_test(t_unreachable_required),
		cmocka_unit_test(t_unreachable_if_available),
		cmocka_unit_test(t_timeout_bounds),
		cmocka_unit_test(t_login_groups),
	};

	/* Never a real bus from a unit test. */
	if (setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/kubehsm-unit-test", 1) != 0)
		return 1;
	return cmocka_run_group_tests_name("polkit", tests, NULL, NULL);
}
