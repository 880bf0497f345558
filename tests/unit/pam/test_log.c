/*
 * test_log — the module's log lines and the state it keeps in the handle
 * (pam/kh_pam_log.c, kh_pam_user.c, kh_pam_policy.c, kh_pam_state.c): what
 * each line says, debug lines only under `debug`, the account's canonical
 * name, and a whole login — auth with debug, the hand-off stash, the
 * session, the logout — with no PIN in any line, message, environment
 * variable or stash.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "pam/kh_pam.h"
#include "tests/fakepam/fakepam.h"
#include "tests/unit/pam/fakes.h"

static pam_handle_t *
start(const char *user)
{
	return fakepam_start(&(struct fakepam_config){ .user = user });
}

/* ---- the lines ----------------------------------------------------------- */

static void
t_log_fail(void **state)
{
	pam_handle_t *pamh = start(FAKE_USER);
	kh_error err = { 0 };

	kh_fail(&err, KH_ERR_AUTH, "wrong PIN for token '%s'", "alice");
	kh_pam_log_fail(pamh, FAKE_USER, "token login", &err);
	kh_pam_log_fail(pamh, NULL, "policy", &err);
	kh_error_clear(&err);
	kh_pam_log_fail(pamh, FAKE_USER, "logout", &err);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_NOTICE, "user 'alice': token login: wrong PIN for token 'alice' (auth)" },
		{ LOG_NOTICE, "user '?': policy: wrong PIN for token 'alice' (auth)" },
		{ LOG_NOTICE, "user 'alice': logout: failed (ok)" }));
	fakepam_end(pamh);
}

static void
t_debug_only_under_option(void **state)
{
	pam_handle_t *pamh = start(FAKE_USER);
	struct kh_pam_opts quiet = { .debug = false }, loud = { .debug = true };

	kh_pam_debug(pamh, &quiet, "user '%s': %d", "alice", 1);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	kh_pam_debug(pamh, &loud, "user '%s': %d", "alice", 2);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_DEBUG, "user 'alice': 2" }));
	fakepam_end(pamh);
}

/* ---- the account --------------------------------------------------------- */

/* The account's own name, kept with the handle until pam_end, whatever
 * was typed. */
static void
t_canonical_name(void **state)
{
	pam_handle_t *pamh = start("Alice@EXAMPLE");
	const char *user = NULL;
	uid_t uid = 0;
	gid_t gid = 0;

	fakepam_nss_alias("Alice@EXAMPLE", FAKE_USER);
	assert_int_equal(kh_pam_get_user(pamh, &user, &uid, &gid), PAM_SUCCESS);
	assert_string_equal(user, FAKE_USER);
	assert_int_equal(uid, FAKE_UID);
	assert_int_equal(gid, FAKE_UID);
	fakepam_reset();                /* the database is gone; the name stays */
	assert_string_equal(user, FAKE_USER);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	fakepam_end(pamh);
}

/* An entry larger than the first buffer is read; one over 1 MiB reads as
 * no such user (today's behaviour). */
static void
t_large_passwd_entry(void **state)
{
	size_t big = 100 * 1024, huge = (1u << 20) + 1;
	char *gecos = malloc(huge + 1);
	pam_handle_t *pamh;
	const char *user = NULL;
	uid_t uid;
	gid_t gid;

	assert_non_null(gecos);
	memset(gecos, 'g', huge);
	gecos[big] = '\0';
	fakepam_nss_user("bigbob", 2000, 2000, gecos);
	gecos[big] = 'g';
	gecos[huge] = '\0';
	fakepam_nss_user("hugebob", 2001, 2001, gecos);
	free(gecos);
	pamh = start("bigbob");
	assert_int_equal(kh_pam_get_user(pamh, &user, &uid, &gid), PAM_SUCCESS);
	assert_string_equal(user, "bigbob");
	fakepam_end(pamh);
	pamh = start("hugebob");
	assert_int_equal(kh_pam_get_user(pamh, &user, &uid, &gid), PAM_USER_UNKNOWN);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, "user 'hugebob': no such user" }));
	fakepam_end(pamh);
}

static void
t_no_user(void **state)
{
	pam_handle_t *pamh;
	const char *user = NULL;
	uid_t uid;
	gid_t gid;

	pamh = start("mallory");
	assert_int_equal(kh_pam_get_user(pamh, &user, &uid, &gid), PAM_USER_UNKNOWN);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, "user 'mallory': no such user" }));
	fakepam_end(pamh);

	pamh = start("");
	assert_int_equal(kh_pam_get_user(pamh, &user, &uid, &gid), PAM_USER_UNKNOWN);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "cannot determine the user name" }));
	fakepam_end(pamh);

	/* No PAM_USER: libpam asks; a conversation that answers nothing. */
	pamh = fakepam_start(&(struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_ON, "login:", NULL }) });
	assert_int_equal(kh_pam_get_user(pamh, &user, &uid, &gid), PAM_CONV_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "cannot determine the user name" }));
	fakepam_end(pamh);
}

/* ---- the policy ---------------------------------------------------------- */

