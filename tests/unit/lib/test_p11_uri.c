/*
 * test_p11_uri — token URIs (token.uri): what they may say, and which
 * tokens they leave out (kh_p11_uri_parse_token, kh_p11_uri_mismatch).
 * Key URIs are tested with the rest of lib/kh_pkcs11 in test_x509.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/kh_p11_uri.h"
#include "lib/kh_pkcs11.h"

static void
t_parse_token_uri(void **state)
{
	struct kh_p11_uri u;
	kh_error err = { 0 };

	(void)state;
	assert_int_equal(kh_p11_uri_parse_token("pkcs11:", &u, &err), 0);
	assert_null(u.token);
	assert_false(u.has_slot_id);
	kh_p11_uri_clear(&u);
	assert_int_equal(kh_p11_uri_parse_token(
		"pkcs11:token=Alice%20Smith;manufacturer=piv_II;model=PKCS%2315%20emulated;"
		"serial=0000000012345678;slot-id=4294967296;slot-description=Yubico%20Virtual"
		"%20PIV%2000%2000;slot-manufacturer=Virtual%20Smart%20Card%20Architecture",
		&u, &err), 0);
	assert_string_equal(u.token, "Alice Smith");
	assert_string_equal(u.manufacturer, "piv_II");
	assert_string_equal(u.model, "PKCS#15 emulated");
	assert_string_equal(u.serial, "0000000012345678");
	assert_true(u.has_slot_id);
	assert_int_equal(u.slot_id, 4294967296UL);
	assert_string_equal(u.slot_description, "Yubico Virtual PIV 00 00");
	assert_string_equal(u.slot_manufacturer, "Virtual Smart Card Architecture");
	kh_p11_uri_clear(&u);
	/* The scheme is case-insensitive (RFC 3986); attribute names are not. */
	assert_int_equal(kh_p11_uri_parse_token("PKCS11:model=YubiKey%20YK5", &u, &err), 0);
	kh_p11_uri_clear(&u);
}

static void
t_refused_token_uris(void **state)
{
	static const char *const bad[] = {
		"pkcs11:object=kube",                   /* an object, not a token */
		"pkcs11:id=%01",
		"pkcs11:type=private",
		"pkcs11:library-manufacturer=OpenSC",   /* the module is the policy's */
		"pkcs11:Token=x",
		"pkcs11:token=a?module-path=/tmp/evil.so",
		"pkcs11:token=a#x",
		"pkcs11:slot-id=",
		"pkcs11:slot-id=-1",
		"pkcs11:slot-id=99999999999999999999",  /* overflows */
		"pkcs11:slot-id=1;slot-id=2",
		"pkcs11:serial=a;serial=b",
		"pkcs11:token=%1b[2J",                  /* a control character */
		"pkcs11:token=a%00b",
		"pkcs11:manufacturer=",
		"pkcs11:token=a;;model=b",
		"pkcs11:model",
		"token=a",
		"",
	};
	struct kh_p11_uri u;
	kh_error err;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		kh_error_clear(&err);
		if (kh_p11_uri_parse_token(bad[i], &u, &err) == 0)
			fail_msg("accepted '%s'", bad[i]);
		assert_int_equal(err.code, KH_ERR_CONFIG);
		assert_null(u.token);
		assert_null(u.model);
	}
	assert_int_equal(kh_p11_uri_parse_token(NULL, &u, &err), -1);
}

static struct kh_p11_token
piv_token(void)
{
	return (struct kh_p11_token){
		.slot_id = 4, .slot_description = "Yubico Virtual PIV 00 00",
		.slot_manufacturer = "Virtual Smart Card Architecture", .present = true,
		.initialized = true, .label = "Alice Smith", .manufacturer = "piv_II",
		.model = "PKCS#15 emulated", .serial = "0000000012345678",
	};
}

static const char *
mismatch(const char *uri)
{
	static char attr[64];
	struct kh_p11_token t = piv_token();
	struct kh_p11_uri u;
	const char *bad;
	kh_error err = { 0 };

	if (kh_p11_uri_parse_token(uri, &u, &err) != 0)
		fail_msg("%s: %s", uri, err.msg);
	bad = kh_p11_uri_mismatch(&u, &t);
	kh_p11_uri_clear(&u);
	if (bad == NULL)
		return NULL;
	(void)snprintf(attr, sizeof(attr), "%s", bad);
	return attr;
}

static void
t_narrowing(void **state)
{
	struct kh_p11_token t = piv_token();

	(void)state;
	assert_null(kh_p11_uri_mismatch(NULL, &t));
	assert_null(mismatch("pkcs11:"));
	assert_null(mismatch("pkcs11:manufacturer=piv_II"));
	assert_null(mismatch("pkcs11:token=Alice%20Smith;serial=0000000012345678;slot-id=4"));
	assert_null(mismatch("pkcs11:slot-description=Yubico%20Virtual%20PIV%2000%2000"));
	assert_string_equal(mismatch("pkcs11:manufacturer=Yubico%20%28www.yubico.com%29"),
			    "manufacturer");
	assert_string_equal(mismatch("pkcs11:model=PKCS%2315"), "model");  /* whole, not a prefix */
	assert_string_equal(mismatch("pkcs11:token=alice"), "token");      /* case matters */
	assert_string_equal(mismatch("pkcs11:serial=12345678"), "serial");
	assert_string_equal(mismatch("pkcs11:slot-id=5"), "slot-id");
	assert_string_equal(mismatch("pkcs11:slot-manufacturer=x"), "slot-manufacturer");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_parse_token_uri),
		cmocka_unit_test(t_refused_token_uris),
		cmocka_unit_test(t_narrowing),
	};

	return cmocka_run_group_tests_name("token URIs", tests, NULL, NULL);
}
