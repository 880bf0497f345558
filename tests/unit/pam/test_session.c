/*
 * test_session — the session step (pam/kh_pam_session.c) up to minting:
 * whose login it is (sudo changes PAM_USER), the join check of `kubehsm
 * login` (join_check: a live session is never replaced by another login or
 * identity, a renewal keeps the token certificate), login accounting for a
 * login that mints nothing, and close_session undoing what its own
 * open_session recorded.
 *
 * The cache is fake (fakes.c): kh_cache_list answers the rows a test sets,
 * and accounting is counted.  A session that passes every check goes on to
 * mint, and stops at the issuer's PIN file, which the base policy names
 * under /nonexistent: nothing is ever minted here.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <cmocka.h>

#include "pam/kh_pam.h"
#include "tests/fakepam/fakepam.h"
#include "tests/unit/pam/fakes.h"

#define CERT_A "-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n"
#define CERT_B "-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----\n"
#define MINT_FAILED "user 'alice': issuer (default): session credential: PIN file " \
	"/nonexistent/issuer.pin: No such file or directory (config)"
#define POLKIT_OFF "user 'alice': polkit.mode = off: polkit not asked"
#define NO_AUTH "user 'alice': no kubehsm authentication in this login; no kube " \
	"credentials cached"
#define LOGIN_NONE "user 'alice': login: 0 live session(s), 0 of this token certificate"
#define ALREADY "kubehsm: you have a kube session already; 'kubehsm login --renew' " \
	"extends it, 'kubehsm logout' ends it"

static int
setup(void **state)
{
	fakes_setup(state);
	fakepam_nss_user("bob", 1002, 1002, NULL);
	return 0;
}

/* A handle for PAM user `pam_user` holding what alice's authentication
 * left in it (uid `uid`, token certificate `pem`). */
static pam_handle_t *
authenticated(const char *pam_user, uid_t uid, const char *pem, const char *const *env,
	      const struct fakepam_prompt *script)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){
		.user = pam_user, .env = env, .script = script });
	struct kh_pam_login *l = fake_login(pem);

	l->uid = uid;
	assert_int_equal(kh_pam_login_save(pamh, l), PAM_SUCCESS);
	return pamh;
}

/* pam_sm_open_session with the base policy, debug, and `extra` if not
 * NULL. */
static int
open_session(pam_handle_t *pamh, const char *extra)
{
	const char *argv[] = { fake_policy_option(NULL), "debug", extra };

	return pam_sm_open_session(pamh, 0, extra != NULL ? 3 : 2, argv);
}

static void
live(const char *user, const char *pem, enum kh_cache_miss state)
{
	assert_true(fake_cache.n < FAKE_ENTRIES_MAX);
	fake_cache.entries[fake_cache.n++] = (struct fake_entry){
		.user = user, .token_cert_pem = pem, .state = state };
}

/* The join check let alice's login through (`counts` is its debug line):
 * it went on to mint, and stopped at the issuer's PIN file. */
static void
expect_joined(pam_handle_t *pamh, const char *counts)
{
	assert_int_equal(open_session(pamh, "join"), PAM_SESSION_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_DEBUG, counts }, { LOG_DEBUG, POLKIT_OFF },
				       { LOG_NOTICE, MINT_FAILED }));
	fakepam_end(pamh);
}

/* ---- join: a login through `kubehsm login` ------------------------------- */

/* No session of the uid: the join goes on to mint (and counts nothing: it
 * joins the uid's logins instead of being one). */
static void
t_join_without_session(void **state)
{
	pam_handle_t *pamh = authenticated(FAKE_USER, FAKE_UID, CERT_A, NULL, NULL);

	expect_joined(pamh, LOGIN_NONE);
	assert_int_equal(fake_cache.lists, 1);
	assert_int_equal(fake_cache.counts, 0);
}

/* A live session is never replaced by a plain login, whatever its
 * certificate: the user is told what to do instead. */
