/* libFuzzer target: certificate identity mapping.  d2i_X509, then
 * kh_x509_map_user under every trust.map rule and kh_x509_subject_values
 * for O and OU. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509.h>

#include "conf/kh_policy.h"
#include "lib/kh_x509.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum kh_map_rule rules[] = { KH_MAP_CN, KH_MAP_UID, KH_MAP_EMAIL, KH_MAP_UPN };
	static const char *const attrs[] = { "O", "OU" };
	static const char *const domains[] = { "example.com", "corp.example" };
	const unsigned char *p = data;
	X509 *cert = d2i_X509(NULL, &p, (long)size);
	kh_error err;

	if (cert == NULL)
		return 0;
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
	X509_free(cert);
	return 0;
}
