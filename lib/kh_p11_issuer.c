/*
 * kh_p11_issuer — the key a PKCS#11 URI names (see kh_p11_issuer.h).
 */
#include "config.h"

#include <string.h>

#include "lib/kh_p11_issuer.h"
#include "lib/kh_p11_uri.h"
#include "lib/kh_pkcs11.h"

int
kh_p11_uri_key(struct kh_p11 *p, const char *uri, const char *pin, const EVP_PKEY *pub,
	       EVP_PKEY **key, kh_error *err)
{
	struct kh_p11_uri u;
	int rc = -1;

	*key = NULL;
	if (kh_p11_uri_parse(uri, &u, err) != 0)
		return -1;
	if (kh_p11_use_uri_token(p, &u, uri, err) == 0 && kh_p11_login(p, pin, err) == 0)
		rc = kh_p11_find_key_match(p, u.object, u.id, u.id_len, pub, key, err);
	kh_p11_uri_clear(&u);
	return rc;
}

int
kh_p11_open_uri_key(const char *module, const struct kh_env *env, const char *uri,
		    const char *pin, const EVP_PKEY *pub, struct kh_p11 **handle, EVP_PKEY **key,
		    kh_error *err)
{
	struct kh_p11 *p;

	*handle = NULL;
	*key = NULL;
	p = kh_p11_open(module, env, err);
	if (p == NULL)
		return -1;
	if (kh_p11_uri_key(p, uri, pin, pub, key, err) != 0) {
		kh_p11_close(p);
		return -1;
	}
	*handle = p;
	return 0;
}
