/*
 * kh_challenge — a certificate's key proven present by a signature over a
 * fresh challenge (see kh_challenge.h).
 */
#include "config.h"

#include <openssl/err.h>
#include <openssl/rand.h>

#include "lib/kh_challenge.h"
#include "lib/kh_pkcs11.h"

int
kh_p11_sign_challenge(EVP_PKEY *key, const unsigned char *challenge, size_t len,
		      unsigned char **sig, size_t *siglen, kh_error *err)
{
	EVP_MD_CTX *md = NULL;
	unsigned char *out = NULL;
	size_t n = 0;
	int rc = -1;

	*sig = NULL;
	*siglen = 0;
	if (key == NULL || challenge == NULL || len == 0)
		return kh_fail(err, KH_ERR_INTERNAL, "nothing to sign the challenge with");
	ERR_clear_error();
	md = EVP_MD_CTX_new();
	if (md == NULL || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(md, NULL, &n, challenge, len) != 1) {
		kh_fail_ssl(err, KH_ERR_TOKEN, "the token cannot sign");
		goto out;
	}
	out = OPENSSL_malloc(n);
	if (out == NULL || EVP_DigestSign(md, out, &n, challenge, len) != 1) {
		if (kh_p11_last_error_token_gone()) {
			ERR_clear_error();
			kh_fail(err, KH_ERR_NOTFOUND, "the token was removed while signing");
		} else {
			kh_fail_ssl(err, KH_ERR_TOKEN, "the token failed to sign the challenge");
		}
		goto out;
	}
	*sig = out;
	*siglen = n;
	out = NULL;
	rc = 0;
out:
	EVP_MD_CTX_free(md);
	OPENSSL_free(out);
	return rc;
}

int
kh_p11_verify_challenge(X509 *cert, const unsigned char *challenge, size_t len,
			const unsigned char *sig, size_t siglen, kh_error *err)
{
	EVP_MD_CTX *md = NULL;
	EVP_PKEY *pub;
	int rc = -1;

	if (cert == NULL || challenge == NULL || len == 0)
		return kh_fail(err, KH_ERR_INTERNAL, "proof of possession needs a certificate "
			       "and a challenge");
	pub = X509_get0_pubkey(cert);
	if (pub == NULL)
		return kh_fail_ssl(err, KH_ERR_REFUSED, "the certificate's public key cannot be read");
	ERR_clear_error();
	md = EVP_MD_CTX_new();
	if (md == NULL || EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pub) != 1) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot set up signature verification");
		goto out;
	}
	if (sig == NULL || siglen == 0 ||
	    EVP_DigestVerify(md, sig, siglen, challenge, len) != 1) {
		kh_fail(err, KH_ERR_AUTH,
			"proof of possession failed: the token key does not match the certificate");
		ERR_clear_error();
		goto out;
	}
	rc = 0;
out:
	EVP_MD_CTX_free(md);
	return rc;
}

int
kh_p11_prove_possession(EVP_PKEY *key, X509 *cert, kh_error *err)
{
	unsigned char challenge[KH_CHALLENGE_LEN];
	unsigned char *sig = NULL;
	size_t siglen = 0;
	int rc;

	if (key == NULL || cert == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "proof of possession needs a key and a certificate");
	if (X509_get0_pubkey(cert) == NULL)
		return kh_fail_ssl(err, KH_ERR_REFUSED, "the certificate's public key cannot be read");
	if (RAND_bytes(challenge, sizeof(challenge)) != 1)
		return kh_fail_ssl(err, KH_ERR_INTERNAL, "no random bytes for the challenge");
	if (kh_p11_sign_challenge(key, challenge, sizeof(challenge), &sig, &siglen, err) != 0)
		return -1;
	rc = kh_p11_verify_challenge(cert, challenge, sizeof(challenge), sig, siglen, err);
	OPENSSL_free(sig);
	return rc;
}
