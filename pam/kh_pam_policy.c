/*
 * kh_pam_policy — the policy, read fresh for every login: an admin's
 * change takes effect at the next login, and the module keeps no state
 * between handles.  Only a root-owned file is trusted (kh_policy_load).
 *
 * One login, one policy: auth reads and checks it, and the session step
 * of the same login in the same handle uses what auth read
 * (kh_pam_policy_keep, _take) instead of reading and checking it again a
 * moment later (issue #24: 0.2 ms a read).  A session step without auth in
 * its handle (sshd's, a count-only login) reads it afresh.
 */
#include "config.h"

#include <stdlib.h>
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

/* The kept policy; p is NULL once taken. */
struct kept_policy {
	struct kh_policy *p;
};

static void
policy_cleanup(pam_handle_t *pamh, void *data, int error_status)
{
	struct kept_policy *k = data;

	(void)pamh;
	(void)error_status;
	if (k == NULL)
		return;
	kh_policy_free(k->p);
	free(k);
}

void
kh_pam_policy_keep(pam_handle_t *pamh, struct kh_policy **policy)
{
	struct kept_policy *k;

	if (*policy == NULL || (k = malloc(sizeof(*k))) == NULL)
		return;
	k->p = *policy;
	if (pam_set_data(pamh, KH_PAM_DATA_POLICY, k, policy_cleanup) != PAM_SUCCESS) {
		free(k);
		return;
	}
	*policy = NULL;
}

struct kh_policy *
kh_pam_policy_take(pam_handle_t *pamh)
{
	const void *data = NULL;
	struct kept_policy *k;
	struct kh_policy *p;

	if (pam_get_data(pamh, KH_PAM_DATA_POLICY, &data) != PAM_SUCCESS || data == NULL)
		return NULL;
	k = (struct kept_policy *)data;
	p = k->p;
	k->p = NULL;
	/* Replacing the data runs policy_cleanup on k, which now holds nothing. */
	(void)pam_set_data(pamh, KH_PAM_DATA_POLICY, NULL, NULL);
	return p;
}
