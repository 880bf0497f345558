/*
 * kh_challenge — proof that a token holds the key of a certificate: 32
 * fresh random bytes signed with the key (SHA-256) and verified with the
 * certificate's public key.  Apart from kh_pkcs11 because the verifying half
 * needs no token at all: root verifies what the forwarded token's process
 * signed over root's own challenge.
 *
 * Return convention: 0 on success, -1 with err set.
 */
#ifndef KH_CHALLENGE_H
#define KH_CHALLENGE_H

#include <stddef.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/kh_error.h"

/*
 * Proof of possession: sign 32 fresh random bytes with `key` and verify the
 * signature with the public key of `cert`.  KH_ERR_AUTH if it does not
 * verify (the key on the token is not the certificate's).
 */
int kh_p11_prove_possession(EVP_PKEY *key, X509 *cert, kh_error *err);

/* Its two halves, for a key root does not hold itself (the forwarded
 * token's process, pam/kh_pam_forward_child.c, signs; root verifies over its own
 * challenge).  Sign `challenge` with SHA-256 and key: *sig is freed with
 * OPENSSL_free. */
#define KH_CHALLENGE_LEN 32
int kh_p11_sign_challenge(EVP_PKEY *key, const unsigned char *challenge, size_t len,
			  unsigned char **sig, size_t *siglen, kh_error *err);

/* Verify sig over challenge with the public key of cert (SHA-256, as
 * kh_p11_sign_challenge signs).  KH_ERR_AUTH when it does not verify. */
int kh_p11_verify_challenge(X509 *cert, const unsigned char *challenge, size_t len,
			    const unsigned char *sig, size_t siglen, kh_error *err);

#endif
