/*
 * Unit tests for lib/kh_words: the policy's words and the names printed
 * back for them, and the one rule for an issuer id.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lib/kh_words.h"

static void
test_enum_names(void **state)
{
	(void)state;
	assert_string_equal(kh_map_rule_name(KH_MAP_EMAIL), "email");
	assert_string_equal(kh_scope_name(KH_SCOPE_SESSION), "session");
	assert_string_equal(kh_signer_key_name(KH_SIGNER_TOKEN), "token");
	assert_string_equal(kh_polkit_mode_name(KH_POLKIT_OFF), "off");
	assert_string_equal(kh_key_type_name(KH_KEY_RSA_2048), "rsa-2048");
	assert_string_equal(kh_deliver_name(KH_DELIVER_BOTH), "both");
}

/* Every word of every table prints back as itself, and a value no table
 * knows prints as "?", never NULL (kubehsm config check prints these). */
#define CHECK_TABLE(words, name, type) do {					\
		for (w = (words); w->word != NULL; w++)				\
			assert_string_equal(name((type)w->value), w->word);	\
		assert_string_equal(name((type)99), "?");			\
	} while (0)

static void
test_word_tables(void **state)
{
	const struct kh_enum_word *w;

	(void)state;
	CHECK_TABLE(kh_map_words, kh_map_rule_name, enum kh_map_rule);
	CHECK_TABLE(kh_scope_words, kh_scope_name, enum kh_scope);
	CHECK_TABLE(kh_signer_words, kh_signer_key_name, enum kh_signer_key);
	CHECK_TABLE(kh_polkit_words, kh_polkit_mode_name, enum kh_polkit_mode);
	CHECK_TABLE(kh_key_type_words, kh_key_type_name, enum kh_key_type);
	CHECK_TABLE(kh_deliver_words, kh_deliver_name, enum kh_deliver);
}

/* The policy, the exec config and the relay's messages take the same ids. */
static void
test_issuer_id(void **state)
{
	char id[KH_ISSUER_ID_MAX + 2];

	(void)state;
	assert_true(kh_issuer_id_valid("bastion-1.prod_eu", strlen("bastion-1.prod_eu")));
	assert_true(kh_issuer_id_valid("x", 1));
	memset(id, 'a', sizeof(id));
	assert_true(kh_issuer_id_valid(id, KH_ISSUER_ID_MAX));
	assert_false(kh_issuer_id_valid(id, KH_ISSUER_ID_MAX + 1));
	assert_false(kh_issuer_id_valid("", 0));
	assert_false(kh_issuer_id_valid(NULL, 1));
	/* the length given is what is judged: an embedded NUL is a character */
	assert_false(kh_issuer_id_valid("ab\0c", 4));
	assert_false(kh_issuer_id_valid("a b", 3));
	assert_false(kh_issuer_id_valid("a/b", 3));
	assert_false(kh_issuer_id_valid("a:b", 3));   /* key descriptions split on ':' */
	assert_false(kh_issuer_id_valid("caf\xc3\xa9", 5));   /* ASCII only, whatever the locale */
}

/* The policy's other names (relay cluster, run_as) take the same alphabet
 * with a bound of their own. */
static void
test_word(void **state)
{
	(void)state;
	assert_true(kh_word_valid("abc", 3, 3));
	assert_false(kh_word_valid("abcd", 4, 3));
	assert_true(kh_word_valid("kube-relay_1.x", 14, 64));
	assert_false(kh_word_valid("", 0, 64));
	assert_false(kh_word_valid("a@b", 3, 64));
	assert_false(kh_word_valid("\xe9t\xe9", 3, 64));   /* Latin-1 letters: not in any locale */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enum_names),
		cmocka_unit_test(test_word_tables),
		cmocka_unit_test(test_issuer_id),
		cmocka_unit_test(test_word),
	};

	return cmocka_run_group_tests_name("words", tests, NULL, NULL);
}
