/*
 * test_options — the module arguments (pam/kh_pam_options.c): each one
 * sets its switch and only it, anything else is refused with one log line,
 * and an entry point given a bad argument does nothing else.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include <cmocka.h>

#include "pam/kh_pam.h"
#include "tests/fakepam/fakepam.h"
#include "tests/unit/pam/fakes.h"

static const struct {
	const char *name;
	size_t offset;
} flags[] = {
	{ "use_first_pass", offsetof(struct kh_pam_opts, use_first_pass) },
	{ "try_first_pass", offsetof(struct kh_pam_opts, try_first_pass) },
	{ "authtok_is_pin", offsetof(struct kh_pam_opts, authtok_is_pin) },
	{ "debug", offsetof(struct kh_pam_opts, debug) },
	{ "no_cache", offsetof(struct kh_pam_opts, no_cache) },
	{ "join", offsetof(struct kh_pam_opts, join) },
	{ "forwarded", offsetof(struct kh_pam_opts, forwarded) },
};
#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

static bool
flag(const struct kh_pam_opts *o, size_t i)
{
	bool v;

	memcpy(&v, (const char *)o + flags[i].offset, sizeof(v));
	return v;
}

static int
parse(int argc, const char **argv, struct kh_pam_opts *o)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });
	int rc;

	memset(o, 0xa5, sizeof(*o));   /* every field must be set by the call */
	rc = kh_pam_parse_opts(pamh, argc, argv, o);
	fakepam_end(pamh);
	return rc;
}

static void
t_defaults(void **state)
{
	struct kh_pam_opts o;

	assert_int_equal(parse(0, NULL, &o), PAM_SUCCESS);
	for (size_t i = 0; i < NFLAGS; i++)
		assert_false(flag(&o, i));
	assert_string_equal(o.config, KH_DEFAULT_CONFIG);
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* Each switch alone sets itself and nothing else (use_first_pass needs
 * authtok_is_pin beside it, so it is checked with that one). */
static void
t_each_flag_alone(void **state)
{
	for (size_t i = 0; i < NFLAGS; i++) {
		const char *argv[] = { flags[i].name, "authtok_is_pin" };
		int argc = strcmp(flags[i].name, "use_first_pass") == 0 ? 2 : 1;
		struct kh_pam_opts o;

		assert_int_equal(parse(argc, argv, &o), PAM_SUCCESS);
		for (size_t j = 0; j < NFLAGS; j++)
			assert_int_equal(flag(&o, j),
					 j == i || (argc == 2 && strcmp(flags[j].name,
									"authtok_is_pin") == 0));
		assert_string_equal(o.config, KH_DEFAULT_CONFIG);
		fakepam_expect_log(FAKEPAM_NO_LOG);
	}
}

static void
t_all_together(void **state)
{
	const char *argv[] = { "forwarded", "join", "no_cache", "debug", "authtok_is_pin",
			       "try_first_pass", "use_first_pass", "config=/etc/kh/other.conf" };
	struct kh_pam_opts o;

	assert_int_equal(parse(8, argv, &o), PAM_SUCCESS);
	for (size_t i = 0; i < NFLAGS; i++)
		assert_true(flag(&o, i));
	assert_string_equal(o.config, "/etc/kh/other.conf");
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* config= keeps a pointer into argv (which outlives the call); the last
 * one given wins. */
static void
t_config(void **state)
{
	const char *argv[] = { "config=/a.conf", "debug", "config=/etc/kubehsm/b.conf" };
	struct kh_pam_opts o;

	assert_int_equal(parse(3, argv, &o), PAM_SUCCESS);
	assert_ptr_equal(o.config, argv[2] + strlen("config="));
	assert_true(o.debug);
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* Names are exact: no case folding, no values on switches, no relative or
 * empty config path. */
static void
t_bad_options(void **state)
{
	static const char *const bad[] = {
		"bogus", "DEBUG", "Debug", "debug=1", "debug ", " debug", "use_first_pass=1",
		"", "config", "config=", "config=kubehsm.conf", "config=./kubehsm.conf",
		"CONFIG=/etc/kubehsm/kubehsm.conf", "config =/x", "nocache", "no-cache",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *argv[] = { bad[i] };
		char line[160];
		struct kh_pam_opts o;

		assert_int_equal(parse(1, argv, &o), PAM_SERVICE_ERR);
		(void)snprintf(line, sizeof(line), "unknown or malformed module option '%s' "
			       "(config= needs an absolute path)", bad[i]);
		fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, line }));
	}
}

