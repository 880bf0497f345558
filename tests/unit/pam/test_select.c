/*
 * test_select — the auth step finds the user's token by its certificate
 * (pam/kh_pam_auth.c over lib/kh_token): other users' tokens are looked
 * at but never selected for login nor offered a PIN, two tokens of the
 * user are refused with the user told why, and `kubehsm login --renew`
 * with a token holding another certificate is refused before the PIN.
 * The module's token list is fake (tests/unit/pam/fakes.c); selecting any
 * token but the user's for login fails the test there.
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
#include <openssl/pem.h>

#include "lib/kh_pkcs11.h"
#include "pam/kh_pam.h"
#include "tests/fakepam/fakepam.h"
#include "tests/unit/pam/fakes.h"

#define PROMPT "PIN for token 'alice': "

/* The base policy, less its token line: the token is found by certificate. */
static const char *
policy_any_label(void)
{
	static char *text;
	const char *line = strstr(fake_base_policy, "token = {");
	const char *end = line != NULL ? strchr(line, '\n') : NULL;

	assert_non_null(end);
	free(text);
	text = fake_asprintf("%.*s%s", (int)(line - fake_base_policy), fake_base_policy, end + 1);
	return fake_policy_option(text);
}

static int
setup(void **state)
{
	return fakes_setup(state);
}

static void
other(const char *label, const char *serial, const char *cn)
{
	size_t i = fake_others.n++;

	assert_true(i < FAKE_OTHERS_MAX);
	fake_others.t[i].label = label;
	fake_others.t[i].serial = serial;
	fake_others.t[i].cert = fake_cert_new(NULL, "CN", cn, NULL);
}

static int
auth(const struct fakepam_prompt *script, const char *const *env, const char *extra)
{
	const char *argv[] = { policy_any_label(), "no_cache", extra };
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){
		.user = FAKE_USER, .script = script, .env = env });
	int rc = pam_sm_authenticate(pamh, 0, extra != NULL ? 3 : 2, argv);

	fakepam_end(pamh);
	return rc;
}

/* bob's and carol's tokens are there too: alice's is the one used, hers
 * is the only PIN tried, and the others are never selected. */
static void
t_others_tokens_never_selected(void **state)
{
	other("bob", "0002", "bob");
	other("Carol C.", "0003", "carol");
	assert_int_equal(auth(FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, FAKE_PIN }), NULL, NULL),
			 PAM_SUCCESS);
	assert_true(fake_token.used);
	assert_int_equal(fake_token.ntried, 1);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_INFO, "user 'alice': authenticated with token 'alice' (serial 0001)" }));
}

/* No token of hers: no conversation at all, no PIN, the stack goes on. */
static void
t_no_token_of_hers(void **state)
{
	fake_token.label = NULL;
	other("bob", "0002", "bob");
	assert_int_equal(auth(NULL, NULL, NULL), PAM_AUTHINFO_UNAVAIL);
	assert_int_equal(fake_token.ntried, 0);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_NOTICE, "user 'alice': token: no token holds a valid certificate of 'alice' "
			      "(trust.map = cn; 1 token looked at) (not-found)" }));
}

/* Two tokens with her certificate: refused before the PIN, and she is told
 * which (only she can take one out). */
static void
t_two_tokens_of_hers(void **state)
{
	other("alice-spare", "0009", FAKE_USER);
	assert_int_equal(auth(FAKEPAM_SCRIPT({ PAM_ERROR_MSG,
		"kubehsm: 2 tokens hold a certificate of 'alice': 'alice' (serial 0001, slot 0), "
		"'alice-spare' (serial 0009, slot 1); remove all but one, or narrow token.uri" }),
		NULL, NULL), PAM_AUTHINFO_UNAVAIL);
	assert_false(fake_token.used);
	assert_int_equal(fake_token.ntried, 0);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, "user 'alice': token: 2 tokens hold", true }));
}

/* Her certificate, not valid: rejected before the PIN (PAM_AUTH_ERR, as a
 * bad certificate always was), never passed over for the password path. */
