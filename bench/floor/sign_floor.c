/*
 * sign_floor — the floor for an external-signer SignRequest: one process
 * start with libcrypto, load the session key (PEM) from a file, sign a
 * SHA-256 digest, write a SignResponse with the base64 signature.
 * Benchmark program only.
 *
 * It pays exactly the libcrypto start-up `kubehsm sign` pays, no more and
 * no less: the key is decoded the way lib/kh_pkey.c decodes it (PEM to DER,
 * then the provider decoder for a PKCS#8 PrivateKeyInfo of the key's own
 * type, not PEM_read_PrivateKey, which initialises the decoders of every
 * key type), and signed the way lib/kh_sign.c signs (EVP_PKEY_CTX_new,
 * sign_init, the digest, a size query, then the signature).  What
 * `kubehsm sign` costs beyond this is kubehsm's own: its front end, the
 * keyring, the record, the policy, the JSON.
 *
 *   sign_floor KEYFILE DIGEST-BASE64
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/decoder.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

static EVP_PKEY *
load_key(const char *path)
{
	char *name = NULL, *header = NULL;
	unsigned char *der = NULL;
	const unsigned char *p;
	const ASN1_OBJECT *alg = NULL;
	PKCS8_PRIV_KEY_INFO *p8;
	OSSL_DECODER_CTX *dctx;
	EVP_PKEY *pk = NULL;
	const char *type = NULL;
	long len = 0;
	size_t left;
	BIO *b = BIO_new_file(path, "r");

	if (b == NULL || PEM_read_bio(b, &name, &header, &der, &len) != 1 ||
	    strcmp(name, PEM_STRING_PKCS8INF) != 0)
		return NULL;
	p = der;
	p8 = d2i_PKCS8_PRIV_KEY_INFO(NULL, &p, len);
	if (p8 != NULL && PKCS8_pkey_get0(&alg, NULL, NULL, NULL, p8) == 1)
		type = OBJ_obj2nid(alg) == NID_X9_62_id_ecPublicKey ? "EC" :
		       OBJ_obj2nid(alg) == NID_rsaEncryption ? "RSA" : NULL;
	PKCS8_PRIV_KEY_INFO_free(p8);
	dctx = OSSL_DECODER_CTX_new_for_pkey(&pk, "DER", "PrivateKeyInfo", type,
					     EVP_PKEY_KEYPAIR, NULL, NULL);
	p = der;
	left = (size_t)len;
	if (dctx == NULL || OSSL_DECODER_from_data(dctx, &p, &left) != 1)
		pk = NULL;
	OSSL_DECODER_CTX_free(dctx);
	OPENSSL_clear_free(der, (size_t)len);
	OPENSSL_free(name);
	OPENSSL_free(header);
	BIO_free(b);
	return pk;
}

int
main(int argc, char **argv)
{
	unsigned char dg[64], sig[1024], b64[1400];
	char out[1600];
	size_t siglen = 0;
	EVP_PKEY_CTX *pctx;
	EVP_PKEY *pk;
	int dlen, n;

	if (argc != 3 || (pk = load_key(argv[1])) == NULL || strlen(argv[2]) > 88)
		return 2;
	dlen = EVP_DecodeBlock(dg, (const unsigned char *)argv[2], (int)strlen(argv[2]));
	if (dlen < 32)
		return 2;
	pctx = EVP_PKEY_CTX_new(pk, NULL);
	if (pctx == NULL || EVP_PKEY_sign_init(pctx) <= 0 ||
	    EVP_PKEY_CTX_set_signature_md(pctx, EVP_sha256()) <= 0 ||
	    EVP_PKEY_sign(pctx, NULL, &siglen, dg, 32) <= 0 || siglen > sizeof(sig) ||
	    EVP_PKEY_sign(pctx, sig, &siglen, dg, 32) <= 0)
		return 1;
	EVP_EncodeBlock(b64, sig, (int)siglen);
	n = snprintf(out, sizeof(out),
		"{\"apiVersion\":\"external-signer.authentication.k8s.io/v1alpha1\","
		"\"kind\":\"SignResponse\",\"signature\":\"%s\"}\n", b64);
	EVP_PKEY_CTX_free(pctx);
	EVP_PKEY_free(pk);
	return write(1, out, (size_t)n) == n ? 0 : 1;
}
