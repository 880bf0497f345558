/*
 * test_prompt — how the auth step gets the PIN and what it costs the token
 * (pam/kh_pam_prompt.c, the PIN part of pam/kh_pam_auth.c): the prompt and
 * what a conversation may answer, use_first_pass and try_first_pass with
 * PAM_AUTHTOK, the PIN state read before any try.  The token is fake and
 * records every PIN C_Login is given; every PIN used is a registered
 * secret, so none may reach a log line or a message.
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

#include "lib/kh_mem.h"
#include "lib/kh_pkcs11.h"
#include "pam/kh_pam.h"
#include "tests/fakepam/fakepam.h"
#include "tests/unit/pam/fakes.h"

#define WRONG_PIN "0000-wrong"
#define PROMPT "PIN for token 'alice': "
#define AUTHENTICATED "user 'alice': authenticated with token 'alice' (serial 0001)"
#define WRONG_PIN_LOGGED "user 'alice': token login: wrong PIN for token 'alice' (auth)"

static int
setup(void **state)
{
	fakes_setup(state);
	fakepam_secret(WRONG_PIN);
	return 0;
}

/* The PINs C_Login was given, in order (NULL-terminated list). */
static void
assert_tried(const char *const *want)
{
	size_t n = 0;

	while (want[n] != NULL)
		n++;
	assert_int_equal(fake_token.ntried, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(fake_token.tried[i], want[i]);
}
#define TRIED(...) ((const char *const[]){ __VA_ARGS__ NULL })

/* ---- kh_pam_prompt_pin --------------------------------------------------- */

static int
prompt(const struct fakepam_config *cfg, char **pin)
{
	pam_handle_t *pamh = fakepam_start(cfg);
	int rc;

	*pin = (char *)"not set";
	rc = kh_pam_prompt_pin(pamh, "alice", pin);
	fakepam_end(pamh);
	return rc;
}

static void
t_prompt_answer(void **state)
{
	char *pin;

	assert_int_equal(prompt(&(struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, FAKE_PIN }) }, &pin),
		PAM_SUCCESS);
	assert_string_equal(pin, FAKE_PIN);
	kh_secure_strfree(pin);
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* What is typed is handed on as typed: an empty PIN, or 64 KiB of one. */
static void
t_prompt_empty_and_long(void **state)
{
	size_t len = 64 * 1024;
	char *pin, *longpin = malloc(len + 1);

	assert_non_null(longpin);
	memset(longpin, '7', len);
	longpin[len] = '\0';
	assert_int_equal(prompt(&(struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, "" }) }, &pin),
		PAM_SUCCESS);
	assert_string_equal(pin, "");
	kh_secure_strfree(pin);
	assert_int_equal(prompt(&(struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, longpin }) }, &pin),
		PAM_SUCCESS);
	assert_int_equal(strlen(pin), len);
	kh_secure_strfree(pin);
	free(longpin);
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* A conversation that answers nothing is a conversation error; the module
 * itself logs nothing about it. */
static void
t_prompt_no_answer(void **state)
{
	char *pin;

	assert_int_equal(prompt(&(struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, NULL }) }, &pin),
		PAM_CONV_ERR);
	assert_null(pin);
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* Any failure is PAM_CONV_ERR, except "ask again later", which is
 * PAM_INCOMPLETE. */
static void
t_prompt_conversation_fails(void **state)
{
	static const struct {
		int conv_rc, want;
	} cases[] = {
		{ PAM_CONV_ERR, PAM_CONV_ERR },
		{ PAM_BUF_ERR, PAM_CONV_ERR },
		{ PAM_ABORT, PAM_CONV_ERR },
		{ PAM_CONV_AGAIN, PAM_INCOMPLETE },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fakepam_prompt script[] = {
			{ PAM_PROMPT_ECHO_OFF, PROMPT, FAKE_PIN, cases[i].conv_rc }, { 0 },
		};
		char *pin;

		assert_int_equal(prompt(&(struct fakepam_config){ .script = script }, &pin),
				 cases[i].want);
		assert_null(pin);
		fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "conversation failed" }));
	}
}

static void
t_prompt_no_conversation(void **state)
{
	char *pin;

	assert_int_equal(prompt(&(struct fakepam_config){ .no_conv = true }, &pin),
			 PAM_CONV_ERR);
	assert_null(pin);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "no conversation function" }));
}

/* ---- the auth step ------------------------------------------------------- */

/* pam_sm_authenticate for alice with the base policy, no_cache and the
 * given options; the handle is set up by cfg and ended (every scripted
 * message must have been sent). */
