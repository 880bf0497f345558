/*
 * fakepam — a fake account database in place of NSS.
 *
 * The test programs are linked with --wrap for getpwnam_r, getgrouplist
 * and getgrgid_r ($(fakepam_ldflags)), so the module's lookups come here
 * and see only what the test added: the tests depend on no account of the
 * machine, and can make entries too large for a first buffer.  The
 * answers follow glibc's: 0 with *result NULL for no such entry, ERANGE
 * when the buffer is too small, getgrouplist's -1 with the needed count.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/fakepam/internal.h"

int __wrap_getpwnam_r(const char *name, struct passwd *pw, char *buf, size_t buflen,
		      struct passwd **result);
int __wrap_getgrouplist(const char *user, gid_t group, gid_t *groups, int *ngroups);
int __wrap_getgrgid_r(gid_t gid, struct group *gr, char *buf, size_t buflen,
		      struct group **result);

struct entry {
	char *name;             /* account, group or member name */
	char *other;            /* the gecos; the canonical name of an alias */
	uid_t uid;
	gid_t gid;
};

/* One table per kind of entry. */
struct table {
	struct entry *e;
	size_t n;
};

static struct table users, aliases, groups, members;

static void
table_add(struct table *t, const char *name, const char *other, uid_t uid, gid_t gid)
{
	struct entry *grown = realloc(t->e, (t->n + 1) * sizeof(*t->e));

	assert_non_null(grown);
	t->e = grown;
	t->e[t->n] = (struct entry){ .name = strdup(name),
				     .other = strdup(other != NULL ? other : ""),
				     .uid = uid, .gid = gid };
	assert_non_null(t->e[t->n].name);
	assert_non_null(t->e[t->n].other);
	t->n++;
}

static void
table_clear(struct table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->e[i].name);
		free(t->e[i].other);
	}
	free(t->e);
	*t = (struct table){ 0 };
}

static const struct entry *
table_find(const struct table *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->e[i].name, name) == 0)
			return &t->e[i];
	return NULL;
}

void
fakepam_nss_user(const char *name, uid_t uid, gid_t gid, const char *gecos)
{
	table_add(&users, name, gecos, uid, gid);
}

void
fakepam_nss_alias(const char *typed, const char *name)
{
	table_add(&aliases, typed, name, 0, 0);
}

void
fakepam_nss_group(const char *name, gid_t gid)
{
	table_add(&groups, name, NULL, 0, gid);
}

void
fakepam_nss_member(const char *user, gid_t gid)
{
	table_add(&members, user, NULL, 0, gid);
}

void
fakepam_nss_clear(void)
{
	table_clear(&users);
	table_clear(&aliases);
	table_clear(&groups);
	table_clear(&members);
}

/* Copy s into the caller's buffer at *at; NULL when it does not fit. */
static char *
put_string(char *buf, size_t buflen, size_t *at, const char *s)
{
	size_t len = strlen(s) + 1;
	char *p = buf + *at;

	if (len > buflen - *at)
		return NULL;
	memcpy(p, s, len);
	*at += len;
	return p;
}

int
__wrap_getpwnam_r(const char *name, struct passwd *pw, char *buf, size_t buflen,
		  struct passwd **result)
{
	const struct entry *alias = table_find(&aliases, name);
	const struct entry *u = table_find(&users, alias != NULL ? alias->other : name);
	size_t at = 0;

	*result = NULL;
	if (u == NULL)
		return 0;
	pw->pw_name = put_string(buf, buflen, &at, u->name);
	pw->pw_passwd = put_string(buf, buflen, &at, "x");
	pw->pw_gecos = put_string(buf, buflen, &at, u->other);
	pw->pw_dir = put_string(buf, buflen, &at, "/nonexistent");
	pw->pw_shell = put_string(buf, buflen, &at, "/usr/sbin/nologin");
	if (pw->pw_name == NULL || pw->pw_passwd == NULL || pw->pw_gecos == NULL ||
	    pw->pw_dir == NULL || pw->pw_shell == NULL)
		return ERANGE;
	pw->pw_uid = u->uid;
	pw->pw_gid = u->gid;
	*result = pw;
	return 0;
}

/* The primary group first, then each membership of user, once. */
int
__wrap_getgrouplist(const char *user, gid_t group, gid_t *out, int *ngroups)
{
	int n = 1;

	if (*ngroups > 0)
		out[0] = group;
	for (size_t i = 0; i < members.n; i++) {
		if (strcmp(members.e[i].name, user) != 0 || members.e[i].gid == group)
			continue;
		if (n < *ngroups)
			out[n] = members.e[i].gid;
		n++;
	}
	if (n > *ngroups) {
		*ngroups = n;
		return -1;
	}
	*ngroups = n;
	return n;
}

int
__wrap_getgrgid_r(gid_t gid, struct group *gr, char *buf, size_t buflen,
		  struct group **result)
{
	const struct entry *g = NULL;
	size_t at = 0;

	*result = NULL;
	for (size_t i = 0; i < groups.n && g == NULL; i++)
		if (groups.e[i].gid == gid)
			g = &groups.e[i];
	if (g == NULL)
		return 0;
	gr->gr_name = put_string(buf, buflen, &at, g->name);
	gr->gr_passwd = put_string(buf, buflen, &at, "x");
	/* The (empty) member list, a pointer array, after the strings. */
	at += (sizeof(char *) - (uintptr_t)(buf + at) % sizeof(char *)) % sizeof(char *);
	if (gr->gr_name == NULL || gr->gr_passwd == NULL || buflen < at + sizeof(char *))
		return ERANGE;
	gr->gr_mem = (char **)(void *)(buf + at);
	gr->gr_mem[0] = NULL;
	gr->gr_gid = gid;
	*result = gr;
	return 0;
}