static void
t_join_refuses_live_session(void **state)
{
	pam_handle_t *pamh = authenticated(FAKE_USER, FAKE_UID, CERT_A, NULL,
					   FAKEPAM_SCRIPT({ PAM_ERROR_MSG, ALREADY }));

	live(FAKE_USER, CERT_B, KH_MISS_NONE);
	assert_int_equal(open_session(pamh, "join"), PAM_PERM_DENIED);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_DEBUG, "user 'alice': login: 1 live session(s), 0 of this token certificate" },
		{ LOG_NOTICE, "user 'alice': login refused: a session is live (renew or log "
			      "out first)" }));
	assert_int_equal(fake_cache.counts, 0);
	fakepam_end(pamh);
}

/* Only valid records of this user name count as live: expired, revoked or
 * refused ones, undecodable ones and another name's (a former holder of the
 * uid) do not. */
static void
t_join_counts_only_live_records_of_the_user(void **state)
{
	pam_handle_t *pamh = authenticated(FAKE_USER, FAKE_UID, CERT_A, NULL, NULL);

	live(FAKE_USER, CERT_A, KH_MISS_EXPIRED);
	live(FAKE_USER, CERT_A, KH_MISS_REVOKED);
	live(FAKE_USER, CERT_A, KH_MISS_REFUSED);
	live("bob", CERT_A, KH_MISS_NONE);
	live(FAKE_USER, CERT_A, KH_MISS_NONE);
	fake_cache.entries[fake_cache.n - 1].no_record = true;
	expect_joined(pamh, LOGIN_NONE);
}

static void
t_renew_without_session(void **state)
{
	const char *const env[] = { KH_RENEW_ENV "=1", NULL };
	pam_handle_t *pamh = authenticated(FAKE_USER, FAKE_UID, CERT_A, env,
		FAKEPAM_SCRIPT({ PAM_ERROR_MSG, "kubehsm: there is no kube session to renew; "
						"run 'kubehsm login'" }));

	live(FAKE_USER, CERT_A, KH_MISS_EXPIRED);
	assert_int_equal(open_session(pamh, "join"), PAM_SESSION_ERR);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_DEBUG, "user 'alice': renew: 0 live session(s), 0 of this token certificate" },
		{ LOG_NOTICE, "user 'alice': renew refused: no live session" }));
	fakepam_end(pamh);
}

static void
t_renew_same_certificate(void **state)
{
	const char *const env[] = { KH_RENEW_ENV "=1", NULL };
	pam_handle_t *pamh = authenticated(FAKE_USER, FAKE_UID, CERT_A, env, NULL);

	live(FAKE_USER, CERT_A, KH_MISS_NONE);
	live(FAKE_USER, CERT_B, KH_MISS_EXPIRED);
	expect_joined(pamh, "user 'alice': renew: 1 live session(s), 1 of this token "
		      "certificate");
}

/* A renewal keeps the identity: any live record of another token
 * certificate refuses it. */
static void
t_renew_other_certificate(void **state)
{
	static const char *const msg = "kubehsm: your kube session was started with another "
		"token certificate, and a renewal keeps the identity: run 'kubehsm logout', "
		"then 'kubehsm login'";
	const char *const env[] = { KH_RENEW_ENV "=1", NULL };
	const char *const certs[][2] = { { CERT_B, NULL }, { CERT_A, CERT_B } };

	for (size_t i = 0; i < 2; i++) {
		pam_handle_t *pamh = authenticated(FAKE_USER, FAKE_UID, CERT_A, env,
						   FAKEPAM_SCRIPT({ PAM_ERROR_MSG, msg }));
		char debug[128];

		fake_cache.n = 0;
		for (size_t j = 0; j < 2 && certs[i][j] != NULL; j++)
			live(FAKE_USER, certs[i][j], KH_MISS_NONE);
		assert_int_equal(open_session(pamh, "join"), PAM_PERM_DENIED);
		(void)snprintf(debug, sizeof(debug), "user 'alice': renew: %zu live session(s), "
			       "%zu of this token certificate", i + 1, i);
		fakepam_expect_log(FAKEPAM_LOG(
			{ LOG_DEBUG, debug },
			{ LOG_NOTICE, "user 'alice': renew refused: the session's token "
				      "certificate differs" }));
		fakepam_end(pamh);
	}
}

