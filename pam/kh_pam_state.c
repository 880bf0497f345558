/*
 * kh_pam_state — what a successful authentication leaves in the PAM handle
 * for the session step of the same process (pam_set_data).  The handle
 * owns it: libpam's cleanup wipes every field at pam_end, whatever happened
 * in between.  Across processes, see kh_pam_handoff.c.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "lib/kh_mem.h"
#include "pam/kh_pam.h"

void
kh_pam_login_free(struct kh_pam_login *l)
{
	if (l == NULL)
		return;
	kh_secure_strfree(l->user);
	kh_secure_strfree(l->token_label);
	kh_secure_strfree(l->token_serial);
	kh_secure_strfree(l->token_uri);
	kh_secure_strfree(l->token_cert_pem);
	kh_secure_strfree(l->kube_user);
	kh_pam_groups_free(l->groups, l->ngroups);
	kh_secure_strfree(l->pin);
	explicit_bzero(l, sizeof(*l));
	free(l);
}

static void
login_cleanup(pam_handle_t *pamh, void *data, int error_status)
{
	(void)pamh;
	(void)error_status;
	kh_pam_login_free(data);
}

int
kh_pam_login_save(pam_handle_t *pamh, struct kh_pam_login *login)
{
	int rc = pam_set_data(pamh, KH_PAM_DATA_LOGIN, login, login_cleanup);

	if (rc != PAM_SUCCESS) {
		kh_pam_login_free(login);
		pam_syslog(pamh, LOG_ERR, "pam_set_data: %s", pam_strerror(pamh, rc));
	}
	return rc;
}

const struct kh_pam_login *
kh_pam_login_get(pam_handle_t *pamh)
{
	const void *data = NULL;

	if (pam_get_data(pamh, KH_PAM_DATA_LOGIN, &data) != PAM_SUCCESS)
		return NULL;
	return data;
}
