/*
 * Unit tests for lib/kh_base64: every length round-trips, and decoding is
 * strict (canonical padding, no whitespace, no URL alphabet) with its cap
 * checked before anything is decoded.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/kh_base64.h"

static void
t_base64_roundtrip(void **state)
{
	unsigned char in[64], *back;
	char *enc;
	size_t n, elen, blen;
	kh_error err;

	(void)state;
	for (n = 0; n < sizeof(in); n++)
		in[n] = (unsigned char)(n * 37 + 11);
	for (n = 0; n <= sizeof(in); n++) {
		assert_int_equal(kh_base64_encode(in, n, &enc, &elen, &err), 0);
		assert_int_equal(elen, (n + 2) / 3 * 4);
		assert_int_equal(strlen(enc), elen);
		assert_int_equal(kh_base64_decode(enc, elen, 64, &back, &blen, &err), 0);
		assert_int_equal(blen, n);
		if (n > 0)
			assert_memory_equal(back, in, n);
		free(back);
		free(enc);
	}
}

static void
t_base64_strict(void **state)
{
	static const char *const bad[] = {
		"=", "==", "===", "====", "A", "AA", "AAA", "A===", "QQ=A", "Q=Q=",
		"QQ==QQ==", "QR==", "QUI=QUI=", " QQ==", "QQ== ", "QQ==\n", "Q\tQ=",
		"QUJD\r\n", "QU\x80=", "QUJ.",
	};
	unsigned char *out;
	size_t i, n;
	kh_error err;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (kh_base64_decode(bad[i], strlen(bad[i]), 64, &out, &n, &err) != -1)
			fail_msg("'%s' was accepted", bad[i]);
		assert_int_equal(err.code, KH_ERR_INPUT);
		assert_null(out);
	}
	/* The cap applies before decoding. */
	assert_int_equal(kh_base64_decode("QUJD", 4, 2, &out, &n, &err), -1);
	assert_non_null(strstr(err.msg, "more than 2"));
	assert_int_equal(kh_base64_decode("QUJD", 4, 3, &out, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(out, "ABC", 3);
	free(out);
	assert_int_equal(kh_base64_decode("QQ==", 4, 3, &out, &n, &err), 0);
	assert_int_equal(n, 1);
	free(out);
	assert_int_equal(kh_base64_decode("QUI=", 4, 3, &out, &n, &err), 0);
	assert_int_equal(n, 2);
	free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_base64_roundtrip),
		cmocka_unit_test(t_base64_strict),
	};

	return cmocka_run_group_tests_name("base64", tests, NULL, NULL);
}
