/*
 * test_forward_child — root's side of the forwarded token's process
 * (pam/kh_pam_forward_child.c): what that process sends is attacker-chosen,
 * so every malformed, truncated or oversized hello or answer is refused,
 * a certificate is exactly one DER certificate, and a signature counts only
 * over root's own challenge with the certificate's key.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/kh_challenge.h"
#include "lib/kh_pkcs11.h"
#include "pam/kh_pam_forward_child.h"
#include "tests/unit/pam/fakes.h"

/* A valid hello with cert's DER; *der freed by the caller (OPENSSL_free). */
static void
good_hello(struct kh_fwd_hello *h, X509 *cert, unsigned char **der)
{
	int n;

	memset(h, 0, sizeof(*h));
	h->code = KH_OK;
	h->outcome = KH_TOKEN_CHOSEN;
	h->pin_flags = KH_P11_PIN_FINAL_TRY;
	h->slot_id = 7;
	h->label = (char *)"alice";
	h->serial = (char *)"0001";
	h->manufacturer = (char *)"SoftHSM";
	h->model = (char *)"v2";
	h->cert_label = (char *)"kube";
	h->id[0] = 1;
	h->id_len = 1;
	*der = NULL;
	n = i2d_X509(cert, der);
	assert_true(n > 0);
	h->cert_der = *der;
	h->cert_len = (size_t)n;
}

/* The frame's payload: b less its 4-byte length. */
static const unsigned char *
payload(const struct kh_fwd_buf *b, size_t *len)
{
	assert_true(b->len >= 4);
	*len = b->len - 4;
	return b->data + 4;
}

static void
t_hello_round_trip(void **state)
{
	X509 *cert = fake_cert_new(NULL, "CN", "alice", NULL), *x;
	struct kh_fwd_hello h, got;
	struct kh_fwd_buf b = { 0 };
	unsigned char *der;
	const unsigned char *p;
	kh_error err = { 0 };
	size_t len;

	(void)state;
	good_hello(&h, cert, &der);
	h.label = (char *)"al\tice\x1b[2J";
	assert_int_equal(kh_fwd_encode_hello(&b, &h), 0);
	p = payload(&b, &len);
	assert_int_equal(kh_fwd_parse_hello(p, len, &got, &err), 0);
	assert_int_equal(got.code, KH_OK);
	assert_int_equal(got.outcome, KH_TOKEN_CHOSEN);
	assert_int_equal(got.pin_flags, KH_P11_PIN_FINAL_TRY);
	assert_int_equal(got.slot_id, 7);
	/* control characters never reach a prompt or a log */
	assert_string_equal(got.label, "al?ice?[2J");
	assert_string_equal(got.serial, "0001");
	assert_int_equal(got.id_len, 1);
	assert_non_null(x = kh_fwd_hello_cert(&got, &err));
	assert_int_equal(X509_cmp(x, cert), 0);
	X509_free(x);
	kh_fwd_hello_clear(&got);
	kh_fwd_buf_clear(&b);
	OPENSSL_free(der);
	X509_free(cert);
}

/* Every truncation of a good hello is refused. */
static void
t_hello_truncated(void **state)
{
	X509 *cert = fake_cert_new(NULL, "CN", "alice", NULL);
	struct kh_fwd_hello h, got;
	struct kh_fwd_buf b = { 0 };
	unsigned char *der;
	const unsigned char *p;
	size_t len;

	(void)state;
	good_hello(&h, cert, &der);
	assert_int_equal(kh_fwd_encode_hello(&b, &h), 0);
	p = payload(&b, &len);
	for (size_t n = 0; n < len; n++) {
		kh_error err = { 0 };

		if (kh_fwd_parse_hello(p, n, &got, &err) == 0)
			fail_msg("a hello cut to %zu of %zu bytes was accepted", n, len);
		assert_int_equal(err.code, KH_ERR_REFUSED);
		assert_non_null(strstr(err.msg, "malformed hello"));
	}
	kh_fwd_buf_clear(&b);
	OPENSSL_free(der);
	X509_free(cert);
}

