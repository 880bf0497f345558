/*
 * test_p11_ui — lib/kh_p11_ui: what answers a context-specific login
 * (CKA_ALWAYS_AUTHENTICATE).  It answers with the PIN the handle already
 * logged in with, fails without one, and never reads a terminal or stdin —
 * OpenSSL's default method would, which is the bug it replaces.  The UI
 * calls are the ones libp11 0.4.12 makes (pkcs11_authenticate).
 */
#include "config.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/ui.h>

#include "lib/kh_p11_ui.h"

#define MAX_PIN_LENGTH 32       /* libp11 0.4.12's */

/* What libp11's pkcs11_authenticate does, with our method and user data;
 * 0 and the PIN in pin_out, or -1. */
static int
libp11_asks(UI_METHOD *m, char **user_pin, char pin_out[MAX_PIN_LENGTH + 1])
{
	UI *ui = UI_new_method(m);
	char *prompt;
	int rc = -1;

	assert_non_null(ui);
	UI_add_user_data(ui, user_pin);
	memset(pin_out, 0, MAX_PIN_LENGTH + 1);
	prompt = UI_construct_prompt(ui, "PKCS#11 key PIN", "SIGN key");
	assert_non_null(prompt);
	if (UI_dup_input_string(ui, prompt, UI_INPUT_FLAG_DEFAULT_PWD, pin_out, 4,
				MAX_PIN_LENGTH) > 0 && UI_process(ui) == 0)
		rc = 0;
	OPENSSL_free(prompt);
	UI_free(ui);
	return rc;
}

static void
t_answers_with_the_login_pin(void **state)
{
	UI_METHOD *m = kh_p11_ui_method_new();
	char *pin = "123456", got[MAX_PIN_LENGTH + 1];

	(void)state;
	assert_non_null(m);
	assert_int_equal(libp11_asks(m, &pin, got), 0);
	assert_string_equal(got, "123456");
	/* The handle's PIN changes (a later login): the answer follows it. */
	pin = "87654321";
	assert_int_equal(libp11_asks(m, &pin, got), 0);
	assert_string_equal(got, "87654321");
	UI_destroy_method(m);
}

static void
t_fails_without_one(void **state)
{
	UI_METHOD *m = kh_p11_ui_method_new();
	char *pin = NULL, got[MAX_PIN_LENGTH + 1];

	(void)state;
	assert_non_null(m);
	assert_int_equal(libp11_asks(m, &pin, got), -1);
	assert_string_equal(got, "");
	/* No user data at all (a context set up without a handle). */
	assert_int_equal(libp11_asks(m, NULL, got), -1);
	UI_destroy_method(m);
}

/* libp11 wants 4 to 32 characters: a longer PIN fails the login rather
 * than being cut (OpenSSL refuses the result; nothing is sent). */
static void
t_libp11_bounds(void **state)
{
	UI_METHOD *m = kh_p11_ui_method_new();
	char *pin = "012345678901234567890123456789012", got[MAX_PIN_LENGTH + 1];

	(void)state;
	assert_int_equal(libp11_asks(m, &pin, got), -1);
	UI_destroy_method(m);
}

/*
 * In a child with no controlling terminal (setsid) and stdin a pipe that
 * holds an answer: OpenSSL's default method would read it.  Ours must not,
 * with a PIN or without one; the bytes are still in the pipe afterwards.
 */
static void
t_never_reads_a_terminal(void **state)
{
	int fds[2], status;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		UI_METHOD *m;
		char *pin = "123456", got[MAX_PIN_LENGTH + 1], rest[16];
		ssize_t n;

		if (setsid() < 0 || dup2(fds[0], 0) < 0 || write(fds[1], "9999\n", 5) != 5 ||
		    (m = kh_p11_ui_method_new()) == NULL)
			_exit(10);
		(void)close(fds[1]);
		if (open("/dev/tty", O_RDWR | O_NOCTTY) >= 0)
			_exit(11);      /* the test needs no terminal to be reachable */
		if (libp11_asks(m, &pin, got) != 0 || strcmp(got, "123456") != 0)
			_exit(12);
		pin = NULL;
		if (libp11_asks(m, &pin, got) == 0)
			_exit(13);
		(void)fcntl(0, F_SETFL, O_NONBLOCK);
		n = read(0, rest, sizeof(rest));
		if (n != 5 || memcmp(rest, "9999\n", 5) != 0)
			_exit(14);      /* something read stdin */
		UI_destroy_method(m);
		_exit(0);
	}
	(void)close(fds[0]);
	(void)close(fds[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_answers_with_the_login_pin),
		cmocka_unit_test(t_fails_without_one),
		cmocka_unit_test(t_libp11_bounds),
		cmocka_unit_test(t_never_reads_a_terminal),
	};

	return cmocka_run_group_tests_name("context-specific PIN", tests, NULL, NULL);
}
