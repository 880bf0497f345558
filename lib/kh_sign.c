#include "config.h"

#include <stdlib.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/rsa.h>

#include "lib/kh_sign.h"

size_t
kh_go_hash_size(int go_hash)
{
	switch (go_hash) {
	case KH_GO_SHA256: return 32;
	case KH_GO_SHA384: return 48;
	case KH_GO_SHA512: return 64;
	}
	return 0;
}

const char *
kh_go_hash_name(int go_hash)
{
	switch (go_hash) {
	case KH_GO_SHA256: return "SHA-256";
	case KH_GO_SHA384: return "SHA-384";
	case KH_GO_SHA512: return "SHA-512";
	}
	return "unsupported";
}

const EVP_MD *
kh_go_hash_md(int go_hash)
{
	switch (go_hash) {
	case KH_GO_SHA256: return EVP_sha256();
	case KH_GO_SHA384: return EVP_sha384();
	case KH_GO_SHA512: return EVP_sha512();
	}
	return NULL;
}

/*
 * Largest PSS salt the key can carry with this hash (RFC 8017 9.1.1:
 * emLen >= hLen + sLen + 2, emLen = ceil((modBits - 1) / 8)).
 */
static int
kh_pss_max_salt(EVP_PKEY *pkey, size_t hash_len)
{
	int bits = EVP_PKEY_get_bits(pkey);
	int em_len;

	if (bits <= 0)
		return -1;
	em_len = (bits - 1 + 7) / 8;
	return em_len - (int)hash_len - 2;
}

/*
 * Translate Go's rsa.PSSOptions.SaltLength to OpenSSL's: Go signs with the
 * largest salt for PSSSaltLengthAuto (0), the hash size for
 * PSSSaltLengthEqualsHash (-1), or exactly the given length.
 */
static int
kh_pss_salt(EVP_PKEY *pkey, const struct kh_sign_opts *opts, size_t hash_len,
            int *salt, kh_error *err)
{
	int max = kh_pss_max_salt(pkey, hash_len);

	if (max < 0)
		return kh_fail(err, KH_ERR_INPUT,
		               "the RSA key is too small for PSS with %s",
		               kh_go_hash_name(opts->hash));
	if (opts->salt_len == KH_PSS_SALT_AUTO) {
		*salt = RSA_PSS_SALTLEN_MAX;
	} else if (opts->salt_len == KH_PSS_SALT_EQUALS_HASH) {
		if ((int)hash_len > max)
			return kh_fail(err, KH_ERR_INPUT,
			               "a %zu-byte PSS salt does not fit this %d-bit RSA key",
			               hash_len, EVP_PKEY_get_bits(pkey));
		*salt = RSA_PSS_SALTLEN_DIGEST;
	} else if (opts->salt_len > 0) {
		if (opts->salt_len > max)
			return kh_fail(err, KH_ERR_INPUT,
			               "PSS salt length %d does not fit this %d-bit RSA key with %s (at most %d)",
			               opts->salt_len, EVP_PKEY_get_bits(pkey),
			               kh_go_hash_name(opts->hash), max);
		*salt = opts->salt_len;
	} else {
		return kh_fail(err, KH_ERR_INPUT,
		               "PSS salt length %d is invalid (0 = auto, -1 = hash size, or a positive length)",
		               opts->salt_len);
	}
	return 0;
}

/* Check that the key type can honour the requested scheme. */
static int
kh_check_key_scheme(EVP_PKEY *pkey, const struct kh_sign_opts *opts, kh_error *err)
{
	int id = EVP_PKEY_get_base_id(pkey);

	switch (opts->scheme) {
	case KH_SIGN_HASH:
		if (id == EVP_PKEY_RSA || id == EVP_PKEY_EC)
			return 0;
		if (id == EVP_PKEY_RSA_PSS)
			return kh_fail(err, KH_ERR_INPUT,
			               "the key is restricted to RSA-PSS but PKCS#1 v1.5 was requested");
		break;
	case KH_SIGN_PSS:
		if (id == EVP_PKEY_RSA || id == EVP_PKEY_RSA_PSS)
			return 0;
		if (id == EVP_PKEY_EC)
			return kh_fail(err, KH_ERR_INPUT,
			               "RSA-PSS options were sent for an EC key; the client and key disagree");
		break;
	default:
		return kh_fail(err, KH_ERR_INPUT, "unknown signature scheme %d",
		               (int)opts->scheme);
	}
	return kh_fail(err, KH_ERR_INPUT,
	               "unsupported key type %s (kubehsm signs with RSA and EC keys)",
	               OBJ_nid2sn(id) != NULL ? OBJ_nid2sn(id) : "unknown");
}

