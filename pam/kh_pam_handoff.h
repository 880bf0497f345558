/*
 * kh_pam_handoff — carry a successful authentication to open_session when
 * the two do not run in one process.
 *
 * OpenSSH authenticates keyboard-interactive logins in a forked child of
 * its privileged monitor and sends back only the PAM environment and the
 * account status; open_session then runs in the monitor, where pam_set_data
 * from auth is gone.  So auth also writes its non-secret result (user, uid,
 * token, certificate, identity, groups) to a root-only, single-use stash
 * KH_RUNDIR/handoff/<handle>, and puts the random handle in the PAM
 * environment (PAM_KUBEHSM_HANDOFF), the one channel every login program
 * carries from auth to session — pam-krb5's PAM_KRB5CCNAME pattern.
 * open_session consumes the stash and removes the variable before the
 * session's environment reaches the user's shell.  pam_set_data stays the
 * fast path when both steps share a process.
 *
 * The stash never holds the PIN or a key.  Only with session.cache_pin
 * (signing on the user's token needs the PIN in the session) does the PIN
 * cross, in a kernel key of root's own (never on disk) with the same short
 * lifetime, and only when the authenticating process runs as real root
 * (sshd's child); su and sudo authenticate in the session's own process.
 */
#ifndef KH_PAM_HANDOFF_H
#define KH_PAM_HANDOFF_H

#include <security/pam_modules.h>

#include "pam/kh_pam_util.h"

#define KH_HANDOFF_ENV "PAM_KUBEHSM_HANDOFF"
/* Longest time between authentication and session (seconds): an abandoned
 * stash is gone after this. */
#define KH_HANDOFF_TTL 300

/* Stash l for this handle's session step.  PAM_SUCCESS, or a PAM error
 * (logged) — authentication itself has succeeded either way. */
int kh_pam_handoff_put(pam_handle_t *pamh, const struct kh_pam_login *l);

/*
 * Consume the stash named in the PAM environment, if any, and remove the
 * variable.  1 with *out (free with kh_pam_login_free), 0 when there is
 * none, -1 when there was one that cannot be used (logged).
 */
int kh_pam_handoff_take(pam_handle_t *pamh, struct kh_pam_login **out);

#endif
