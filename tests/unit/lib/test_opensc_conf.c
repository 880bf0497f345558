/*
 * test_opensc_conf — lib/kh_opensc_conf: whether an opensc.conf makes
 * OpenSC reset a card at disconnect, read as OpenSC 0.23 reads it
 * (sc_get_conf_block: "app opensc-pkcs11" before "app default", the first
 * block of each kind, "leave" when the block does not say).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/kh_opensc_conf.h"

static int
resets(const char *text)
{
	kh_error err = { 0 };
	int r = kh_opensc_resets_card_text(text, "opensc.conf", &err);

	if (r < 0)
		fail_msg("%s\n%s", err.msg, text);
	return r;
}

static void
t_settings(void **state)
{
	(void)state;
	/* Debian's shipped file, and nothing at all: leave. */
	assert_int_equal(resets("app default {\n\t# debug = 3;\n\tframework pkcs15 {\n"
				"\t\t# use_file_caching = public;\n\t}\n}\n"), 0);
	assert_int_equal(resets(""), 0);
	assert_int_equal(resets("app default { reader_driver pcsc { disconnect_action = reset; } }"), 1);
	assert_int_equal(resets("app default { reader_driver pcsc { disconnect_action = unpower; } }"), 1);
	assert_int_equal(resets("app default { reader_driver pcsc { disconnect_action = leave; } }"), 0);
	assert_int_equal(resets("app default {\n reader_driver \"pcsc\" {\n"
				"  # disconnect_action = reset;\n  connect_exclusive = false;\n }\n}\n"), 0);
	assert_int_equal(resets("app default { reader_driver pcsc { disconnect_action = \"reset\"; } }"), 1);
	/* the same setting elsewhere does nothing */
	assert_int_equal(resets("app default { reader_driver openct { disconnect_action = reset; } }"), 0);
	assert_int_equal(resets("app pkcs15-init { reader_driver pcsc { disconnect_action = reset; } }"), 0);
	assert_int_equal(resets("app default { framework pkcs15 { reader_driver pcsc {"
				" disconnect_action = reset; } } }"), 0);
	assert_int_equal(resets("reader_driver pcsc { disconnect_action = reset; }"), 0);
}

/* The module's own app block comes first, and its reader_driver block
 * decides even when it does not set the action (OpenSC takes the block,
 * then the key's default). */
static void
t_precedence(void **state)
{
	(void)state;
	assert_int_equal(resets("app default { reader_driver pcsc { disconnect_action = leave; } }\n"
				"app opensc-pkcs11 { reader_driver pcsc { disconnect_action = reset; } }"), 1);
	assert_int_equal(resets("app default { reader_driver pcsc { disconnect_action = reset; } }\n"
				"app opensc-pkcs11 { reader_driver pcsc { enable_pinpad = false; } }"), 0);
	assert_int_equal(resets("app default { reader_driver pcsc { disconnect_action = reset; } }\n"
				"app opensc-pkcs11 { framework pkcs15 { use_file_caching = no; } }"), 1);
	/* only the first app default block, and its first pcsc block */
	assert_int_equal(resets("app default { }\n"
				"app default { reader_driver pcsc { disconnect_action = reset; } }"), 0);
	assert_int_equal(resets("app default { reader_driver pcsc { }\n"
				" reader_driver pcsc { disconnect_action = reset; } }"), 0);
	/* the first value of a key, and the first key */
	assert_int_equal(resets("app default { reader_driver pcsc { disconnect_action = reset, leave;"
				" disconnect_action = leave; } }"), 1);
}

/*
 * Read as scconf reads it (tests/fuzz/fuzz_opensc_conf holds kubehsm to
 * OpenSC's own parser; each case here was a disagreement it found).
 */
