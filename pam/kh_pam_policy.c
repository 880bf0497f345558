/*
 * kh_pam_policy — the policy, read fresh for every login: an admin's
 * change takes effect at the next login, and the module keeps no state
 * between handles.  Only a root-owned file is trusted (kh_policy_load).
 *
 * One login, one policy: auth reads and checks it, and the session step
 * of the same login in the same handle uses what auth read
 * (kh_pam_policy_keep, kh_pam_take) instead of reading and checking it again a
 * moment later (issue #24: 0.2 ms a read).  A session step without auth in
 * its handle (sshd's, a count-only login) reads it afresh.
 */
#include "config.h"

#include <syslog.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "pam/kh_pam.h"

struct kh_policy *
kh_pam_load_policy(pam_handle_t *pamh, const struct kh_pam_opts *opts)
{
	struct kh_policy_load_opts lo = { .trusted_uid = 0 };
	kh_error err = { 0 };
	struct kh_policy *p = kh_policy_load(opts->config, &lo, &err);

	if (p == NULL)
		pam_syslog(pamh, LOG_ERR, "policy: %s", err.msg);
	return p;
}

static void
release_policy(void *policy)
{
	kh_policy_free(policy);
}

void
kh_pam_policy_keep(pam_handle_t *pamh, struct kh_policy **policy)
{
	if (*policy != NULL &&
	    kh_pam_keep(pamh, KH_PAM_DATA_POLICY, *policy, release_policy) == 0)
		*policy = NULL;
}