static int
authenticate(struct fakepam_config cfg, const char *const *options)
{
	const char *argv[8] = { fake_policy_option(NULL), "no_cache" };
	int argc = 2, rc;
	pam_handle_t *pamh;

	while (options != NULL && *options != NULL)
		argv[argc++] = *options++;
	cfg.user = FAKE_USER;
	pamh = fakepam_start(&cfg);
	rc = pam_sm_authenticate(pamh, 0, argc, argv);
	fakepam_end(pamh);
	assert_int_equal(fake_token.closes, fake_token.opens);
	return rc;
}
#define OPTIONS(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void
t_asks_once(void **state)
{
	assert_int_equal(authenticate((struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, FAKE_PIN }) }, NULL),
		PAM_SUCCESS);
	assert_tried(TRIED(FAKE_PIN,));
	fakepam_expect_log(FAKEPAM_LOG({ LOG_INFO, AUTHENTICATED }));
}

/* A wrong PIN: one try, the user told, one line without the PIN. */
static void
t_wrong_pin(void **state)
{
	assert_int_equal(authenticate((struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, WRONG_PIN },
					 { PAM_ERROR_MSG, "kubehsm: token 'alice': wrong PIN" }) },
		NULL), PAM_AUTH_ERR);
	assert_tried(TRIED(WRONG_PIN,));
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, WRONG_PIN_LOGGED }));
}

/* No answer, or a failed conversation: the token is never tried.  (The
 * module logs nothing of its own then; libpam logs a failure.) */
static void
t_no_answer_no_try(void **state)
{
	assert_int_equal(authenticate((struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, NULL }) }, NULL),
		PAM_CONV_ERR);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	assert_int_equal(authenticate((struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, NULL, PAM_CONV_ERR }) },
		NULL), PAM_CONV_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "conversation failed" }));
	assert_int_equal(authenticate((struct fakepam_config){ .no_conv = true }, NULL),
			 PAM_CONV_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "no conversation function" }));
	assert_tried(TRIED());
}

/* Today an empty PIN and an overlong one go to the token as typed, and a
 * token that refuses them counts a wrong try. */
static void
t_empty_and_long_pins_are_tried(void **state)
{
	size_t len = 4096;
	char *longpin = malloc(len + 1);
	struct fakepam_prompt script[] = {
		{ PAM_PROMPT_ECHO_OFF, PROMPT, NULL },
		{ PAM_ERROR_MSG, "kubehsm: token 'alice': wrong PIN" },
		{ 0 },
	};

	assert_non_null(longpin);
	memset(longpin, '9', len);
	longpin[len] = '\0';
	fakepam_secret(longpin);
	script[0].reply = "";
	assert_int_equal(authenticate((struct fakepam_config){ .script = script }, NULL),
			 PAM_AUTH_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, WRONG_PIN_LOGGED }));
	script[0].reply = longpin;
	assert_int_equal(authenticate((struct fakepam_config){ .script = script }, NULL),
			 PAM_AUTH_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, WRONG_PIN_LOGGED }));
	assert_tried(TRIED("", longpin,));
	free(longpin);
}

/* ---- use_first_pass / try_first_pass ------------------------------------- */

/* use_first_pass: the earlier module's password, never a prompt. */
static void
t_use_first_pass(void **state)
{
	assert_int_equal(authenticate((struct fakepam_config){ .authtok = FAKE_PIN },
				      OPTIONS("use_first_pass", "authtok_is_pin")), PAM_SUCCESS);
	assert_tried(TRIED(FAKE_PIN,));
	fakepam_expect_log(FAKEPAM_LOG({ LOG_INFO, AUTHENTICATED }));
}

static void
t_use_first_pass_without_authtok(void **state)
{
	assert_int_equal(authenticate((struct fakepam_config){ 0 },
				      OPTIONS("use_first_pass", "authtok_is_pin")), PAM_AUTH_ERR);
	assert_tried(TRIED());
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, "user 'alice': use_first_pass but no "
					 "earlier module set a password" }));
}

/* A wrong stored password: one try, no prompt, and the user is not told of
 * a "wrong PIN" they never typed. */
static void
t_use_first_pass_wrong(void **state)
{
	assert_int_equal(authenticate((struct fakepam_config){ .authtok = WRONG_PIN },
				      OPTIONS("use_first_pass", "authtok_is_pin")), PAM_AUTH_ERR);
	assert_tried(TRIED(WRONG_PIN,));
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, "user 'alice': token login with the "
					 "earlier module's password: wrong PIN for token "
					 "'alice' (auth)" }));
}

