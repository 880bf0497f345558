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
 *  - a module no issuer uses with the same environment;
 *  - the module of a process other than the one that initialised it: a host
 *    that forks between auth and open_session gets a fresh initialisation
 *    in the child, as PKCS#11 requires.
 *
 * Whatever open_session does, the kept module is finalised before it
 * returns (kh_pam_module_drop), so it never lasts into the user's session;
 * a handle that never opens one finalises it at pam_end.
 */
#include "config.h"

#include <stdlib.h>
#include <unistd.h>

#include <security/pam_modules.h>

#include "lib/kh_pkcs11.h"
#include "pam/kh_pam.h"

struct kept {
	struct kh_p11 *p11;     /* NULL once taken */
	pid_t pid;              /* the process that initialised it */
};

static void
kept_cleanup(pam_handle_t *pamh, void *data, int error_status)
{
	struct kept *k = data;

	(void)pamh;
	(void)error_status;
	if (k == NULL)
		return;
	/* Another process's module (a fork of the host) is not this one's to
	 * finalise: PKCS#11 forbids a child to call into it.  Its memory is
	 * the parent's copy and goes with the child. */
	if (k->p11 != NULL && k->pid == getpid())
		kh_p11_close(k->p11);
	free(k);
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
	struct kept *k;

	if (*p11 == NULL || kh_p11_token_removable(*p11) || !an_issuer_uses(policy, *p11))
		return;
	k = calloc(1, sizeof(*k));
	if (k == NULL)
		return;
	/* A token that cannot be logged out of is not kept logged in. */
	if (kh_p11_release_token(*p11) != 0) {
		free(k);
		return;
	}
	k->p11 = *p11;
	k->pid = getpid();
	if (pam_set_data(pamh, KH_PAM_DATA_MODULE, k, kept_cleanup) != PAM_SUCCESS) {
		free(k);
		return;         /* the caller closes the released module */
	}
	*p11 = NULL;
	kh_pam_debug(pamh, opts, "PKCS#11 module kept for the issuer step");
}

struct kh_p11 *
kh_pam_module_take(pam_handle_t *pamh, const char *module, const struct kh_env *env)
{
	const void *data = NULL;
	struct kept *k;
	struct kh_p11 *p11;

	if (pam_get_data(pamh, KH_PAM_DATA_MODULE, &data) != PAM_SUCCESS || data == NULL)
		return NULL;
	k = (struct kept *)data;
	if (k->p11 == NULL || k->pid != getpid() || !kh_p11_is_module(k->p11, module, env))
		return NULL;
	p11 = k->p11;
	k->p11 = NULL;
	/* Replacing the data runs kept_cleanup on k, which now holds nothing. */
	(void)pam_set_data(pamh, KH_PAM_DATA_MODULE, NULL, NULL);
	return p11;
}

void
kh_pam_module_drop(pam_handle_t *pamh)
{
	const void *data = NULL;

	if (pam_get_data(pamh, KH_PAM_DATA_MODULE, &data) == PAM_SUCCESS && data != NULL)
		(void)pam_set_data(pamh, KH_PAM_DATA_MODULE, NULL, NULL);
}
