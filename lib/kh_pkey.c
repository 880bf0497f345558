#include "config.h"

#include <string.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/kh_pkey.h"

/* The decoder's name for a PKCS#8 algorithm; NULL lets it try them all. */
static const char *
pkcs8_key_type(const unsigned char *der, long len)
{
	const unsigned char *p = der;
	PKCS8_PRIV_KEY_INFO *p8 = d2i_PKCS8_PRIV_KEY_INFO(NULL, &p, len);
	const ASN1_OBJECT *alg = NULL;
	const char *type = NULL;

	if (p8 != NULL && PKCS8_pkey_get0(&alg, NULL, NULL, NULL, p8) == 1) {
		switch (OBJ_obj2nid(alg)) {
		case NID_X9_62_id_ecPublicKey: type = "EC"; break;
		case NID_rsaEncryption:        type = "RSA"; break;
		case NID_rsassaPss:            type = "RSA-PSS"; break;
		case NID_ED25519:              type = "ED25519"; break;
		}
	}
	PKCS8_PRIV_KEY_INFO_free(p8);   /* cleanses the key octets */
	return type;
}

EVP_PKEY *
kh_pkey_from_pkcs8_pem(const char *pem, kh_error *err)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	char *name = NULL, *header = NULL;
	unsigned char *der = NULL;
	const unsigned char *p;
	OSSL_DECODER_CTX *dctx = NULL;
	EVP_PKEY *pkey = NULL;
	size_t left;
	long len = 0;

	if (b == NULL || PEM_read_bio(b, &name, &header, &der, &len) != 1) {
		kh_fail_ssl(err, KH_ERR_REFUSED, "the cached session key is not PEM");
		goto out;
	}
	if (strcmp(name, PEM_STRING_PKCS8INF) != 0 || header[0] != '\0' || len <= 0) {
		kh_fail(err, KH_ERR_REFUSED, "the cached session key is not an unencrypted "
			"PKCS#8 private key");
		goto out;
	}
	dctx = OSSL_DECODER_CTX_new_for_pkey(&pkey, "DER", "PrivateKeyInfo",
					     pkcs8_key_type(der, len), EVP_PKEY_KEYPAIR,
					     NULL, NULL);
	p = der;
	left = (size_t)len;
	if (dctx == NULL || OSSL_DECODER_from_data(dctx, &p, &left) != 1 || pkey == NULL) {
		EVP_PKEY_free(pkey);
		pkey = NULL;
		kh_fail_ssl(err, KH_ERR_REFUSED, "the cached session key cannot be read");
	}
out:
	OSSL_DECODER_CTX_free(dctx);
	OPENSSL_clear_free(der, len > 0 ? (size_t)len : 0);
	OPENSSL_free(name);
	OPENSSL_free(header);
	BIO_free(b);
	return pkey;
}