/* A byte after the last field, a field over its cap, a wrong tag. */
static void
t_hello_malformed(void **state)
{
	X509 *cert = fake_cert_new(NULL, "CN", "alice", NULL);
	struct kh_fwd_hello h, got;
	struct kh_fwd_buf b = { 0 };
	unsigned char *der, *copy, big[KH_FWD_CERT_MAX + 1];
	const unsigned char *p;
	kh_error err = { 0 };
	size_t len;

	(void)state;
	good_hello(&h, cert, &der);
	assert_int_equal(kh_fwd_encode_hello(&b, &h), 0);
	p = payload(&b, &len);
	assert_non_null(copy = malloc(len + 1));
	memcpy(copy, p, len);
	copy[len] = 0;
	assert_int_equal(kh_fwd_parse_hello(copy, len + 1, &got, &err), -1);
	assert_non_null(strstr(err.msg, "after the last field"));

	/* the tag field's length: 5, not 4 */
	copy[3] = 5;
	assert_int_equal(kh_fwd_parse_hello(copy, len, &got, &err), -1);
	copy[3] = 4;
	/* the tag itself: an answer's */
	copy[7] = 'A';
	assert_int_equal(kh_fwd_parse_hello(copy, len, &got, &err), -1);
	assert_non_null(strstr(err.msg, "tag"));
	free(copy);
	kh_fwd_buf_clear(&b);

	/* an encoder refuses what is over a cap; a hand-made frame says it */
	memset(big, 0x30, sizeof(big));
	h.cert_der = big;
	h.cert_len = sizeof(big);
	assert_int_equal(kh_fwd_encode_hello(&b, &h), -1);
	kh_fwd_buf_clear(&b);
	{
		/* tag, status, outcome, flags, slot, 4 empty strings, then a
		 * certificate field claiming KH_FWD_CERT_MAX + 1 bytes */
		unsigned char f[256], *q = f;
		static const unsigned char u32[4] = { 0, 0, 0, 4 }, u64[4] = { 0, 0, 0, 8 };

		memcpy(q, u32, 4), q += 4, memcpy(q, "KHFH", 4), q += 4;
		for (int i = 0; i < 3; i++)
			memcpy(q, u32, 4), q += 4, memset(q, 0, 4), q += 4;
		memcpy(q, u64, 4), q += 4, memset(q, 0, 8), q += 8;
		for (int i = 0; i < 4; i++)
			memset(q, 0, 4), q += 4;
		*q++ = 0, *q++ = 0, *q++ = (KH_FWD_CERT_MAX + 1) >> 8, *q++ = (KH_FWD_CERT_MAX + 1) & 0xff;
		assert_int_equal(kh_fwd_parse_hello(f, (size_t)(q - f), &got, &err), -1);
		assert_non_null(strstr(err.msg, "certificate over its limit"));
		/* the same frame with a label of 300 bytes */
		f[4 * 8 + 4 + 8 + 2] = 300 >> 8;
		f[4 * 8 + 4 + 8 + 3] = 300 & 0xff;
		assert_int_equal(kh_fwd_parse_hello(f, (size_t)(q - f), &got, &err), -1);
		assert_non_null(strstr(err.msg, "label over its limit"));
	}

	/* chosen, but no certificate; chosen with a failure */
	OPENSSL_free(der);
	good_hello(&h, cert, &der);
	h.cert_der = NULL;
	h.cert_len = 0;
	assert_int_equal(kh_fwd_encode_hello(&b, &h), 0);
	p = payload(&b, &len);
	assert_int_equal(kh_fwd_parse_hello(p, len, &got, &err), -1);
	kh_fwd_buf_clear(&b);
	h.code = KH_ERR_TOKEN;
	assert_int_equal(kh_fwd_encode_hello(&b, &h), 0);
	p = payload(&b, &len);
	assert_int_equal(kh_fwd_parse_hello(p, len, &got, &err), -1);
	kh_fwd_buf_clear(&b);
	OPENSSL_free(der);
	X509_free(cert);
}

/* Not a certificate, or one with bytes after it. */
static void
t_hello_cert_not_der(void **state)
{
	X509 *cert = fake_cert_new(NULL, "CN", "alice", NULL);
	struct kh_fwd_hello h;
	unsigned char *der, *longer;
	kh_error err = { 0 };

	(void)state;
	good_hello(&h, cert, &der);
	assert_non_null(longer = malloc(h.cert_len + 1));
	memcpy(longer, der, h.cert_len);
	longer[h.cert_len] = 0;
	h.cert_der = longer;
	h.cert_len++;
	assert_null(kh_fwd_hello_cert(&h, &err));
	assert_int_equal(err.code, KH_ERR_REFUSED);
	h.cert_len -= 2;
	assert_null(kh_fwd_hello_cert(&h, &err));
	memset(longer, 0x41, h.cert_len);
	assert_null(kh_fwd_hello_cert(&h, &err));
	free(longer);
	OPENSSL_free(der);
	X509_free(cert);
}

static void
sign(EVP_PKEY *key, const unsigned char *msg, size_t len, struct kh_fwd_answer *a)
{
	kh_error err = { 0 };
	unsigned char *sig;
	size_t n;

	memset(a, 0, sizeof(*a));
	assert_int_equal(kh_p11_sign_challenge(key, msg, len, &sig, &n, &err), 0);
	a->code = KH_OK;
	a->stage = KH_FWD_STAGE_NONE;
	a->sig = sig;
	a->sig_len = n;
}

