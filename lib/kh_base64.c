/*
 * kh_base64 — strict standard base64 on OpenSSL's block codec.
 */
#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lib/kh_base64.h"
#include "lib/kh_error.h"
#include "lib/kh_mem.h"

int
kh_base64_encode(const unsigned char *in, size_t len, char **out,
                 size_t *out_len, kh_error *err)
{
	size_t cap;
	unsigned char *buf;
	int n;

	*out = NULL;
	if (out_len != NULL)
		*out_len = 0;
	if (in == NULL && len > 0)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_base64_encode: missing input");
	/* EVP_EncodeBlock takes an int length. */
	if (len > (size_t)INT_MAX / 4 * 3 - 3)
		return kh_fail(err, KH_ERR_INPUT, "%zu bytes is too much to encode", len);
	cap = (len + 2) / 3 * 4 + 1;
	buf = malloc(cap);
	if (buf == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	n = EVP_EncodeBlock(buf, in != NULL ? in : (const unsigned char *)"", (int)len);
	if (n < 0 || (size_t)n != cap - 1) {
		free(buf);
		return kh_fail_ssl(err, KH_ERR_INTERNAL, "base64 encoding failed");
	}
	buf[n] = '\0';
	*out = (char *)buf;
	if (out_len != NULL)
		*out_len = (size_t)n;
	return 0;
}

static bool
kh_base64_alphabet(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '+' || c == '/';
}

/*
 * EVP_DecodeBlock is lenient (skips surrounding whitespace, tolerates
 * non-zero trailing bits) and reports padded lengths; check the shape first
 * so only what Go's StdEncoding produces gets through.
 */
static int
kh_base64_check_shape(const char *in, size_t len, size_t *pad, kh_error *err)
{
	size_t i;

	*pad = 0;
	if (len % 4 != 0)
		return kh_fail(err, KH_ERR_INPUT,
		               "invalid base64: length %zu is not a multiple of 4", len);
	if (len >= 1 && in[len - 1] == '=')
		*pad = (len >= 2 && in[len - 2] == '=') ? 2 : 1;
	for (i = 0; i < len - *pad; i++) {
		if (!kh_base64_alphabet((unsigned char)in[i]))
			return kh_fail(err, KH_ERR_INPUT,
			               "invalid base64: unexpected character at offset %zu", i);
	}
	return 0;
}

int
kh_base64_decode(const char *in, size_t len, size_t max,
                 unsigned char **out, size_t *out_len, kh_error *err)
{
	unsigned char *buf = NULL;
	char *again = NULL;
	size_t pad, n, cap, again_len;
	int got;

	*out = NULL;
	*out_len = 0;
	if (in == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_base64_decode: missing input");
	if (kh_base64_check_shape(in, len, &pad, err) < 0)
		return -1;
	cap = len / 4 * 3;
	n = cap - pad;
	if (n > max)
		return kh_fail(err, KH_ERR_INPUT,
		               "base64 value decodes to %zu bytes, more than %zu", n, max);
	if (len > INT_MAX)
		return kh_fail(err, KH_ERR_INPUT, "base64 value too long");
	buf = malloc(cap + 1);
	if (buf == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	got = EVP_DecodeBlock(buf, (const unsigned char *)in, (int)len);
	if (got < 0 || (size_t)got != cap) {
		kh_secure_free(buf, cap + 1);
		return kh_fail_ssl(err, KH_ERR_INPUT, "invalid base64");
	}
	/* Canonical form only: encoding the result must give back the input. */
	if (kh_base64_encode(buf, n, &again, &again_len, err) < 0) {
		kh_secure_free(buf, cap + 1);
		return -1;
	}
	if (again_len != len || memcmp(again, in, len) != 0) {
		kh_secure_free(again, again_len);
		kh_secure_free(buf, cap + 1);
		return kh_fail(err, KH_ERR_INPUT,
		               "invalid base64: non-canonical encoding (stray bits in the last group)");
	}
	kh_secure_free(again, again_len);
	*out = buf;
	*out_len = n;
	return 0;
}
