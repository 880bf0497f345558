/*
 * kh_pam_policy — the policy, read fresh for every PAM call: an admin's
 * change takes effect at the next login, and the module keeps no state
 * between handles.  Only a root-owned file is trusted (kh_policy_load).
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