/* The first bad argument ends parsing: one line, for it. */
static void
t_first_bad_option_only(void **state)
{
	const char *argv[] = { "debug", "bogus", "join", "worse" };
	struct kh_pam_opts o;

	assert_int_equal(parse(4, argv, &o), PAM_SERVICE_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "unknown or malformed module option "
					 "'bogus' (config= needs an absolute path)" }));
}

/* use_first_pass would hand another module's password to the token: only
 * with authtok_is_pin, in either order.  try_first_pass alone is fine (it
 * asks for the PIN unless authtok_is_pin). */
static void
t_use_first_pass_needs_authtok_is_pin(void **state)
{
	const char *alone[] = { "use_first_pass" };
	const char *before[] = { "use_first_pass", "authtok_is_pin" };
	const char *after[] = { "authtok_is_pin", "use_first_pass" };
	const char *try[] = { "try_first_pass" };
	struct kh_pam_opts o;

	assert_int_equal(parse(1, alone, &o), PAM_SERVICE_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR,
		"use_first_pass hands an earlier module's password to the token as its PIN; "
		"add authtok_is_pin if the two are the same secret, or drop use_first_pass "
		"to be asked for the PIN" }));
	assert_int_equal(parse(2, before, &o), PAM_SUCCESS);
	assert_int_equal(parse(2, after, &o), PAM_SUCCESS);
	assert_int_equal(parse(1, try, &o), PAM_SUCCESS);
	assert_true(o.try_first_pass);
	assert_false(o.authtok_is_pin);
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* Every entry point: a bad argument is PAM_SERVICE_ERR before any work —
 * no prompt (the script is empty), no token, no cache, no data kept. */
static void
t_entry_points_refuse_bad_options(void **state)
{
	int (*const entry[])(pam_handle_t *, int, int, const char **) = {
		pam_sm_authenticate, pam_sm_setcred, pam_sm_open_session, pam_sm_close_session,
	};
	const char *argv[] = { "debug", "config=relative.conf" };

	for (size_t i = 0; i < sizeof(entry) / sizeof(entry[0]); i++) {
		pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){
			.user = FAKE_USER, .authtok = FAKE_PIN });
		const void *data = NULL;

		assert_int_equal(entry[i](pamh, 0, 2, argv), PAM_SERVICE_ERR);
		fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "unknown or malformed module option "
						 "'config=relative.conf' (config= needs an "
						 "absolute path)" }));
		assert_int_equal(pam_get_data(pamh, KH_PAM_DATA_LOGIN, &data), PAM_NO_MODULE_DATA);
		assert_int_equal(pam_get_data(pamh, KH_PAM_DATA_SESSION, &data),
				 PAM_NO_MODULE_DATA);
		fakepam_end(pamh);
	}
	assert_int_equal(fake_token.opens, 0);
	assert_int_equal(fake_token.ntried, 0);
	assert_int_equal(fake_cache.lists + fake_cache.counts + fake_cache.logouts, 0);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fakes_setup, fakes_teardown)
	const struct CMUnitTest tests[] = {
		T(t_defaults),
		T(t_each_flag_alone),
		T(t_all_together),
		T(t_config),
		T(t_bad_options),
		T(t_first_bad_option_only),
		T(t_use_first_pass_needs_authtok_is_pin),
		T(t_entry_points_refuse_bad_options),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