static void
t_read_as_scconf(void **state)
{
	char deep[256] = "";

	(void)state;
	/* A word runs to ';', ',' or a blank: "disconnect_action=reset" is a
	 * name without a value, and OpenSC leaves the card. */
	assert_int_equal(resets("app default { reader_driver pcsc { disconnect_action=reset; } }"), 0);
	/* Names without regard to case, values with. */
	assert_int_equal(resets("APP Default { Reader_Driver PCSC { Disconnect_Action = reset; } }"), 1);
	assert_int_equal(resets("app default { reader_driver pcsc { disconnect_action = Reset; } }"), 0);
	/* A setting's lines join the first one of that name in the block. */
	assert_int_equal(resets("app default { reader_driver pcsc { Disconnect_Action = leave;"
				" disconnect_action = reset; } }"), 0);
	assert_int_equal(resets("app default { reader_driver pcsc { disconnect_action = ;"
				" disconnect_action = reset; } }"), 1);
	assert_int_equal(resets("app Default { }\n"
				"app default { reader_driver pcsc { disconnect_action = reset; } }"), 0);
	/* What scconf forgives: a missing ';' or '}', an unterminated quote. */
	assert_int_equal(resets("app default { reader_driver pcsc { disconnect_action = reset }"), 1);
	assert_int_equal(resets("app default { x = y }"), 0);
	assert_int_equal(resets("app default { x = \"unterminated; }"), 0);
	/* Sixteen blocks deep is the most OpenSC reads. */
	for (int i = 0; i < 16; i++)
		strcat(deep, "x {");
	assert_int_equal(resets(deep), 0);
}

static void
t_syntax_errors(void **state)
{
	static const char *const bad[] = {
		"app default { } }", "= y;", "x }",
		/* "pcsc{" is one word, and another word follows without a comma */
		"app default { reader_driver pcsc{ disconnect_action = reset; } }",
		"app default pcsc { }",
		/* a value after a comment inside a setting */
		"app default { reader_driver pcsc { disconnect_action = # soon\n reset; } }",
		/* seventeen deep */
		"x {x {x {x {x {x {x {x {x {x {x {x {x {x {x {x {x {",
		/* a comment between a name and its '{': OpenSC crashes */
		"app default # the default\n{ }",
		"app default {\n\treader_driver pcsc\n\n\t{ disconnect_action = reset; }\n}",
	};
	kh_error err;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		kh_error_clear(&err);
		if (kh_opensc_resets_card_text(bad[i], "o.conf", &err) != -1)
			fail_msg("accepted '%s'", bad[i]);
		assert_non_null(strstr(err.msg, "o.conf:"));
	}
}

static void
t_files(void **state)
{
	static const char with_nul[] = "app default { reader_driver pcsc { disconnect_action = "
				       "reset; } }\0app opensc-pkcs11 { reader_driver pcsc { } }";
	char path[] = "/tmp/khopensc.XXXXXX";
	kh_error err = { 0 };
	FILE *f;
	int fd;

	(void)state;
	/* No file: OpenSC's built-in default, which leaves the card. */
	assert_int_equal(kh_opensc_resets_card("/nonexistent/opensc.conf", &err), 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_non_null(f = fdopen(fd, "w"));
	fputs("app default {\n  reader_driver pcsc {\n    disconnect_action = reset;\n  }\n}\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(kh_opensc_resets_card(path, &err), 1);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(kh_opensc_resets_card("/tmp", &err), -1);
	/* OpenSC reads on past a NUL: what follows could say otherwise. */
	memcpy(path + strlen(path) - 6, "XXXXXX", 6);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, with_nul, sizeof(with_nul) - 1), (ssize_t)sizeof(with_nul) - 1);
	assert_int_equal(close(fd), 0);
	assert_int_equal(kh_opensc_resets_card(path, &err), -1);
	assert_non_null(strstr(err.msg, "NUL"));
	assert_int_equal(unlink(path), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_settings),
		cmocka_unit_test(t_precedence),
		cmocka_unit_test(t_read_as_scconf),
		cmocka_unit_test(t_syntax_errors),
		cmocka_unit_test(t_files),
	};

	return cmocka_run_group_tests_name("opensc.conf disconnect_action", tests, NULL, NULL);
}
