/*
 * sign_floor — the physical floor for an external-signer SignRequest: load
 * the session key (PEM) from a file, sign a SHA-256 digest with OpenSSL EVP,
 * write a SignResponse with the base64 signature.  Benchmark program only.
 *
 *   sign_floor KEYFILE DIGEST-BASE64
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

int
main(int argc, char **argv)
{
	unsigned char dg[64], sig[1024], b64[1400];
	char out[1600];
	size_t siglen = sizeof(sig);
	EVP_PKEY_CTX *pctx;
	EVP_PKEY *pk;
	FILE *f;
	int dlen, n;

	if (argc != 3 || (f = fopen(argv[1], "re")) == NULL)
		return 2;
	pk = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (pk == NULL || strlen(argv[2]) > 88)
		return 2;
	dlen = EVP_DecodeBlock(dg, (const unsigned char *)argv[2], (int)strlen(argv[2]));
	if (dlen < 32)
		return 2;
	pctx = EVP_PKEY_CTX_new(pk, NULL);
	if (pctx == NULL || EVP_PKEY_sign_init(pctx) <= 0 ||
	    EVP_PKEY_CTX_set_signature_md(pctx, EVP_sha256()) <= 0 ||
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