/* Only KUBEHSM_RENEW=1 renews; any other value is a plain login. */
static void
t_renew_only_with_1(void **state)
{
	static const char *const values[] = {
		KH_RENEW_ENV "=0", KH_RENEW_ENV "=", KH_RENEW_ENV "=yes", KH_RENEW_ENV "=1 ",
		KH_RENEW_ENV "=11", "kubehsm_renew=1",
	};

	live(FAKE_USER, CERT_A, KH_MISS_NONE);
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		const char *const env[] = { values[i], NULL };
		pam_handle_t *pamh = authenticated(FAKE_USER, FAKE_UID, CERT_A, env,
						   FAKEPAM_SCRIPT({ PAM_ERROR_MSG, ALREADY }));

		assert_int_equal(open_session(pamh, "join"), PAM_PERM_DENIED);
		fakepam_expect_log(FAKEPAM_LOG(
			{ LOG_DEBUG, "user 'alice': login: 1 live session(s), 1 of this token "
				     "certificate" },
			{ LOG_NOTICE, "user 'alice': login refused: a session is live (renew or "
				      "log out first)" }));
		fakepam_end(pamh);
	}
}

/* The uid's sessions cannot be read: no session, and the reason logged. */
static void
t_join_cannot_list(void **state)
{
	pam_handle_t *pamh = authenticated(FAKE_USER, FAKE_UID, CERT_A, NULL, NULL);

	fake_cache.list_fails = true;
	assert_int_equal(open_session(pamh, "join"), PAM_SESSION_ERR);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_NOTICE, "user 'alice': the uid's sessions: the kernel refuses keyring "
			      "calls (unsupported)" }));
	fakepam_end(pamh);
}

/* A login of its own (no join) does not look at the uid's sessions: it
 * adds to them, and counts once. */
static void
t_plain_login_no_join_check(void **state)
{
	pam_handle_t *pamh = authenticated(FAKE_USER, FAKE_UID, CERT_A, NULL, NULL);

	live(FAKE_USER, CERT_B, KH_MISS_NONE);
	assert_int_equal(open_session(pamh, NULL), PAM_SESSION_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_DEBUG, POLKIT_OFF },
				       { LOG_NOTICE, MINT_FAILED }));
	assert_int_equal(fake_cache.lists, 0);
	assert_int_equal(fake_cache.counts, 1);
	assert_int_equal(fake_cache.counted_uid, FAKE_UID);
	assert_string_equal(fake_cache.counted_user, FAKE_USER);
	fakepam_end(pamh);
}

/* ---- whose session ------------------------------------------------------- */

/* sudo authenticates alice, then opens the session for bob: nothing is
 * minted for either; bob's login counts (without join). */
static void
t_pam_user_changed(void **state)
{
	static const char *const why = "user 'alice' authenticated, but the session is for "
		"'bob' (PAM_USER changed, as sudo does); no kube credentials cached";
	pam_handle_t *pamh = authenticated("bob", FAKE_UID, CERT_A, NULL, NULL);

	assert_int_equal(open_session(pamh, NULL), PAM_IGNORE);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, why }));
	assert_int_equal(fake_cache.counts, 1);
	assert_int_equal(fake_cache.counted_uid, 1002);
	assert_string_equal(fake_cache.counted_user, "bob");
	fakepam_end(pamh);

	pamh = authenticated("bob", FAKE_UID, CERT_A, NULL, NULL);
	assert_int_equal(open_session(pamh, "join"), PAM_IGNORE);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, why }));
	assert_int_equal(fake_cache.counts, 1);
	assert_int_equal(fake_cache.lists, 0);
	fakepam_end(pamh);
}

/* Same name, another uid (the account was replaced between auth and
 * session): not the user who authenticated either. */
static void
t_uid_changed(void **state)
{
	pam_handle_t *pamh = authenticated(FAKE_USER, 999, CERT_A, NULL, NULL);

	assert_int_equal(open_session(pamh, "join"), PAM_IGNORE);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, "user 'alice' authenticated, but the "
					 "session is for 'alice' (PAM_USER changed, as sudo "
					 "does); no kube credentials cached" }));
	assert_int_equal(fake_cache.lists, 0);
	fakepam_end(pamh);
}

/* The typed name is folded to the account's own (sssd, winbind): still the
 * user who authenticated. */
static void
t_canonical_name_is_the_same_user(void **state)
{
	pam_handle_t *pamh = authenticated("ALICE", FAKE_UID, CERT_A, NULL, NULL);

	fakepam_nss_alias("ALICE", FAKE_USER);
	expect_joined(pamh, LOGIN_NONE);
}