static void
t_try_first_pass_right(void **state)
{
	assert_int_equal(authenticate((struct fakepam_config){ .authtok = FAKE_PIN },
				      OPTIONS("try_first_pass", "authtok_is_pin")), PAM_SUCCESS);
	assert_tried(TRIED(FAKE_PIN,));
	fakepam_expect_log(FAKEPAM_LOG({ LOG_INFO, AUTHENTICATED }));
}

static void
t_try_first_pass_without_authtok(void **state)
{
	assert_int_equal(authenticate((struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, FAKE_PIN }) },
		OPTIONS("try_first_pass", "authtok_is_pin")), PAM_SUCCESS);
	assert_tried(TRIED(FAKE_PIN,));
	fakepam_expect_log(FAKEPAM_LOG({ LOG_INFO, AUTHENTICATED }));
}

/* A second chance is only for a stored password: a typed PIN that is
 * wrong is one try, as without try_first_pass. */
static void
t_try_first_pass_typed_wrong_once(void **state)
{
	assert_int_equal(authenticate((struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, WRONG_PIN },
					 { PAM_ERROR_MSG, "kubehsm: token 'alice': wrong PIN" }) },
		OPTIONS("try_first_pass", "authtok_is_pin")), PAM_AUTH_ERR);
	assert_tried(TRIED(WRONG_PIN,));
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, WRONG_PIN_LOGGED }));
}

/* The stored password was not the PIN: the PIN state is read again (the
 * failed try may have made the next one the last), the user warned, then
 * asked. */
static void
t_try_first_pass_wrong_then_prompt(void **state)
{
	fake_token.flags_after_wrong = KH_P11_PIN_COUNT_LOW;
	assert_int_equal(authenticate((struct fakepam_config){
		.authtok = WRONG_PIN,
		.script = FAKEPAM_SCRIPT(
			{ PAM_TEXT_INFO, "kubehsm: token 'alice': PIN count low — a wrong PIN "
					 "was entered recently" },
			{ PAM_PROMPT_ECHO_OFF, PROMPT, FAKE_PIN }) },
		OPTIONS("try_first_pass", "authtok_is_pin")), PAM_SUCCESS);
	assert_tried(TRIED(WRONG_PIN, FAKE_PIN,));
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_NOTICE, "user 'alice': token login with the earlier module's password: "
			      "wrong PIN for token 'alice' (auth)" },
		{ LOG_INFO, AUTHENTICATED }));
}

/* Two wrong PINs are the most try_first_pass ever spends. */
static void
t_try_first_pass_final_try(void **state)
{
	fake_token.flags_after_wrong = KH_P11_PIN_FINAL_TRY;
	assert_int_equal(authenticate((struct fakepam_config){
		.authtok = WRONG_PIN,
		.script = FAKEPAM_SCRIPT(
			{ PAM_TEXT_INFO, "kubehsm: token 'alice': final PIN try — a wrong PIN "
					 "locks the token" },
			{ PAM_PROMPT_ECHO_OFF, PROMPT, WRONG_PIN },
			{ PAM_ERROR_MSG, "kubehsm: token 'alice': wrong PIN" }) },
		OPTIONS("try_first_pass", "authtok_is_pin")), PAM_AUTH_ERR);
	assert_tried(TRIED(WRONG_PIN, WRONG_PIN,));
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_NOTICE, "user 'alice': token login with the earlier module's password: "
			      "wrong PIN for token 'alice' (auth)" },
		{ LOG_NOTICE, WRONG_PIN_LOGGED }));
}

/* The stored password locked the token: no prompt for a PIN that cannot
 * be tried. */
static void
t_try_first_pass_locked_after(void **state)
{
	fake_token.flags_after_wrong = KH_P11_PIN_LOCKED;
	assert_int_equal(authenticate((struct fakepam_config){
		.authtok = WRONG_PIN,
		.script = FAKEPAM_SCRIPT({ PAM_ERROR_MSG, "kubehsm: token 'alice': PIN locked — "
						      "ask an administrator to unblock it" }) },
		OPTIONS("try_first_pass", "authtok_is_pin")), PAM_MAXTRIES);
	assert_tried(TRIED(WRONG_PIN,));
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_NOTICE, "user 'alice': token login with the earlier module's password: "
			      "wrong PIN for token 'alice' (auth)" },
		{ LOG_NOTICE, "user 'alice': token 'alice': PIN locked; not tried" }));
}

/* Without authtok_is_pin another module's password is never tried, with
 * try_first_pass as without it. */
