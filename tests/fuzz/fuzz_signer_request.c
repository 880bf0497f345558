/* libFuzzer target: the external signer's request argument
 * (kh_signer_request_parse), then kh_sign_digest with fixed software keys
 * for every parsed SignRequest. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "lib/kh_signer_proto.h"
#include "lib/kh_sign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static EVP_PKEY *ec_key, *rsa_key;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	ec_key = EVP_EC_gen("P-256");
	rsa_key = EVP_RSA_gen(2048);
	if (ec_key == NULL || rsa_key == NULL)
		abort();
	return 0;
}

static void
sign_with(EVP_PKEY *key, const struct kh_signer_request *req)
{
	unsigned char *sig = NULL;
	size_t sig_len = 0;
	kh_error err;

	if (kh_sign_digest(key, &req->opts, req->digest, req->digest_len,
			   &sig, &sig_len, &err) == 0) {
		if (sig == NULL || sig_len == 0)
			__builtin_trap();
		free(sig);
	} else if (err.msg[0] == '\0') {
		__builtin_trap();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kh_signer_request req;
	kh_error err;

	memset(&req, 0, sizeof(req));
	if (kh_signer_request_parse((const char *)data, size, &req, &err) == 0) {
		if (req.kind == KH_SIGNER_SIGN) {
			if (req.digest_len > KH_DIGEST_MAX)
				__builtin_trap();
			sign_with(ec_key, &req);
			sign_with(rsa_key, &req);
		}
	} else if (err.msg[0] == '\0' || strchr(err.msg, '\n') != NULL) {
		__builtin_trap();
	}
	kh_signer_request_free(&req);
	return 0;
}
