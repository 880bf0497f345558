/*
 * kh_pam_util — options, policy, conversation, logging and per-handle
 * state for pam_kubehsm.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "lib/kh_mem.h"
#include "lib/kh_x509.h"
#include "pam/kh_pam.h"

#define KH_PAM_MAX_UNIX_GROUPS 65536
#define KH_PAM_GROUP_BUF_MAX (1u << 20)

int
kh_pam_parse_opts(pam_handle_t *pamh, int argc, const char **argv,
		  struct kh_pam_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->config = KH_DEFAULT_CONFIG;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "use_first_pass") == 0)
			opts->use_first_pass = true;
		else if (strcmp(a, "try_first_pass") == 0)
			opts->try_first_pass = true;
		else if (strcmp(a, "debug") == 0)
			opts->debug = true;
		else if (strcmp(a, "no_cache") == 0)
			opts->no_cache = true;
		else if (strcmp(a, "join") == 0)
			opts->join = true;
		else if (strcmp(a, "forwarded") == 0)
			opts->forwarded = true;
		else if (strcmp(a, "authtok_is_pin") == 0)
			opts->authtok_is_pin = true;
		else if (strncmp(a, "config=", 7) == 0 && a[7] == '/')
			opts->config = a + 7;
		else {
			pam_syslog(pamh, LOG_ERR,
				   "unknown or malformed module option '%s' "
				   "(config= needs an absolute path)", a);
			return PAM_SERVICE_ERR;
		}
	}
	/* Another module's password tried as the PIN costs a token try when
	 * they differ: use_first_pass could only ever do that. */
	if (opts->use_first_pass && !opts->authtok_is_pin) {
		pam_syslog(pamh, LOG_ERR, "use_first_pass hands an earlier module's password "
			   "to the token as its PIN; add authtok_is_pin if the two are the same "
			   "secret, or drop use_first_pass to be asked for the PIN");
		return PAM_SERVICE_ERR;
	}
	return PAM_SUCCESS;
}

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
free_name(pam_handle_t *pamh, void *data, int error_status)
{
	(void)pamh;
	(void)error_status;
	free(data);
}

/*
 * The account PAM_USER names, by its canonical name: what was typed may
 * differ (case-insensitive or qualified names with sssd or winbind), and
 * the token label, the certificate mapping, the kube user name and the
 * record must not depend on it.  The name is kept with the handle.
 */
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
	for (;;) {
		char *nb = realloc(buf, size);

		if (nb == NULL) {
			free(buf);
			return PAM_BUF_ERR;
		}
		buf = nb;
		rc = getpwnam_r(typed, &pw, buf, size, &res);
		if (rc != ERANGE || size >= (1u << 20))
			break;
		size *= 2;
	}
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
	if (pam_set_data(pamh, KH_PAM_DATA_ACCOUNT, name, free_name) != PAM_SUCCESS) {
		free(name);
		return PAM_BUF_ERR;
	}
	*user = name;
	return PAM_SUCCESS;
}

void
kh_pam_log_fail(pam_handle_t *pamh, const char *user, const char *what,
		const kh_error *err)
{
	pam_syslog(pamh, LOG_NOTICE, "user '%s': %s: %s (%s)",
		   user ? user : "?", what, err->msg[0] ? err->msg : "failed",
		   kh_errcode_name(err->code));
}

void
kh_pam_debug(pam_handle_t *pamh, const struct kh_pam_opts *opts,
	     const char *fmt, ...)
{
	va_list ap;

	if (!opts->debug)
		return;
	va_start(ap, fmt);
	pam_vsyslog(pamh, LOG_DEBUG, fmt, ap);
	va_end(ap);
}

int
kh_pam_prompt_pin(pam_handle_t *pamh, const char *token_label, char **pin)
{
	char *resp = NULL;
	int rc;

	*pin = NULL;
	rc = pam_prompt(pamh, PAM_PROMPT_ECHO_OFF, &resp,
			"PIN for token '%s': ", token_label);
	if (rc != PAM_SUCCESS) {
		kh_secure_strfree(resp);
		return rc == PAM_CONV_AGAIN ? PAM_INCOMPLETE : PAM_CONV_ERR;
	}
	if (resp == NULL)
		return PAM_CONV_ERR;
	*pin = resp;
	return PAM_SUCCESS;
}

static void
strv_free(char **v, size_t n)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		kh_secure_strfree(v[i]);
	free(v);
}

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
	strv_free(l->groups, l->ngroups);
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

/* ---- kube groups -------------------------------------------------------- */

struct strv {
	char **v;
	size_t n;
};

