/*
 * kh_pam_user — the account PAM_USER names, by its canonical name.
 *
 * What was typed may differ from the account's name (case-insensitive or
 * qualified names with sssd or winbind), and the token label, the
 * certificate mapping, the kube user name and the record must not depend
 * on it.  The name is kept with the handle.
 */
#include "config.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "pam/kh_pam.h"

/* Largest passwd entry looked up (bytes). */
#define KH_PAM_PASSWD_BUF_MAX (1u << 20)

static void
account_cleanup(pam_handle_t *pamh, void *data, int error_status)
{
	(void)pamh;
	(void)error_status;
	free(data);
}

/* getpwnam_r with a buffer that grows on ERANGE (directory entries can be
 * large), up to KH_PAM_PASSWD_BUF_MAX: getpwnam_r's answer.  *buf is NULL
 * afterwards only when memory ran out. */
static int
lookup_account(const char *name, struct passwd *pw, struct passwd **res,
	       char **buf, size_t *size)
{
	int rc;

	for (;;) {
		char *nb = realloc(*buf, *size);

		if (nb == NULL) {
			free(*buf);
			*buf = NULL;
			return ENOMEM;
		}
		*buf = nb;
		rc = getpwnam_r(name, pw, *buf, *size, res);
		if (rc != ERANGE || *size >= KH_PAM_PASSWD_BUF_MAX)
			return rc;
		*size *= 2;
	}
}

int
kh_pam_get_user(pam_handle_t *pamh, const char **user, uid_t *uid, gid_t *gid)
{
	struct passwd pw, *res = NULL;
	const char *typed = NULL;
	size_t size = 4096;
	char *buf = NULL, *name;
	int rc = pam_get_user(pamh, &typed, NULL);

	if (rc != PAM_SUCCESS || typed == NULL || *typed == '\0') {
		pam_syslog(pamh, LOG_ERR, "cannot determine the user name");
		return rc == PAM_SUCCESS ? PAM_USER_UNKNOWN : rc;
	}
	rc = lookup_account(typed, &pw, &res, &buf, &size);
	if (buf == NULL)
		return PAM_BUF_ERR;
	if (rc != 0 || res == NULL) {
		free(buf);
		pam_syslog(pamh, LOG_NOTICE, "user '%s': no such user", typed);
		return PAM_USER_UNKNOWN;
	}
	*uid = pw.pw_uid;
	*gid = pw.pw_gid;
	name = strdup(pw.pw_name);
	explicit_bzero(buf, size);
	free(buf);
	if (name == NULL)
		return PAM_BUF_ERR;
	if (pam_set_data(pamh, KH_PAM_DATA_ACCOUNT, name, account_cleanup) != PAM_SUCCESS) {
		free(name);
		return PAM_BUF_ERR;
	}
	*user = name;
	return PAM_SUCCESS;
}