static void
t_policy_failures_logged(void **state)
{
	pam_handle_t *pamh = start(FAKE_USER);
	struct kh_pam_opts opts = { .config = "/nonexistent/kubehsm.conf" };
	char *line;

	assert_null(kh_pam_load_policy(pamh, &opts));
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "policy: /nonexistent/kubehsm.conf: cannot "
					 "open directory /nonexistent: No such file or "
					 "directory" }));
	opts.config = fake_policy_option("version = 1;\nbogus = 2;\n") + strlen("config=");
	line = fake_asprintf("policy: %s:2: ", opts.config);
	assert_null(kh_pam_load_policy(pamh, &opts));
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, line, true }));
	fakepam_end(pamh);
	free(line);
}

/* A policy that cannot be read fails authentication as a service error
 * and the session as a session error, before anything else. */
static void
t_policy_failure_at_entry_points(void **state)
{
	const char *argv[] = { "config=/nonexistent/kubehsm.conf" };
	pam_handle_t *pamh = start(FAKE_USER);

	assert_int_equal(pam_sm_authenticate(pamh, 0, 1, argv), PAM_SERVICE_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "policy: /nonexistent/kubehsm.conf", true }));
	assert_int_equal(fake_token.opens, 0);
	fakepam_end(pamh);
}

/* ---- the login state ----------------------------------------------------- */

/* Kept in the handle; a second one replaces the first (freed); pam_end
 * frees the last (the sanitizer build would see a leak). */
static void
t_login_state(void **state)
{
	pam_handle_t *pamh = start(FAKE_USER);
	struct kh_pam_login *a = fake_login("A"), *b = fake_login("B");

	assert_null(kh_pam_login_get(pamh));
	assert_int_equal(kh_pam_login_save(pamh, a), PAM_SUCCESS);
	assert_ptr_equal(kh_pam_login_get(pamh), a);
	assert_int_equal(kh_pam_login_save(pamh, b), PAM_SUCCESS);
	assert_ptr_equal(kh_pam_login_get(pamh), b);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	fakepam_end(pamh);
	kh_pam_login_free(NULL);
}

/* ---- a whole login, no secret anywhere ----------------------------------- */

static void
assert_file_lacks(const char *path, const char *secret)
{
	FILE *f = fopen(path, "r");
	char buf[65536];
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_true(n > 0);
	assert_null(strstr(buf, secret));
}

static void
t_whole_login_without_secrets(void **state)
{
	const char *argv[] = { fake_policy_option(NULL), "debug" };
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){
		.user = FAKE_USER, .service = "sshd",
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, "PIN for token 'alice': ",
					   FAKE_PIN }) });
	const char *handle;
	char *stash, *handoff;

	assert_int_equal(pam_sm_authenticate(pamh, 0, 2, argv), PAM_SUCCESS);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_DEBUG, "user 'alice': token 'alice' (serial 0001, slot 0) certificate 1: "
			     "the user's (maps to alice)" },
		{ LOG_DEBUG, "user 'alice': token 'alice' serial '0001' slot 0, certificate 1 "
			     "of 1, pin flags 0x0" },
		{ LOG_INFO, "user 'alice': authenticated with token 'alice' (serial 0001)" }));
	assert_non_null(kh_pam_login_get(pamh));
	assert_null(kh_pam_login_get(pamh)->pin);      /* session.cache_pin is false */
	assert_non_null(handle = pam_getenv(pamh, KH_HANDOFF_ENV));
	stash = fake_asprintf("%s/handoff/%s", fake_rundir(), handle);
	assert_file_lacks(stash, FAKE_PIN);
	handoff = fake_asprintf("authentication hand-off %.8s...: not a root-only file; not used",
				handle);

	assert_int_equal(pam_sm_setcred(pamh, PAM_ESTABLISH_CRED, 2, argv), PAM_SUCCESS);
	assert_int_equal(pam_sm_open_session(pamh, 0, 2, argv), PAM_SESSION_ERR);
	if (geteuid() == 0)
		fakepam_expect_log(FAKEPAM_LOG(
			{ LOG_DEBUG, "user 'alice': polkit.mode = off: polkit not asked" },
			{ LOG_NOTICE, "user 'alice': issuer (default): session credential: PIN "
				      "file /nonexistent/issuer.pin: No such file or directory "
				      "(config)" }));
	else
		fakepam_expect_log(FAKEPAM_LOG(
			{ LOG_NOTICE, handoff },
			{ LOG_DEBUG, "user 'alice': polkit.mode = off: polkit not asked" },
			{ LOG_NOTICE, "user 'alice': issuer (default): session credential: PIN "
				      "file /nonexistent/issuer.pin: No such file or directory "
				      "(config)" }));
	assert_null(pam_getenv(pamh, KH_HANDOFF_ENV));
	assert_int_equal(fake_cache.counts, 1);
	assert_int_equal(pam_sm_close_session(pamh, 0, 2, argv), PAM_SUCCESS);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_DEBUG, "user 'alice': kube session kept" }));
	fakepam_end(pamh);
	free(stash);
	free(handoff);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fakes_setup, fakes_teardown)
	const struct CMUnitTest tests[] = {
		T(t_log_fail),
		T(t_debug_only_under_option),
		T(t_canonical_name),
		T(t_large_passwd_entry),
		T(t_no_user),
		T(t_policy_failures_logged),
		T(t_policy_failure_at_entry_points),
		T(t_login_state),
		T(t_whole_login_without_secrets),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
