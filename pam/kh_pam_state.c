/*
 * kh_pam_state — what a successful authentication leaves in the PAM handle
 * for the session step of the same process (pam_set_data).  The handle
 * owns it: libpam's cleanup wipes every field at pam_end, whatever happened
 * in between.  Across processes, see kh_pam_handoff.c.
 *
 * Besides the login state, auth may leave objects the session step can use
 * instead of making them again (kh_pam_keep: the policy it read, the
 * PKCS#11 module it initialised).  Each is the handle's until taken, and
 * only the process that kept it uses or releases it: a host that forks
 * between auth and session leaves the parent's copy alone in the child.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

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

/* ---- objects kept for the session step ------------------------------------- */

struct kept {
	void *obj;                      /* NULL once taken */
	void (*release)(void *obj);
	pid_t pid;                      /* the process that kept it */
};

static void
kept_cleanup(pam_handle_t *pamh, void *data, int error_status)
{
	struct kept *k = data;

	(void)pamh;
	(void)error_status;
	if (k == NULL)
		return;
	/* Another process's object (a fork of the host) is not this one's to
	 * release: a PKCS#11 module must not be called from a child.  Its
	 * memory is the parent's copy and goes with the child. */
	if (k->obj != NULL && k->pid == getpid())
		k->release(k->obj);
	free(k);
}

int
kh_pam_keep(pam_handle_t *pamh, const char *name, void *obj, void (*release)(void *obj))
{
	struct kept *k = malloc(sizeof(*k));

	if (k == NULL)
		return -1;
	*k = (struct kept){ .obj = obj, .release = release, .pid = getpid() };
	if (pam_set_data(pamh, name, k, kept_cleanup) != PAM_SUCCESS) {
		free(k);
		return -1;
	}
	return 0;
}

void *
kh_pam_kept(pam_handle_t *pamh, const char *name)
{
	const void *data = NULL;
	const struct kept *k;

	if (pam_get_data(pamh, name, &data) != PAM_SUCCESS || data == NULL)
		return NULL;
	k = data;
	return k->pid == getpid() ? k->obj : NULL;
}

void *
kh_pam_take(pam_handle_t *pamh, const char *name)
{
	const void *data = NULL;
	struct kept *k;
	void *obj;

	if ((obj = kh_pam_kept(pamh, name)) == NULL ||
	    pam_get_data(pamh, name, &data) != PAM_SUCCESS)
		return NULL;
	k = (struct kept *)data;
	k->obj = NULL;
	/* Replacing the data runs kept_cleanup on k, which now holds nothing. */
	(void)pam_set_data(pamh, name, NULL, NULL);
	return obj;
}

void
kh_pam_drop(pam_handle_t *pamh, const char *name)
{
	const void *data = NULL;

	if (pam_get_data(pamh, name, &data) == PAM_SUCCESS && data != NULL)
		(void)pam_set_data(pamh, name, NULL, NULL);
}
