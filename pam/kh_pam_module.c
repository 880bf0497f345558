/*
 * kh_pam_module — the user's PKCS#11 module, kept initialised from auth to
 * the issuer step of open_session when the issuer key lives in the same
 * module (see kh_pam.h).
 *
 * A login used to initialise that module twice: auth for the user's token,
 * open_session again for the issuer's.  On SoftHSM, a TPM or an HSM a
 * C_Initialize reads the whole token store, and libp11 then lists every
 * slot afresh: the issuer step cost 3.2 ms where one initialisation costs
 * 1.8 (issue #24).  What is kept is the module alone.  The user's token is
 * logged out and its sessions closed at the end of auth, exactly as when
 * the module was finalised; the PIN copy is wiped.
 *
 * Not kept, so finalised at the end of auth as before:
 *  - a token in a removable slot (a smart card reader).  Finalising is what
 *    resets a card with OpenSC's disconnect_action = reset (issue #22,
 *    point 3); a card must not stay powered and verified a moment longer
 *    than its own step needs;
 *  - a module no issuer uses with the same environment.
 * And a process other than the one that initialised it never calls into
 * it: a host that forks between auth and open_session gets a fresh
 * initialisation in the child, as PKCS#11 requires.
 *
 * Whatever open_session does, the kept module is finalised before it
 * returns (kh_pam_drop), so it never lasts into the user's session; a
 * handle that never opens one finalises it at pam_end.  The handle keeps
 * it as it keeps the policy (kh_pam_keep, kh_pam_state.c), which also
 * sees that no other process than this one calls into it.
 */
#include "config.h"

#include <security/pam_modules.h>

#include "lib/kh_pkcs11.h"
#include "pam/kh_pam.h"

static void
release_module(void *p11)
{
	kh_p11_close(p11);
}

/* Does an issuer of the policy use the module p is, with the same env? */
static bool
an_issuer_uses(const struct kh_policy *policy, const struct kh_p11 *p11)
{
	for (size_t i = 0; i < policy->nissuers; i++)
		if (kh_p11_is_module(p11, policy->issuers[i].module, &policy->issuers[i].env))
			return true;
	return false;
}

void
kh_pam_module_keep(pam_handle_t *pamh, const struct kh_pam_opts *opts,
		   const struct kh_policy *policy, struct kh_p11 **p11)
{
	if (*p11 == NULL || kh_p11_token_removable(*p11) || !an_issuer_uses(policy, *p11))
		return;
	/* A token that cannot be logged out of is not kept logged in; a module
	 * not kept is the caller's to close, released or not. */
	if (kh_p11_release_token(*p11) != 0 ||
	    kh_pam_keep(pamh, KH_PAM_DATA_MODULE, *p11, release_module) != 0)
		return;
	*p11 = NULL;
	kh_pam_debug(pamh, opts, "PKCS#11 module kept for the issuer step");
}

struct kh_p11 *
kh_pam_module_take(pam_handle_t *pamh, const char *module, const struct kh_env *env)
{
	if (!kh_p11_is_module(kh_pam_kept(pamh, KH_PAM_DATA_MODULE), module, env))
		return NULL;
	return kh_pam_take(pamh, KH_PAM_DATA_MODULE);
}
