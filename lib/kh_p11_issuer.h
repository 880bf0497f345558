/*
 * kh_p11_issuer — a private key named by a PKCS#11 URI (issuer.key: the
 * key that signs session certificates), on a module of its own or on one
 * already initialised for another token of the same module.
 *
 * Return convention: 0 on success, -1 with err set.
 */
#ifndef KH_P11_ISSUER_H
#define KH_P11_ISSUER_H

#include <openssl/evp.h>

#include "lib/kh_env.h"
#include "lib/kh_error.h"
#include "lib/kh_pkcs11.h"

/*
 * On the initialised module p, with no token logged in: select the one
 * token the URI names (two of that label is an error), log in with `pin`
 * and find the URI's private key (object= and/or id=).  pub: its public
 * half, from the issuer's certificate (issuer.cert_file), so that nothing
 * more is read from the HSM — a key of another type is refused here, and
 * one of the same type that is not pub's makes signatures that do not
 * verify with pub, which kh_x509_mint_cert checks; NULL reads it from the
 * token.  The key needs p: free the key first, then close p (the
 * caller's either way).
 */
int kh_p11_uri_key(struct kh_p11 *p, const char *uri, const char *pin, const EVP_PKEY *pub,
		   EVP_PKEY **key, kh_error *err);

/*
 * The same on a module of its own: load and initialise the module at
 * `module` (env set around its initialisation), then kh_p11_uri_key.  On
 * success *handle keeps the module session open for as long as the key is
 * used: free the key first, then kh_p11_close(*handle).
 */
int kh_p11_open_uri_key(const char *module, const struct kh_env *env, const char *uri,
			const char *pin, const EVP_PKEY *pub, struct kh_p11 **handle,
			EVP_PKEY **key, kh_error *err);

#endif
