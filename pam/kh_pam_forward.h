/*
 * kh_pam_forward — which PKCS#11 module holds the user's token: the
 * bastion's own (pkcs11.module), or, under the module option `forwarded`
 * (the kubehsm service that `kubehsm login` runs), the user's token
 * forwarded from their laptop with p11-kit over `ssh -R`.
 */
#ifndef KH_PAM_FORWARD_H
#define KH_PAM_FORWARD_H

#include <sys/types.h>

#include <security/pam_modules.h>

#include "lib/kh_error.h"
#include "pam/kh_pam_util.h"
#include "lib/kh_pkcs11.h"

/*
 * Open the module the user's token is behind.  With `forwarded` and
 * pkcs11.forward configured, a socket at the uid's forward path means
 * p11-kit's client module over it; no socket there means the bastion's
 * module, so the same service serves a token the bastion holds itself.
 * A path that is not a socket of the user's own is refused (KH_ERR_PERM).
 * *forwarded says which one it was.
 */
struct kh_p11 *kh_pam_open_token_module(pam_handle_t *pamh, const struct kh_pam_opts *opts,
					const struct kh_policy *policy, const char *user,
					uid_t uid, gid_t gid, int *forwarded, kh_error *err);

#endif