static void
t_her_certificate_rejected(void **state)
{
	fake_token.cert_rejected = true;
	assert_int_equal(auth(NULL, NULL, NULL), PAM_AUTH_ERR);
	assert_int_equal(fake_token.ntried, 0);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_NOTICE, "user 'alice': token certificate rejected: token 'alice' (serial 0001, "
			      "slot 0): certificate has expired (refused)" }));
}

/* A blocked card: refused without a conversation and without a try. */
static void
t_locked_no_conversation(void **state)
{
	fake_token.pin_flags = KH_P11_PIN_LOCKED;
	assert_int_equal(auth(FAKEPAM_SCRIPT({ PAM_ERROR_MSG, "kubehsm: token 'alice': PIN "
		"locked — ask an administrator to unblock it" }), NULL, NULL), PAM_MAXTRIES);
	assert_int_equal(fake_token.ntried, 0);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_NOTICE, "user 'alice': token 'alice': PIN locked; not tried" }));
}

/* ---- kubehsm login --renew: the certificate compared before the PIN ------ */

static char *
pem_of(X509 *x)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *s;
	long n;

	assert_non_null(b);
	assert_int_equal(PEM_write_bio_X509(b, x), 1);
	n = BIO_get_mem_data(b, &data);
	assert_non_null(s = strndup(data, (size_t)n));
	BIO_free(b);
	return s;
}

static void
t_renew_other_certificate_before_pin(void **state)
{
	const char *const env[] = { KH_RENEW_ENV "=1", NULL };
	X509 *old = fake_cert_new(NULL, "CN", FAKE_USER, NULL);
	char *old_pem = pem_of(old);

	fake_cache.entries[fake_cache.n++] = (struct fake_entry){
		.user = FAKE_USER, .token_cert_pem = old_pem, .state = KH_MISS_NONE };
	assert_int_equal(auth(FAKEPAM_SCRIPT({ PAM_ERROR_MSG,
		"kubehsm: token 'alice' holds another certificate than the one your kube session "
		"was started with, and a renewal keeps the identity: insert that token, or run "
		"'kubehsm logout', then 'kubehsm login'. The PIN was not asked." }), env, "forwarded"),
		PAM_PERM_DENIED);
	assert_int_equal(fake_token.ntried, 0);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_NOTICE, "user 'alice': renew refused before the PIN: token 'alice' holds "
			      "another certificate than the session's" }));
	X509_free(old);
	free(old_pem);
}

/* The session's own certificate: on to the PIN.  And without --renew (or
 * outside join) the session step decides, as before. */
static void
t_renew_same_certificate_asks_pin(void **state)
{
	const char *const env[] = { KH_RENEW_ENV "=1", NULL };
	char *pem = pem_of(fake_token.cert);

	fake_cache.entries[fake_cache.n++] = (struct fake_entry){
		.user = FAKE_USER, .token_cert_pem = pem, .state = KH_MISS_NONE };
	assert_int_equal(auth(FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, FAKE_PIN }), env,
			      "join"), PAM_SUCCESS);
	assert_int_equal(fake_token.ntried, 1);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_INFO, "user 'alice': authenticated", true }));
	free(pem);
}

/* Only the kubehsm service (auth `forwarded`, session `join`) renews:
 * elsewhere KUBEHSM_RENEW means nothing to auth. */
static void
t_renew_check_only_in_kubehsm_service(void **state)
{
	const char *const env[] = { KH_RENEW_ENV "=1", NULL };

	fake_cache.entries[fake_cache.n++] = (struct fake_entry){
		.user = FAKE_USER, .token_cert_pem = "another", .state = KH_MISS_NONE };
	assert_int_equal(auth(FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, FAKE_PIN }), env,
			      NULL), PAM_SUCCESS);
	assert_int_equal(fake_cache.lists, 0);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_INFO, "user 'alice': authenticated", true }));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, fakes_teardown)
		T(t_others_tokens_never_selected),
		T(t_no_token_of_hers),
		T(t_two_tokens_of_hers),
		T(t_her_certificate_rejected),
		T(t_locked_no_conversation),
		T(t_renew_other_certificate_before_pin),
		T(t_renew_same_certificate_asks_pin),
		T(t_renew_check_only_in_kubehsm_service),
#undef T
	};

	return cmocka_run_group_tests_name("token selection in auth", tests, NULL, NULL);
}