static void
t_authtok_never_tried_without_authtok_is_pin(void **state)
{
	assert_int_equal(authenticate((struct fakepam_config){
		.authtok = WRONG_PIN,
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, FAKE_PIN }) },
		OPTIONS("try_first_pass")), PAM_SUCCESS);
	assert_int_equal(authenticate((struct fakepam_config){
		.authtok = WRONG_PIN,
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, PROMPT, FAKE_PIN }) },
		NULL), PAM_SUCCESS);
	assert_tried(TRIED(FAKE_PIN, FAKE_PIN,));
	fakepam_expect_log(FAKEPAM_LOG({ LOG_INFO, AUTHENTICATED }, { LOG_INFO, AUTHENTICATED }));
}

/* ---- the PIN state, before any PIN is asked ------------------------------ */

static void
t_locked_not_asked(void **state)
{
	fake_token.pin_flags = KH_P11_PIN_LOCKED;
	assert_int_equal(authenticate((struct fakepam_config){
		.authtok = FAKE_PIN,
		.script = FAKEPAM_SCRIPT({ PAM_ERROR_MSG, "kubehsm: token 'alice': PIN locked — "
						      "ask an administrator to unblock it" }) },
		OPTIONS("use_first_pass", "authtok_is_pin")), PAM_MAXTRIES);
	assert_tried(TRIED());
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, "user 'alice': token 'alice': PIN "
					 "locked; not tried" }));
}

static void
t_final_try_warned_then_asked(void **state)
{
	fake_token.pin_flags = KH_P11_PIN_FINAL_TRY;
	assert_int_equal(authenticate((struct fakepam_config){
		.script = FAKEPAM_SCRIPT(
			{ PAM_TEXT_INFO, "kubehsm: token 'alice': final PIN try — a wrong PIN "
					 "locks the token" },
			{ PAM_PROMPT_ECHO_OFF, PROMPT, FAKE_PIN }) }, NULL), PAM_SUCCESS);
	assert_tried(TRIED(FAKE_PIN,));
	fakepam_expect_log(FAKEPAM_LOG({ LOG_INFO, AUTHENTICATED }));
}

/* A warning that cannot reach the user means no try at all, even with the
 * PIN at hand in PAM_AUTHTOK. */
static void
t_unwarnable_not_tried(void **state)
{
	fake_token.pin_flags = KH_P11_PIN_FINAL_TRY;
	assert_int_equal(authenticate((struct fakepam_config){
		.authtok = FAKE_PIN,
		.script = FAKEPAM_SCRIPT({ PAM_TEXT_INFO, "kubehsm: token 'alice': final PIN "
						      "try — a wrong PIN locks the token", NULL,
					   PAM_CONV_ERR }) },
		OPTIONS("use_first_pass", "authtok_is_pin")), PAM_AUTH_ERR);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_ERR, "conversation failed" },
		{ LOG_NOTICE, "user 'alice': token 'alice': final PIN try, and the user cannot "
			      "be warned (no conversation); not tried" }));
	fake_token.pin_flags = KH_P11_PIN_COUNT_LOW;
	assert_int_equal(authenticate((struct fakepam_config){ .authtok = FAKE_PIN,
							      .no_conv = true },
				      OPTIONS("use_first_pass", "authtok_is_pin")), PAM_AUTH_ERR);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_ERR, "no conversation function" },
		{ LOG_NOTICE, "user 'alice': token 'alice': PIN count low, and the user cannot "
			      "be warned (no conversation); not tried" }));
	assert_tried(TRIED());
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, fakes_teardown)
	const struct CMUnitTest tests[] = {
		T(t_prompt_answer),
		T(t_prompt_empty_and_long),
		T(t_prompt_no_answer),
		T(t_prompt_conversation_fails),
		T(t_prompt_no_conversation),
		T(t_asks_once),
		T(t_wrong_pin),
		T(t_no_answer_no_try),
		T(t_empty_and_long_pins_are_tried),
		T(t_use_first_pass),
		T(t_use_first_pass_without_authtok),
		T(t_use_first_pass_wrong),
		T(t_try_first_pass_right),
		T(t_try_first_pass_without_authtok),
		T(t_try_first_pass_typed_wrong_once),
		T(t_try_first_pass_wrong_then_prompt),
		T(t_try_first_pass_final_try),
		T(t_try_first_pass_locked_after),
		T(t_authtok_never_tried_without_authtok_is_pin),
		T(t_locked_not_asked),
		T(t_final_try_warned_then_asked),
		T(t_unwarnable_not_tried),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
