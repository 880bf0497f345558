/*
 * kh_pkey — load the session private key from its PEM text.
 *
 * The session record holds the key as one unencrypted PKCS#8 "PRIVATE KEY"
 * block.  OpenSSL 3's generic PEM_read_bio_PrivateKey tries every decoder
 * of every key type and format to find the one that fits, which is most of
 * the cost of `kubehsm sign` (3 of its 18 million instructions).  Knowing
 * the format, this reads the PEM armour, takes the key type from the
 * PKCS#8 algorithm identifier, and asks for exactly that decoder.
 *
 * Return convention: pointers, NULL on failure with err set.
 */
#ifndef KH_PKEY_H
#define KH_PKEY_H

#include <openssl/evp.h>

#include "lib/kh_error.h"

/* The private key in `pem` (one "PRIVATE KEY" block), or NULL with err set
 * (KH_ERR_REFUSED: not such a block, or not a key OpenSSL can use). */
EVP_PKEY *kh_pkey_from_pkcs8_pem(const char *pem, kh_error *err);

#endif