static int
strv_add_unique(struct strv *s, const char *name, kh_error *err)
{
	char **nv;

	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], name) == 0)
			return 0;
	if (s->n >= 64)   /* KH_RECORD_MAX_GROUPS */
		return kh_fail(err, KH_ERR_REFUSED, "more than 64 kube groups");
	nv = realloc(s->v, (s->n + 1) * sizeof(*nv));
	if (nv == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	s->v = nv;
	if ((s->v[s->n] = strdup(name)) == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	s->n++;
	return 0;
}

static int
add_cert_groups(struct strv *s, X509 *cert, const char *attr, kh_error *err)
{
	char **vals = NULL;
	size_t n = 0;
	int rc = 0;

	if (kh_x509_subject_values(cert, attr, &vals, &n, err) != 0)
		return -1;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = strv_add_unique(s, vals[i], err);
	kh_x509_strv_free(vals, n);
	return rc;
}

/* getgrgid_r with a buffer that grows on ERANGE (directory groups with
 * many members do not fit 8 KiB), up to 1 MiB.  0 found; 1 no name for
 * the gid (backends say so with 0 or with an errno such as ENOENT); -1 the
 * group would not fit or memory ran out. */
static int
group_name(gid_t gid, char **buf, size_t *size, const char **name)
{
	struct group gr, *res;
	int rc;

	for (;;) {
		res = NULL;
		errno = 0;
		rc = getgrgid_r(gid, &gr, *buf, *size, &res);
		/* glibc returns ERANGE; an interposed implementation (cwrap's
		 * nss_wrapper, used by the tests) returns -1 with errno set. */
		if (rc != ERANGE && !(rc == -1 && errno == ERANGE))
			break;
		if (*size >= KH_PAM_GROUP_BUF_MAX)
			return -1;
		char *nb = realloc(*buf, *size * 2);

		if (nb == NULL)
			return -1;
		*buf = nb;
		*size *= 2;
	}
	if (rc != 0 || res == NULL)
		return 1;
	*name = gr.gr_name;
	return 0;
}

static int
add_unix_groups(struct strv *s, const char *user, gid_t gid, const char *glob,
		kh_error *err)
{
	gid_t *gids = NULL;
	size_t bufsize = 8192;
	char *buf = NULL;
	int ngids = 32, rc = 0;

	for (;;) {
		gid_t *ng = realloc(gids, (size_t)ngids * sizeof(*gids));
		int want = ngids;

		if (ng == NULL) {
			free(gids);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
		gids = ng;
		if (getgrouplist(user, gid, gids, &want) >= 0) {
			ngids = want;
			break;
		}
		if (want <= ngids || want > KH_PAM_MAX_UNIX_GROUPS) {
			free(gids);
			return kh_fail(err, KH_ERR_INTERNAL, "getgrouplist failed for '%s'", user);
		}
		ngids = want;
	}
	buf = malloc(bufsize);
	if (buf == NULL) {
		free(gids);
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	}
	for (int i = 0; i < ngids && rc == 0; i++) {
		const char *name = NULL;
		int found = group_name(gids[i], &buf, &bufsize, &name);

		if (found < 0)
			rc = kh_fail(err, KH_ERR_INTERNAL, "group %u of '%s' does not fit in "
				     "1 MiB or memory ran out", (unsigned)gids[i], user);
		else if (found == 0 && fnmatch(glob, name, 0) == 0)
			rc = strv_add_unique(s, name, err);
	}
	free(buf);
	free(gids);
	return rc;
}

/* Keep only the groups identity.allow_groups/deny_groups let through; say
 * which were dropped (a certificate with O=system:masters must not make
 * its holder cluster admin). */
static void
filter_groups(pam_handle_t *pamh, const struct kh_policy *policy, const char *user,
	      struct strv *s)
{
	size_t i = 0;

	while (i < s->n) {
		if (kh_policy_group_allowed(policy, s->v[i])) {
			i++;
			continue;
		}
		pam_syslog(pamh, LOG_NOTICE, "user '%s': kube group '%s' is not allowed "
			   "(identity.allow_groups/deny_groups); left out of the session",
			   user, s->v[i]);
		kh_secure_strfree(s->v[i]);
		memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(*s->v));
		s->n--;
	}
}

int
kh_pam_kube_groups(pam_handle_t *pamh, const struct kh_policy *policy, X509 *cert,
		   const char *user, gid_t gid, char ***groups, size_t *ngroups,
		   kh_error *err)
{
	struct strv s = { 0 };
	int rc = 0;

	for (size_t i = 0; i < policy->identity.ngroups && rc == 0; i++) {
		const struct kh_group_rule *r = &policy->identity.groups[i];

		switch (r->source) {
		case KH_GROUP_CERT:
			rc = add_cert_groups(&s, cert, r->arg, err);
			break;
		case KH_GROUP_UNIX:
			rc = add_unix_groups(&s, user, gid, r->arg, err);
			break;
		case KH_GROUP_STATIC:
			rc = strv_add_unique(&s, r->arg, err);
			break;
		}
	}
	if (rc != 0) {
		strv_free(s.v, s.n);
		return -1;
	}
	filter_groups(pamh, policy, user, &s);
	*groups = s.v;
	*ngroups = s.n;
	return 0;
}
