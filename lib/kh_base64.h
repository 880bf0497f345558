/*
 * kh_base64 — standard padded base64 (Go's base64.StdEncoding), on
 * OpenSSL's EVP_EncodeBlock / EVP_DecodeBlock, with the strictness the
 * protocols need on top.
 *
 * Return convention: 0 on success, -1 on failure with err set.
 */
#ifndef KH_BASE64_H
#define KH_BASE64_H

#include <stddef.h>

#include "lib/kh_error.h"

/* Standard base64 with padding (Go's base64.StdEncoding); *out malloc'd, NUL-terminated. */
int kh_base64_encode(const unsigned char *in, size_t len, char **out,
                     size_t *out_len, kh_error *err);

/*
 * Strict decode of standard padded base64: no whitespace, no characters
 * outside the alphabet, padding only at the end, length a multiple of 4, and
 * canonical (unused trailing bits zero). Decodes at most `max` bytes: longer
 * input fails without decoding. *out malloc'd (free with free(); wipe first
 * if the data is secret).
 */
int kh_base64_decode(const char *in, size_t len, size_t max,
                     unsigned char **out, size_t *out_len, kh_error *err);

#endif
