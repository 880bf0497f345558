/* libFuzzer target: the forwarded token's wire (pam/kh_pam_forward_wire.c),
 * what root reads from a process the user controls.  Each input is parsed
 * as a hello, an answer (root's side) and a request (the child's side);
 * the frame tags differ, so at most one accepts.  What is accepted prints
 * back to the input itself, byte for byte, but for the control
 * characters of text fields (each one '?'), and that printing parses and
 * prints the same again.  An accepted hello's certificate is parsed as
 * root does, and an answer's signature is checked with an EC and an RSA
 * certificate made at start. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/kh_challenge.h"
#include "lib/kh_pkcs11.h"
#include "pam/kh_pam_forward_child.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static X509 *ec_cert, *rsa_cert;

static void
fail(const char *what)
{
	fprintf(stderr, "fuzz_forward_wire: %s\n", what);
	abort();
}

/* A certificate holding a fresh key: only its public key is used. */
static X509 *
cert_with(EVP_PKEY *key)
{
	X509 *x = X509_new();

	if (key == NULL || x == NULL || X509_set_pubkey(x, key) != 1)
		abort();
	EVP_PKEY_free(key);
	return x;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	ec_cert = cert_with(EVP_EC_gen("P-256"));
	rsa_cert = cert_with(EVP_RSA_gen(2048));
	return 0;
}

static void
check_refusal(const kh_error *err)
{
	if (err->msg[0] == '\0' || strchr(err->msg, '\n') != NULL)
		fail("a refusal without a one-line reason");
}

/*
 * b holds one frame printed from what was parsed out of in[0, len): its
 * length prefix says len, and its payload is in but for each control
 * character of a text field, which reads '?' (raw: no exception).
 */
static void
check_printed(const struct kh_fwd_buf *b, const uint8_t *in, size_t len, bool raw)
{
	const unsigned char *p = b->data;

	if (b->len != len + 4 ||
	    ((size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3]) != len)
		fail("an accepted frame prints to another length");
	for (size_t i = 0; i < len; i++) {
		if (p[4 + i] == in[i])
			continue;
		if (raw || p[4 + i] != '?' || !(in[i] < 0x20 || in[i] == 0x7f))
			fail("an accepted frame prints otherwise");
	}
}

static void
check_same(const struct kh_fwd_buf *a, const struct kh_fwd_buf *b)
{
	if (a->len != b->len || memcmp(a->data, b->data, a->len) != 0)
		fail("a frame prints otherwise after a round trip");
}

static void
fuzz_hello(const uint8_t *data, size_t size)
{
	struct kh_fwd_hello h, again;
	struct kh_fwd_buf b = { 0 }, b2 = { 0 };
	kh_error err = { 0 };
	X509 *cert;

	if (kh_fwd_parse_hello(data, size, &h, &err) != 0) {
		check_refusal(&err);
		return;
	}
	if (h.label == NULL || h.serial == NULL || h.manufacturer == NULL || h.model == NULL ||
	    h.cert_label == NULL || h.id_len > KH_P11_ID_MAX || h.cert_len > KH_FWD_CERT_MAX ||
	    (h.code == KH_OK && h.cert_der == NULL))
		fail("a hello accepted with a member missing or over its cap");
	if (kh_fwd_encode_hello(&b, &h) != 0)
		fail("an accepted hello cannot be printed");
	check_printed(&b, data, size, false);
	if (kh_fwd_parse_hello(b.data + 4, b.len - 4, &again, &err) != 0)
		fail("a printed hello is refused");
	if (kh_fwd_encode_hello(&b2, &again) != 0)
		fail("a hello parsed from its printing cannot be printed");
	check_same(&b, &b2);
	if (h.cert_der != NULL) {
		cert = kh_fwd_hello_cert(&h, &err);
		if (cert == NULL)
			check_refusal(&err);
		X509_free(cert);
	}
	kh_fwd_buf_clear(&b);
	kh_fwd_buf_clear(&b2);
	kh_fwd_hello_clear(&again);
	kh_fwd_hello_clear(&h);
}

static void
verify_with(X509 *cert, const struct kh_fwd_answer *a)
{
	static const unsigned char challenge[KH_CHALLENGE_LEN] = { 0x5a };
	kh_error err = { 0 };

	/* No input signs root's challenge: never a success. */
	if (kh_fwd_verify_challenge(cert, challenge, sizeof(challenge), a, &err) == 0)
		fail("a signature nobody made verifies");
	check_refusal(&err);
}

static void
fuzz_answer(const uint8_t *data, size_t size)
{
	struct kh_fwd_answer a, again;
	struct kh_fwd_buf b = { 0 }, b2 = { 0 };
	kh_error err = { 0 };

	if (kh_fwd_parse_answer(data, size, &a, &err) != 0) {
		check_refusal(&err);
		return;
	}
	if (a.sig_len > KH_FWD_SIG_MAX || (a.code == KH_OK) != (a.sig != NULL))
		fail("an answer accepted with a signature over its cap or against its status");
	if (kh_fwd_encode_answer(&b, &a) != 0)
		fail("an accepted answer cannot be printed");
	check_printed(&b, data, size, false);
	if (kh_fwd_parse_answer(b.data + 4, b.len - 4, &again, &err) != 0)
		fail("a printed answer is refused");
	if (kh_fwd_encode_answer(&b2, &again) != 0)
		fail("an answer parsed from its printing cannot be printed");
	check_same(&b, &b2);
	verify_with(ec_cert, &a);
	verify_with(rsa_cert, &a);
	kh_fwd_buf_clear(&b);
	kh_fwd_buf_clear(&b2);
	kh_fwd_answer_clear(&again);
	kh_fwd_answer_clear(&a);
}

static void
fuzz_request(const uint8_t *data, size_t size)
{
	char pin[KH_P11_PIN_MAX + 1];
	unsigned char challenge[KH_CHALLENGE_LEN];
	struct kh_fwd_buf b = { 0 };
	kh_error err = { 0 };

	if (kh_fwd_parse_request(data, size, pin, challenge, &err) != 0) {
		check_refusal(&err);
		return;
	}
	if (strlen(pin) > KH_P11_PIN_MAX)
		fail("a PIN accepted over its cap");
	if (kh_fwd_encode_request(&b, pin, challenge, sizeof(challenge)) != 0)
		fail("an accepted request cannot be printed");
	check_printed(&b, data, size, true);
	kh_fwd_buf_clear(&b);
	explicit_bzero(pin, sizeof(pin));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_hello(data, size);
	fuzz_answer(data, size);
	fuzz_request(data, size);
	/* As root's reader leaves it after each frame: nothing queued. */
	ERR_clear_error();
	return 0;
}
