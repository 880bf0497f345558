/*
 * kh_pam_groups — the kube groups of a login: identity.groups mapped from
 * the token certificate (cert:O, cert:OU), the user's unix groups matching
 * a glob (unix:k8s-*) and fixed names (static:), then identity.allow_groups
 * and deny_groups.  They become the session certificate's O values, which
 * the API server reads as the user's groups, so what is left out is logged.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "cache/kh_record.h"
#include "lib/kh_mem.h"
#include "lib/kh_x509.h"
#include "pam/kh_pam.h"

#define KH_PAM_MAX_UNIX_GROUPS 65536
#define KH_PAM_GROUP_BUF_MAX (1u << 20)

/* A group list being built. */
struct strv {
	char **v;
	size_t n;
};

void
kh_pam_groups_free(char **v, size_t n)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		kh_secure_strfree(v[i]);
	free(v);
}

/* Add name unless it is there already; the record holds at most
 * KH_RECORD_MAX_GROUPS, so more is refused here, before anything is minted. */
static int
add_group(struct strv *s, const char *name, kh_error *err)
{
	char **nv;

	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], name) == 0)
			return 0;
	if (s->n >= KH_RECORD_MAX_GROUPS)
		return kh_fail(err, KH_ERR_REFUSED, "more than %d kube groups",
			       KH_RECORD_MAX_GROUPS);
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
		rc = add_group(s, vals[i], err);
	kh_x509_strv_free(vals, n);
	return rc;
}

/* The gids of user's groups, primary gid included (getgrouplist, asked
 * again with room for as many as it says, up to KH_PAM_MAX_UNIX_GROUPS).
 * 0 with *gids (free it) and *ngids, or -1 with err. */
static int
unix_gids(const char *user, gid_t gid, gid_t **gids, int *ngids, kh_error *err)
{
	int n = 32;

	*gids = NULL;
	for (;;) {
		gid_t *ng = realloc(*gids, (size_t)n * sizeof(**gids));
		int want = n;

		if (ng == NULL) {
			free(*gids);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
		*gids = ng;
		if (getgrouplist(user, gid, *gids, &want) >= 0) {
			*ngids = want;
			return 0;
		}
		if (want <= n || want > KH_PAM_MAX_UNIX_GROUPS) {
			free(*gids);
			return kh_fail(err, KH_ERR_INTERNAL, "getgrouplist failed for '%s'", user);
		}
		n = want;
	}
}

/* getgrgid_r with a buffer that grows on ERANGE (directory groups with
 * many members do not fit 8 KiB), up to KH_PAM_GROUP_BUF_MAX.  0 found;
 * 1 no name for the gid (backends say so with 0 or with an errno such as
 * ENOENT); -1 the group would not fit or memory ran out. */
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
	int ngids = 0, rc = 0;

	if (unix_gids(user, gid, &gids, &ngids, err) != 0)
		return -1;
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
			rc = add_group(s, name, err);
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
			rc = add_group(&s, r->arg, err);
			break;
		}
	}
	if (rc != 0) {
		kh_pam_groups_free(s.v, s.n);
		return -1;
	}
	filter_groups(pamh, policy, user, &s);
	*groups = s.v;
	*ngroups = s.n;
	return 0;
}
