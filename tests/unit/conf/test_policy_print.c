/*
 * Unit tests for printing the effective policy (conf/kh_policy_print.c):
 * deterministic, never the PIN, and what is printed loads again and prints
 * the same.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/kh_policy.h"
#include "tests/unit/conf/policy_fixture.h"

static void
test_print(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = test_opts();
	char *text = base_with(fx, 9, "session = { ttl = \"1d90m\"; allow_long_ttl = true; };");
	char *out1, *out2, *out3;
	struct kh_policy *p, *q;
	kh_error err;

	p = load_text(text, &err);
	assert_non_null(p);
	out1 = print_policy(p);
	out2 = print_policy(p);
	assert_string_equal(out1, out2);            /* deterministic */
	assert_non_null(strstr(out1, "ttl = \"1d1h30m\";  # 91800 seconds"));
	assert_non_null(strstr(out1, "scope = \"user\";"));
	assert_non_null(strstr(out1, "revoke_on_logout = true;"));
	assert_non_null(strstr(out1, "mode = \"if-available\";"));
	assert_non_null(strstr(out1, "map = \"cn\";"));
	assert_non_null(strstr(out1, "key_type = \"ec-p256\";"));
	assert_non_null(strstr(out1, "issuer.pin\";"));
	assert_null(strstr(out1, PIN_SECRET));       /* the PIN is never read */

	/* What is printed is itself a valid policy that prints the same. */
	q = kh_policy_load_string(out1, "test.conf", &o, &err);
	if (q == NULL)
		print_error("%s\n%s\n", err.msg, out1);
	assert_non_null(q);
	out3 = print_policy(q);
	assert_string_equal(out1, out3);
	kh_policy_free(q);
	kh_policy_free(p);
	free(out1);
	free(out2);
	free(out3);
	free(text);
}

/* pkcs11.env, an issuer's own module and env, token.uri: printed, and the
 * printout loads back to the same. */
static void
test_print_env_and_uri(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = test_opts();
	char *text = subst_dir(fx,
		"version = 1;\n"
		"pkcs11 = { module = \"@D@/module.so\";\n"
		"  env = { PCSCLITE_CSOCK_NAME = \"/run/pcscd/pcscd.comm\"; OPENSC_CONF = \"/etc/o\\\"c\"; }; };\n"
		"token = { uri = \"pkcs11:manufacturer=piv_II\"; };\n"
		"trust = { ca_file = \"@D@/ca.pem\"; };\n"
		"issuer = { key = \"pkcs11:token=host;object=issuer\"; module = \"@D@/mod2.so\";\n"
		"  env = { TPM2_PKCS11_STORE = \"/var/lib/kubehsm/tpm\"; TSS2_LOG = \"all+NONE\"; };\n"
		"  cert_file = \"@D@/issuer.pem\"; pin_file = \"@D@/issuer.pin\"; };\n");
	char *mod2 = path_in(fx, "mod2.so");
	struct kh_policy *p, *q;
	char *out, *out2;
	kh_error err;

	write_file(mod2, "another module\n", 0644);
	p = load_text(text, &err);
	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	out = print_policy(p);
	assert_non_null(strstr(out, "  env = {\n    PCSCLITE_CSOCK_NAME = \"/run/pcscd/pcscd.comm\";\n"
				   "    OPENSC_CONF = \"/etc/o\\\"c\";\n  };\n"));
	assert_non_null(strstr(out, "uri = \"pkcs11:manufacturer=piv_II\";"));
	assert_non_null(strstr(out, "    TPM2_PKCS11_STORE = \"/var/lib/kubehsm/tpm\";\n"));
	q = kh_policy_load_string(out, "test.conf", &o, &err);
	if (q == NULL)
		print_error("%s\n%s\n", err.msg, out);
	assert_non_null(q);
	out2 = print_policy(q);
	assert_string_equal(out, out2);
	assert_int_equal(q->issuers[0].env.n, 2);
	kh_policy_free(q);
	kh_policy_free(p);
	free(out);
	free(out2);
	free(mod2);
	free(text);
}

static void
test_print_two_issuers_escapes(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = test_opts();
	char *text = subst_dir(fx,
		"version = 1;\n"
		"pkcs11 = { module = \"@D@/module.so\"; };\n"
		"trust = { ca_file = \"@D@/ca.pem\"; };\n"
		"identity = { username = \"a\\\"b\\\\c%%%u\"; groups = [ \"static:x\\\"y\" ]; };\n"
		"issuer = ( { id = \"one\"; key = \"pkcs11:object=a\"; cert_file = \"@D@/issuer.pem\";\n"
		"             pin_file = \"@D@/issuer.pin\"; },\n"
		"           { id = \"two\"; key = \"pkcs11:object=b\"; cert_file = \"@D@/issuer.pem\";\n"
		"             pin_file = \"@D@/issuer.pin\"; key_type = \"rsa-2048\"; } );\n");
	struct kh_policy *p, *q;
	char *out, *out2;
	kh_error err;

	p = load_text(text, &err);
	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	assert_string_equal(p->identity.username, "a\"b\\c%%%u");
	out = print_policy(p);
	assert_non_null(strstr(out, "issuer = (\n"));
	assert_non_null(strstr(out, "username = \"a\\\"b\\\\c%%%u\";"));
	q = kh_policy_load_string(out, "test.conf", &o, &err);
	if (q == NULL)
		print_error("%s\n%s\n", err.msg, out);
	assert_non_null(q);
	out2 = print_policy(q);
	assert_string_equal(out, out2);
	assert_int_equal(q->nissuers, 2);
	assert_string_equal(q->identity.groups[0].arg, "x\"y");
	kh_policy_free(q);
	kh_policy_free(p);
	free(out);
	free(out2);
	free(text);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_print, setup, teardown),
		cmocka_unit_test_setup_teardown(test_print_env_and_uri, setup, teardown),
		cmocka_unit_test_setup_teardown(test_print_two_issuers_escapes, setup, teardown),
	};

	return cmocka_run_group_tests_name("policy print", tests, NULL, NULL);
}