/* Set padding, digest, MGF1 and salt on an initialised signing context. */
static int
kh_setup_ctx(EVP_PKEY_CTX *ctx, EVP_PKEY *pkey, const struct kh_sign_opts *opts,
             const EVP_MD *md, kh_error *err)
{
	int salt = 0;

	if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC) {
		if (EVP_PKEY_CTX_set_signature_md(ctx, md) <= 0)
			return kh_fail_ssl(err, KH_ERR_TOKEN, "cannot set the ECDSA digest");
		return 0;
	}
	if (opts->scheme == KH_SIGN_HASH) {
		if (EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) <= 0 ||
		    EVP_PKEY_CTX_set_signature_md(ctx, md) <= 0)
			return kh_fail_ssl(err, KH_ERR_TOKEN,
			                   "cannot set up RSA PKCS#1 v1.5 signing");
		return 0;
	}
	if (kh_pss_salt(pkey, opts, EVP_MD_get_size(md), &salt, err) < 0)
		return -1;
	if (EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PSS_PADDING) <= 0 ||
	    EVP_PKEY_CTX_set_signature_md(ctx, md) <= 0 ||
	    EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, md) <= 0 ||
	    EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, salt) <= 0)
		return kh_fail_ssl(err, KH_ERR_TOKEN, "cannot set up RSA-PSS signing");
	return 0;
}

int
kh_sign_digest(EVP_PKEY *pkey, const struct kh_sign_opts *opts,
               const unsigned char *digest, size_t digest_len,
               unsigned char **sig, size_t *sig_len, kh_error *err)
{
	EVP_PKEY_CTX *ctx = NULL;
	const EVP_MD *md;
	unsigned char *buf = NULL;
	size_t len = 0;
	int rc = -1;

	if (pkey == NULL || opts == NULL || digest == NULL || sig == NULL || sig_len == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_sign_digest: missing argument");
	*sig = NULL;
	*sig_len = 0;
	md = kh_go_hash_md(opts->hash);
	if (md == NULL)
		return kh_fail(err, KH_ERR_UNSUPPORTED,
		               "unsupported hash %d (kubehsm signs SHA-256, SHA-384 and SHA-512)",
		               opts->hash);
	if (digest_len != kh_go_hash_size(opts->hash))
		return kh_fail(err, KH_ERR_INPUT, "the digest is %zu bytes but %s needs %zu",
		               digest_len, kh_go_hash_name(opts->hash),
		               kh_go_hash_size(opts->hash));
	if (kh_check_key_scheme(pkey, opts, err) < 0)
		return -1;

	/* EVP_PKEY_CTX_new (not _from_pkey) so engine-backed libp11 keys keep their engine. */
	ctx = EVP_PKEY_CTX_new(pkey, NULL);
	if (ctx == NULL) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot create a signing context");
		goto out;
	}
	if (EVP_PKEY_sign_init(ctx) <= 0) {
		kh_fail_ssl(err, KH_ERR_TOKEN, "the key cannot sign");
		goto out;
	}
	if (kh_setup_ctx(ctx, pkey, opts, md, err) < 0)
		goto out;
	if (EVP_PKEY_sign(ctx, NULL, &len, digest, digest_len) <= 0 || len == 0) {
		kh_fail_ssl(err, KH_ERR_TOKEN, "cannot size the signature");
		goto out;
	}
	buf = malloc(len);
	if (buf == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	if (EVP_PKEY_sign(ctx, buf, &len, digest, digest_len) <= 0) {
		kh_fail_ssl(err, KH_ERR_TOKEN, "signing failed");
		goto out;
	}
	*sig = buf;
	*sig_len = len;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	EVP_PKEY_CTX_free(ctx);
	return rc;
}
