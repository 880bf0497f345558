/*
 * kh_sign — sign a pre-hashed digest the way Go's crypto.Signer would.
 *
 * `kubehsm sign` answers the external-signer protocol on behalf of Go's
 * crypto/tls, which hands a crypto.Signer a digest plus crypto.SignerOpts.
 * This module turns those options (decoded by kh_signer_proto) into the matching
 * EVP_PKEY_sign call: RSA PKCS#1 v1.5, RSA-PSS (MGF1 with the same hash, Go's
 * salt-length rules) or ECDSA (DER ECDSA-Sig-Value, as Go's ecdsa returns).
 *
 * Only the generic EVP_PKEY_sign API is used, so software keys and
 * PKCS#11-backed keys from libp11 behave the same.
 *
 * Return convention: kh_sign_digest returns 0 on success and -1 on failure
 * with err set.  The kh_go_hash_* lookups cannot fail: an unsupported hash
 * gives 0, "unsupported" or NULL, as each says.
 */
#ifndef KH_SIGN_H
#define KH_SIGN_H

#include <stddef.h>

#include <openssl/evp.h>

#include "lib/kh_error.h"

/* Go's crypto.Hash values we sign with (crypto/crypto.go numbering). */
#define KH_GO_SHA256 5
#define KH_GO_SHA384 6
#define KH_GO_SHA512 7

/* Largest digest we accept (SHA-512). */
#define KH_DIGEST_MAX 64

/* Go's rsa.PSSOptions.SaltLength specials. */
#define KH_PSS_SALT_AUTO        0   /* rsa.PSSSaltLengthAuto: max when signing */
#define KH_PSS_SALT_EQUALS_HASH (-1) /* rsa.PSSSaltLengthEqualsHash */

enum kh_sign_scheme {
	/* signerOptsType "crypto.Hash": PKCS#1 v1.5 for RSA keys, ECDSA for EC keys. */
	KH_SIGN_HASH = 1,
	/* signerOptsType "*rsa.PSSOptions": RSASSA-PSS, RSA keys only. */
	KH_SIGN_PSS,
};

struct kh_sign_opts {
	enum kh_sign_scheme scheme;
	int hash;      /* Go crypto.Hash number (KH_GO_SHA*) */
	int salt_len;  /* PSS only: Go semantics, see KH_PSS_SALT_* ; > 0 explicit */
};

/* Digest size in bytes of a Go crypto.Hash we support; 0 if unsupported. */
size_t kh_go_hash_size(int go_hash);

/* Name for messages ("SHA-256"); "unsupported" when kh_go_hash_size() is 0. */
const char *kh_go_hash_name(int go_hash);

/* The OpenSSL digest for a supported Go crypto.Hash, NULL otherwise. */
const EVP_MD *kh_go_hash_md(int go_hash);

/*
 * Sign `digest` (already hashed by the caller, length must match opts->hash)
 * with `pkey` per `opts`. On success *sig is a malloc'd signature of *sig_len
 * bytes (free with free(); signatures are not secret).
 * Key/option mismatches (PSS with an EC key, a salt that cannot fit the key,
 * an unsupported key type) fail with KH_ERR_INPUT; signing failures with
 * KH_ERR_TOKEN (the key may live on a token).
 */
int kh_sign_digest(EVP_PKEY *pkey, const struct kh_sign_opts *opts,
                   const unsigned char *digest, size_t digest_len,
                   unsigned char **sig, size_t *sig_len, kh_error *err);

#endif
