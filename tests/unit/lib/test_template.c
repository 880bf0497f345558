/*
 * Unit tests for lib/kh_template: the %u templates of kubehsm.conf, which
 * escapes kh_template_check lets through and what kh_template_expand
 * makes of them, up to the output bound; and the same code with the %U
 * escape of pkcs11.forward.socket.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/kh_error.h"
#include "lib/kh_template.h"

/*
 * kh_template_check points at the offending '%' (the loader quotes the
 * character after it, or says the '%' ends the value), and an escape is
 * consumed whole: "%%u" is a literal "%u", so its 'u' is no escape.
 */
static void
test_template_check(void **state)
{
	static const char *const good[] = {
		"", "kube", "%u", "%%", "%%u", "%u%u", "card-%u", "100%%-%u", "%%%u", "%%%%",
	};
	static const struct { const char *tmpl; size_t at; } bad[] = {
		{ "%", 0 }, { "abc%", 3 }, { "%x", 0 }, { "%U", 0 }, { "a%u%U", 3 },
		{ "%%%", 2 }, { "%u%", 2 }, { "%%%x", 2 }, { "%\n", 0 }, { "% u", 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (kh_template_check(good[i]) != NULL)
			fail_msg("\"%s\" was refused", good[i]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *at = kh_template_check(bad[i].tmpl);

		if (at != bad[i].tmpl + bad[i].at)
			fail_msg("\"%s\": want offset %zu, got %s", bad[i].tmpl, bad[i].at,
				 at == NULL ? "NULL" : "another offset");
		assert_int_equal(*at, '%');
	}
}

static void
expect_expand(const char *tmpl, const char *user, const char *want)
{
	kh_error err;
	char *got = kh_template_expand(tmpl, user, &err);

	if (got == NULL)
		print_error("%s / %s: %s\n", tmpl, user, err.msg);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void
expect_expand_fails(const char *tmpl, const char *user)
{
	kh_error err;
	char *got = kh_template_expand(tmpl, user, &err);

	if (got != NULL)
		print_error("\"%s\" expanded to \"%s\"\n", tmpl ? tmpl : "(null)", got);
	assert_null(got);
	assert_int_equal(err.code, KH_ERR_INPUT);
}

static void
test_template(void **state)
{
	char *user, *tmpl;

	(void)state;
	expect_expand("%u", "alice", "alice");
	expect_expand("", "alice", "");
	expect_expand("kube", "alice", "kube");
	expect_expand("card-%u", "bob", "card-bob");
	expect_expand("%u@%u", "b", "b@b");
	expect_expand("%%", "alice", "%");
	expect_expand("%%u", "alice", "%u");       /* the escape wins over %u */
	expect_expand("100%%-%u", "x", "100%-x");
	expect_expand("%%%u", "x", "%x");
	expect_expand("%u", "%u", "%u");           /* the user name is not re-expanded */

	expect_expand_fails("%", "alice");
	expect_expand_fails("abc%", "alice");
	expect_expand_fails("%x", "alice");
	expect_expand_fails("%U", "alice");
	expect_expand_fails("%%%", "alice");
	expect_expand_fails("%u", NULL);
	expect_expand_fails("%u", "");
	expect_expand_fails("kube", NULL);         /* no user: refuse even without %u */
	expect_expand_fails(NULL, "alice");

	/* Output bound: exactly KH_TEMPLATE_MAX fits, one more does not. */
	user = malloc(KH_TEMPLATE_MAX + 2);
	assert_non_null(user);
	memset(user, 'a', KH_TEMPLATE_MAX);
	user[KH_TEMPLATE_MAX] = '\0';
	{
		kh_error err;
		char *got = kh_template_expand("%u", user, &err);

		assert_non_null(got);
		assert_int_equal(strlen(got), KH_TEMPLATE_MAX);
		free(got);
	}
	expect_expand_fails("x%u", user);
	expect_expand_fails("%u%u", user + KH_TEMPLATE_MAX / 2 - 1);
	expect_expand("%u%u", user + KH_TEMPLATE_MAX / 2, user);
	user[KH_TEMPLATE_MAX] = 'a';
	user[KH_TEMPLATE_MAX + 1] = '\0';
	expect_expand_fails("%u", user);
	free(user);

	tmpl = malloc(KH_TEMPLATE_MAX + 2);
	assert_non_null(tmpl);
	memset(tmpl, 'k', KH_TEMPLATE_MAX + 1);
	tmpl[KH_TEMPLATE_MAX + 1] = '\0';
	expect_expand_fails(tmpl, "u");
	free(tmpl);
}

/* pkcs11.forward.socket's escape is %U (the uid): %u is no escape there,
 * and %% stays a literal percent sign. */
static void
test_template_uid_escape(void **state)
{
	kh_error err;
	char *got;

	(void)state;
	assert_null(kh_template_check_escape("/run/user/%U/p11-kit/pkcs11", 'U'));
	assert_null(kh_template_check_escape("/run/%%U-%U", 'U'));
	assert_non_null(kh_template_check_escape("/run/user/%u/pkcs11", 'U'));
	assert_true(kh_template_uses("/run/user/%U/pkcs11", 'U'));
	assert_true(kh_template_uses("/run/%%%U", 'U'));
	assert_false(kh_template_uses("/run/%%U/pkcs11", 'U'));   /* a literal "%U" */
	assert_false(kh_template_uses("/run/pkcs11", 'U'));
	assert_false(kh_template_uses("/run/%u/%", 'U'));
	got = kh_template_expand_escape("/run/user/%U/p11-kit/pkcs11", 'U', "1000", &err);
	assert_non_null(got);
	assert_string_equal(got, "/run/user/1000/p11-kit/pkcs11");
	free(got);
	got = kh_template_expand_escape("/run/%%U-%U", 'U', "4294967294", &err);
	assert_non_null(got);
	assert_string_equal(got, "/run/%U-4294967294");
	free(got);
	assert_null(kh_template_expand_escape("/run/user/%u", 'U', "1000", &err));
	assert_int_equal(err.code, KH_ERR_INPUT);
	assert_null(kh_template_expand_escape("/run/user/%U", 'U', "", &err));
	assert_int_equal(err.code, KH_ERR_INPUT);
}

/* identity.uid's form: several escapes, each with its value. */
static void
test_template_vars(void **state)
{
	static const struct kh_template_var v[] = {
		{ 'h', "bastion1" }, { 'u', "alice" }, { 'U', "1000" }, { 's', "" },
	};
	kh_error err = { 0 };
	char *out;

	(void)state;
	assert_null(kh_template_check_set("%h:%u:%U:%s:%k %%", KH_UID_ESCAPES));
	assert_string_equal(kh_template_check_set("%h:%t", KH_UID_ESCAPES), "%t");
	assert_string_equal(kh_template_check_set("%h%", KH_UID_ESCAPES), "%");
	out = kh_template_expand_vars("%h:%u(%U) 100%%", v, 3, &err);
	assert_string_equal(out, "bastion1:alice(1000) 100%");
	free(out);
	/* Not among the vars, or valued "": refused, never expanded to "". */
	assert_null(kh_template_expand_vars("%h:%k", v, 3, &err));
	assert_int_equal(err.code, KH_ERR_INPUT);
	assert_null(kh_template_expand_vars("%s", v, 4, &err));
	assert_null(kh_template_expand_vars("%h%", v, 3, &err));
	assert_null(kh_template_expand_vars(NULL, v, 3, &err));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_template_check),
		cmocka_unit_test(test_template),
		cmocka_unit_test(test_template_uid_escape),
		cmocka_unit_test(test_template_vars),
	};

	return cmocka_run_group_tests_name("template", tests, NULL, NULL);
}
