/*
 * kh_p11_issuer — the key a PKCS#11 URI names (see kh_p11_issuer.h).
 */
#include "config.h"

#include <string.h>

#include "lib/kh_p11_issuer.h"
#include "lib/kh_p11_uri.h"
#include "lib/kh_pkcs11.h"

/* The one initialised token labelled u->token, which must match the
 * URI's other token attributes too. */
static int
kh_p11_token_for_uri(struct kh_p11 *p, const struct kh_p11_uri *u, const char *uri,
		     kh_error *err)
{
	struct kh_p11_token *t = NULL;
	size_t n = 0, i, hits = 0, found = 0;
	const char *bad;
	int rc = -1;

	if (kh_p11_list_tokens(p, &t, &n, err) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (t[i].initialized && strcmp(t[i].label, u->token) == 0) {
			found = i;
			hits++;
		}
	}
	if (hits == 0) {
		kh_fail(err, KH_ERR_NOTFOUND, "no token labelled '%s' is present", u->token);
	} else if (hits > 1) {
		kh_fail(err, KH_ERR_REFUSED, "%zu tokens are labelled '%s'; remove all but one",
			hits, u->token);
	} else if (u->serial != NULL && strcmp(u->serial, t[found].serial) != 0) {
		kh_fail(err, KH_ERR_NOTFOUND, "token '%s' has serial %s, not %s as %s says",
			u->token, t[found].serial, u->serial, uri);
	} else if ((bad = kh_p11_uri_mismatch(u, &t[found])) != NULL) {
		kh_fail(err, KH_ERR_NOTFOUND, "token '%s' does not have the %s %s says",
			u->token, bad, uri);
	} else {
		rc = kh_p11_use_token(p, &t[found], err);
	}
	kh_p11_tokens_free(t, n);
	return rc;
}

int
kh_p11_uri_key(struct kh_p11 *p, const char *uri, const char *pin, const EVP_PKEY *pub,
	       EVP_PKEY **key, kh_error *err)
{
	struct kh_p11_uri u;
	int rc = -1;

	*key = NULL;
	if (kh_p11_uri_parse(uri, &u, err) != 0)
		return -1;
	if (kh_p11_token_for_uri(p, &u, uri, err) == 0 && kh_p11_login(p, pin, err) == 0)
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
