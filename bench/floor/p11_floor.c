/*
 * p11_floor — the floor for signing on a token: libp11 loads the PKCS#11
 * module, finds the token by label, logs in, signs one SHA-256 digest with
 * the key labelled KEYLABEL and writes the base64 signature.  Benchmark
 * program only.
 *
 *   p11_floor MODULE TOKEN-LABEL PIN KEYLABEL DIGEST-BASE64
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libp11.h>
#include <openssl/evp.h>

int
main(int argc, char **argv)
{
	unsigned char dg[64], sig[1024], b64[1400];
	size_t siglen = sizeof(sig);
	PKCS11_CTX *ctx;
	PKCS11_SLOT *slots, *slot = NULL;
	PKCS11_KEY *keys;
	unsigned int nslots, nkeys, i;
	EVP_PKEY *pk = NULL;
	EVP_PKEY_CTX *pctx;
	int dlen, n, rc = 1;

	if (argc != 6 || strlen(argv[5]) > 88)
		return 2;
	dlen = EVP_DecodeBlock(dg, (const unsigned char *)argv[5], (int)strlen(argv[5]));
	if (dlen < 32)
		return 2;
	ctx = PKCS11_CTX_new();
	if (PKCS11_CTX_load(ctx, argv[1]) != 0 ||
	    PKCS11_enumerate_slots(ctx, &slots, &nslots) != 0)
		return 1;
	for (i = 0; i < nslots; i++)
		if (slots[i].token != NULL && slots[i].token->initialized &&
		    strcmp(slots[i].token->label, argv[2]) == 0) {
			slot = &slots[i];
			break;
		}
	if (slot == NULL || PKCS11_open_session(slot, 0) != 0 ||
	    PKCS11_login(slot, 0, argv[3]) != 0 ||
	    PKCS11_enumerate_keys(slot->token, &keys, &nkeys) != 0)
		goto out;
	for (i = 0; i < nkeys; i++)
		if (keys[i].label != NULL && strcmp(keys[i].label, argv[4]) == 0) {
			pk = PKCS11_get_private_key(&keys[i]);
			break;
		}
	if (pk == NULL)
		goto out;
	pctx = EVP_PKEY_CTX_new(pk, NULL);
	if (pctx == NULL || EVP_PKEY_sign_init(pctx) <= 0 ||
	    EVP_PKEY_sign(pctx, sig, &siglen, dg, 32) <= 0)
		goto out;
	EVP_PKEY_CTX_free(pctx);
	n = EVP_EncodeBlock(b64, sig, (int)siglen);
	b64[n++] = '\n';
	rc = write(1, b64, (size_t)n) == n ? 0 : 1;
out:
	EVP_PKEY_free(pk);
	PKCS11_release_all_slots(ctx, slots, nslots);
	PKCS11_CTX_unload(ctx);
	PKCS11_CTX_free(ctx);
	return rc;
}