/* Answers: round trip, truncations, inconsistencies. */
static void
t_answer_malformed(void **state)
{
	EVP_PKEY *key;
	X509 *cert = fake_cert_new(&key, "CN", "alice", NULL);
	unsigned char challenge[KH_CHALLENGE_LEN] = { 1, 2, 3 };
	struct kh_fwd_answer a, got;
	struct kh_fwd_buf b = { 0 };
	const unsigned char *p;
	kh_error err = { 0 };
	size_t len;

	(void)state;
	sign(key, challenge, sizeof(challenge), &a);
	assert_int_equal(kh_fwd_encode_answer(&b, &a), 0);
	p = payload(&b, &len);
	assert_int_equal(kh_fwd_parse_answer(p, len, &got, &err), 0);
	assert_int_equal(got.sig_len, a.sig_len);
	assert_int_equal(kh_fwd_verify_challenge(cert, challenge, sizeof(challenge), &got, &err), 0);
	kh_fwd_answer_clear(&got);
	for (size_t n = 0; n < len; n++)
		if (kh_fwd_parse_answer(p, n, &got, &err) == 0)
			fail_msg("an answer cut to %zu of %zu bytes was accepted", n, len);
	kh_fwd_buf_clear(&b);

	/* success without a signature; a failure with one; a stage out of range */
	{
		struct kh_fwd_answer bad = a;

		bad.sig_len = 0;
		assert_int_equal(kh_fwd_encode_answer(&b, &bad), 0);
		p = payload(&b, &len);
		assert_int_equal(kh_fwd_parse_answer(p, len, &got, &err), -1);
		kh_fwd_buf_clear(&b);
		bad = a;
		bad.code = KH_ERR_AUTH;
		bad.stage = KH_FWD_STAGE_LOGIN;
		assert_int_equal(kh_fwd_encode_answer(&b, &bad), 0);
		p = payload(&b, &len);
		assert_int_equal(kh_fwd_parse_answer(p, len, &got, &err), -1);
		kh_fwd_buf_clear(&b);
		bad.sig_len = 0;
		bad.stage = 9;
		assert_int_equal(kh_fwd_encode_answer(&b, &bad), 0);
		p = payload(&b, &len);
		assert_int_equal(kh_fwd_parse_answer(p, len, &got, &err), -1);
		assert_non_null(strstr(err.msg, "stage"));
		kh_fwd_buf_clear(&b);
		/* a wrong PIN, with the PIN state after it: fine */
		bad.stage = KH_FWD_STAGE_LOGIN;
		bad.pin_flags = KH_P11_PIN_FINAL_TRY;
		assert_int_equal(kh_fwd_encode_answer(&b, &bad), 0);
		p = payload(&b, &len);
		assert_int_equal(kh_fwd_parse_answer(p, len, &got, &err), 0);
		assert_int_equal(got.code, KH_ERR_AUTH);
		assert_int_equal(got.pin_flags, KH_P11_PIN_FINAL_TRY);
		kh_fwd_answer_clear(&got);
		kh_fwd_buf_clear(&b);
		/* an unknown status or PIN flag */
		bad.code = 99;
		assert_int_equal(kh_fwd_encode_answer(&b, &bad), 0);
		p = payload(&b, &len);
		assert_int_equal(kh_fwd_parse_answer(p, len, &got, &err), -1);
		kh_fwd_buf_clear(&b);
		bad.code = KH_ERR_AUTH;
		bad.pin_flags = 0x100;
		assert_int_equal(kh_fwd_encode_answer(&b, &bad), 0);
		p = payload(&b, &len);
		assert_int_equal(kh_fwd_parse_answer(p, len, &got, &err), -1);
		kh_fwd_buf_clear(&b);
	}
	/* a signature over the cap cannot be sent, nor read */
	{
		struct kh_fwd_answer big = a;
		unsigned char f[64] = { 0 };

		big.sig_len = KH_FWD_SIG_MAX + 1;
		assert_int_equal(kh_fwd_encode_answer(&b, &big), -1);
		kh_fwd_buf_clear(&b);
		/* tag, status, stage, flags, then a signature field of MAX + 1 */
		f[3] = 4, memcpy(f + 4, "KHFA", 4);
		f[11] = 4, f[19] = 4, f[27] = 4;
		f[32] = 0, f[33] = 0, f[34] = (KH_FWD_SIG_MAX + 1) >> 8, f[35] = (KH_FWD_SIG_MAX + 1) & 0xff;
		assert_int_equal(kh_fwd_parse_answer(f, 36, &got, &err), -1);
		assert_non_null(strstr(err.msg, "signature over its limit"));
	}
	OPENSSL_free(a.sig);
	EVP_PKEY_free(key);
	X509_free(cert);
}

