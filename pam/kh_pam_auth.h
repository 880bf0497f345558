/* kh_pam_auth / kh_pam_session — the work behind pam_kubehsm's entry points. */
#ifndef KH_PAM_AUTH_H
#define KH_PAM_AUTH_H

#include <security/pam_modules.h>

#include "pam/kh_pam_util.h"

/* Unlock the user's token, validate and map its certificate, prove
 * possession; keep what the session step needs in the handle. */
int kh_pam_authenticate(pam_handle_t *pamh, const struct kh_pam_opts *opts);

/* polkit, mint the session certificate per issuer, seed the cache. */
int kh_pam_open_session(pam_handle_t *pamh, const struct kh_pam_opts *opts);

/* Login accounting down; revoke on the uid's last logout (policy). */
int kh_pam_close_session(pam_handle_t *pamh, const struct kh_pam_opts *opts);

#endif