/* A login kubehsm did not authenticate still counts as one of the uid's
 * logins (one notice); `kubehsm login` (join) without authentication
 * counts nothing. */
static void
t_no_authentication(void **state)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });

	assert_int_equal(open_session(pamh, NULL), PAM_IGNORE);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, NO_AUTH }));
	assert_int_equal(fake_cache.counts, 1);
	assert_string_equal(fake_cache.counted_user, FAKE_USER);
	fakepam_end(pamh);

	pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });
	assert_int_equal(open_session(pamh, "join"), PAM_IGNORE);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, NO_AUTH }));
	assert_int_equal(fake_cache.counts, 1);
	fakepam_end(pamh);
}

/* An unknown user: the notice names what PAM_USER says, and nothing is
 * counted. */
static void
t_unknown_user(void **state)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = "mallory" });

	assert_int_equal(open_session(pamh, NULL), PAM_IGNORE);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_NOTICE, "user 'mallory': no kubehsm authentication in this login; no "
			      "kube credentials cached" },
		{ LOG_NOTICE, "user 'mallory': no such user" }));
	assert_int_equal(fake_cache.counts, 0);
	fakepam_end(pamh);
}

/* ---- close_session ------------------------------------------------------- */

/* close_session logs out what open_session counted — for the user it was
 * opened for, whatever PAM_USER says by then — once. */
static void
t_close_undoes_own_open(void **state)
{
	static const struct {
		int result;
		const char *line;
		int priority;
		int rc;
	} cases[] = {
		{ 0, "user 'alice': kube session kept", LOG_DEBUG, PAM_SUCCESS },
		{ 1, "user 'alice': kube session ended", LOG_DEBUG, PAM_SUCCESS },
		{ -1, "user 'alice': logout: the index is damaged (internal)", LOG_NOTICE,
		  PAM_SESSION_ERR },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });
		const char *argv[] = { fake_policy_option(NULL), "debug" };

		assert_int_equal(pam_sm_open_session(pamh, 0, 2, argv), PAM_IGNORE);
		fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, NO_AUTH }));
		assert_int_equal(pam_set_item(pamh, PAM_USER, "bob"), PAM_SUCCESS);
		fake_cache.logout_result = cases[i].result;
		fake_cache.logouts = 0;
		assert_int_equal(pam_sm_close_session(pamh, 0, 2, argv), cases[i].rc);
		fakepam_expect_log(FAKEPAM_LOG({ cases[i].priority, cases[i].line }));
		assert_int_equal(fake_cache.logouts, 1);
		assert_int_equal(fake_cache.logout_uid, FAKE_UID);
		assert_string_equal(fake_cache.logout_user, FAKE_USER);
		/* Done once. */
		assert_int_equal(pam_sm_close_session(pamh, 0, 2, argv), PAM_IGNORE);
		fakepam_expect_log(FAKEPAM_LOG({ LOG_DEBUG, "close_session: this handle opened "
						 "nothing" }));
		assert_int_equal(fake_cache.logouts, 1);
		fakepam_end(pamh);
	}
}

/* A handle that opened nothing closes nothing. */
static void
t_close_without_open(void **state)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });
	const char *argv[] = { "debug" };

	assert_int_equal(pam_sm_close_session(pamh, 0, 1, argv), PAM_IGNORE);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_DEBUG, "close_session: this handle opened nothing" }));
	assert_int_equal(pam_sm_close_session(pamh, 0, 0, NULL), PAM_IGNORE);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	assert_int_equal(fake_cache.logouts, 0);
	fakepam_end(pamh);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, fakes_teardown)
	const struct CMUnitTest tests[] = {
		T(t_join_without_session),
		T(t_join_refuses_live_session),
		T(t_join_counts_only_live_records_of_the_user),
		T(t_renew_without_session),
		T(t_renew_same_certificate),
		T(t_renew_other_certificate),
		T(t_renew_only_with_1),
		T(t_join_cannot_list),
		T(t_plain_login_no_join_check),
		T(t_pam_user_changed),
		T(t_uid_changed),
		T(t_canonical_name_is_the_same_user),
		T(t_no_authentication),
		T(t_unknown_user),
		T(t_close_undoes_own_open),
		T(t_close_without_open),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
