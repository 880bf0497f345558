/*
 * kh_p11_raw_key — a private key on a token as an EVP_PKEY whose private
 * operation is C_Sign through the raw layer (kh_p11_raw.h), so that
 * OpenSSL's signing code (X509_sign, EVP_DigestSign, EVP_PKEY_sign) uses
 * a key kubehsm found by an exact C_FindObjects.  ECDSA: CKM_ECDSA on the
 * digest, the raw r||s made DER by OpenSSL (ECDSA_SIG); RSA: OpenSSL pads
 * (PKCS#1 v1.5 DigestInfo, or PSS) and the token signs with CKM_RSA_PKCS,
 * or CKM_RSA_X_509 for a PSS block — what libp11 did for us before.
 *
 * OpenSSL 3 offers two ways to put a key's private operation elsewhere: a
 * provider, or the RSA_METHOD / EC_KEY_METHOD that OpenSSL 3 deprecates
 * but keeps, and which libp11 itself uses.  Debian 12 ships no PKCS#11
 * provider, and one of our own would be a keymgmt and a signature
 * implementation for each key type: far more code than the two methods.
 * So this file, and only this file, uses them.
 *
 * Internal to lib/ (kh_pkcs11.c).  Return convention: pointers, NULL on
 * failure with err set.
 */
#ifndef KH_P11_RAW_KEY_H
#define KH_P11_RAW_KEY_H

#include <openssl/evp.h>

#include "lib/kh_error.h"
#include "lib/kh_p11_raw.h"

/* The RSA and EC methods of one module handle, made on first use. */
struct kh_p11_raw_methods;

/* Free them, after every key made with them. NULL is fine. */
void kh_p11_raw_methods_free(struct kh_p11_raw_methods *m);

/*
 * The public half of private key obj, read from the token: CKA_MODULUS and
 * CKA_PUBLIC_EXPONENT of an RSA key; CKA_EC_PARAMS of an EC key and
 * CKA_EC_POINT, from the key itself or, where (as on SoftHSM) a private
 * key object carries none, from the public key object that m names with
 * the class CKO_PUBLIC_KEY.  A fixed number of calls, whatever the token
 * holds.
 */
EVP_PKEY *kh_p11_raw_public(struct kh_p11_raw *r, CK_OBJECT_HANDLE obj,
			    const struct kh_p11_raw_match *m, kh_error *err);

/*
 * A key that signs with obj on r's session (which must outlive the key)
 * and carries pub's public half (RSA or EC; pub is not consumed).  pin:
 * for a key with CKA_ALWAYS_AUTHENTICATE, the PIN its context-specific
 * logins send (copied, wiped when the key is freed); NULL otherwise.
 * *methods is the handle's (made here if NULL): free it after the key.
 */
EVP_PKEY *kh_p11_raw_key_new(struct kh_p11_raw_methods **methods, const struct kh_p11_raw *r,
			     CK_OBJECT_HANDLE obj, const EVP_PKEY *pub, const char *pin,
			     kh_error *err);

#endif