/* The signature must be over root's challenge, with the certificate's key. */
static void
t_signature_not_over_challenge(void **state)
{
	EVP_PKEY *key, *other;
	X509 *cert = fake_cert_new(&key, "CN", "alice", NULL);
	X509 *cert2 = fake_cert_new(&other, "CN", "alice", NULL);
	unsigned char challenge[KH_CHALLENGE_LEN], replay[KH_CHALLENGE_LEN];
	struct kh_fwd_answer a;
	kh_error err = { 0 };

	(void)state;
	memset(challenge, 0x11, sizeof(challenge));
	memset(replay, 0x22, sizeof(replay));
	/* over another challenge (a replayed answer) */
	sign(key, replay, sizeof(replay), &a);
	assert_int_equal(kh_fwd_verify_challenge(cert, challenge, sizeof(challenge), &a, &err), -1);
	assert_int_equal(err.code, KH_ERR_AUTH);
	OPENSSL_free(a.sig);
	/* over the challenge, by another key */
	sign(other, challenge, sizeof(challenge), &a);
	assert_int_equal(kh_fwd_verify_challenge(cert, challenge, sizeof(challenge), &a, &err), -1);
	assert_int_equal(err.code, KH_ERR_AUTH);
	/* ... which is that key's certificate's */
	assert_int_equal(kh_fwd_verify_challenge(cert2, challenge, sizeof(challenge), &a, &err), 0);
	/* a flipped bit */
	a.sig[a.sig_len / 2] ^= 1;
	assert_int_equal(kh_fwd_verify_challenge(cert2, challenge, sizeof(challenge), &a, &err), -1);
	OPENSSL_free(a.sig);
	/* the right one */
	sign(key, challenge, sizeof(challenge), &a);
	assert_int_equal(kh_fwd_verify_challenge(cert, challenge, sizeof(challenge), &a, &err), 0);
	/* a failure answer never verifies */
	a.code = KH_ERR_TOKEN;
	assert_int_equal(kh_fwd_verify_challenge(cert, challenge, sizeof(challenge), &a, &err), -1);
	OPENSSL_free(a.sig);
	EVP_PKEY_free(key);
	EVP_PKEY_free(other);
	X509_free(cert);
	X509_free(cert2);
}

/* The request: the PIN over the cap is not sent. */
static void
t_request_bounds(void **state)
{
	unsigned char challenge[KH_CHALLENGE_LEN] = { 0 };
	char pin[KH_P11_PIN_MAX + 2];
	struct kh_fwd_buf b = { 0 };

	(void)state;
	memset(pin, '1', sizeof(pin) - 1);
	pin[sizeof(pin) - 1] = '\0';
	assert_int_equal(kh_fwd_encode_request(&b, pin, challenge, sizeof(challenge)), -1);
	kh_fwd_buf_clear(&b);
	pin[KH_P11_PIN_MAX] = '\0';
	assert_int_equal(kh_fwd_encode_request(&b, pin, challenge, sizeof(challenge)), 0);
	kh_fwd_buf_clear(&b);
	assert_null(b.data);
}

/* The child's side: a request whose challenge is not the challenge's
 * length is refused, and says so (tests/fuzz/fuzz_forward_wire found it
 * refused without a reason). */
static void
t_request_short_challenge(void **state)
{
	unsigned char challenge[KH_CHALLENGE_LEN] = { 0 }, got[KH_CHALLENGE_LEN];
	char pin[KH_P11_PIN_MAX + 1];
	struct kh_fwd_buf b = { 0 };
	kh_error err = { 0 };
	size_t len;
	const unsigned char *p;

	(void)state;
	assert_int_equal(kh_fwd_encode_request(&b, "1234", challenge, sizeof(challenge) - 1), 0);
	p = payload(&b, &len);
	assert_int_equal(kh_fwd_parse_request(p, len, pin, got, &err), -1);
	assert_non_null(strstr(err.msg, "challenge"));
	kh_fwd_buf_clear(&b);
	assert_int_equal(kh_fwd_encode_request(&b, "1234", challenge, sizeof(challenge)), 0);
	p = payload(&b, &len);
	assert_int_equal(kh_fwd_parse_request(p, len, pin, got, &err), 0);
	assert_string_equal(pin, "1234");
	kh_fwd_buf_clear(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_hello_round_trip),
		cmocka_unit_test(t_hello_truncated),
		cmocka_unit_test(t_hello_malformed),
		cmocka_unit_test(t_hello_cert_not_der),
		cmocka_unit_test(t_answer_malformed),
		cmocka_unit_test(t_signature_not_over_challenge),
		cmocka_unit_test(t_request_bounds),
		cmocka_unit_test(t_request_short_challenge),
	};

	return cmocka_run_group_tests_name("the forwarded token's process, root's side", tests,
					   NULL, NULL);
}
