/*
 * libnss_khcase — a test NSS module that answers passwd lookups by name
 * without regard to case, as sssd does for a case-insensitive domain:
 * getpwnam("ALICE") gives the entry of "alice", named "alice".  Loaded
 * into a test's PAM host through nss_wrapper (NSS_WRAPPER_MODULE_SO_PATH,
 * prefix "khcase"); lookups by uid are left to the files backend.
 *
 * Test code only, never installed.
 */
#include <errno.h>
#include <nss.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum nss_status _nss_khcase_getpwnam_r(const char *name, struct passwd *pw, char *buf,
				       size_t len, int *errnop);
enum nss_status _nss_khcase_getpwuid_r(uid_t uid, struct passwd *pw, char *buf,
				       size_t len, int *errnop);

/* Copy s into buf at *used; NULL when it does not fit. */
static char *
put(const char *s, char *buf, size_t len, size_t *used)
{
	size_t n = strlen(s) + 1;
	char *p;

	if (n > len - *used)
		return NULL;
	p = memcpy(buf + *used, s, n);
	*used += n;
	return p;
}

enum nss_status
_nss_khcase_getpwnam_r(const char *name, struct passwd *pw, char *buf, size_t len,
		       int *errnop)
{
	FILE *f = fopen("/etc/passwd", "re");
	enum nss_status st = NSS_STATUS_NOTFOUND;
	struct passwd *e;
	size_t used = 0;

	if (f == NULL) {
		*errnop = errno;
		return NSS_STATUS_UNAVAIL;
	}
	while ((e = fgetpwent(f)) != NULL) {
		if (strcasecmp(e->pw_name, name) != 0)
			continue;
		*pw = *e;
		if ((pw->pw_name = put(e->pw_name, buf, len, &used)) == NULL ||
		    (pw->pw_passwd = put(e->pw_passwd, buf, len, &used)) == NULL ||
		    (pw->pw_gecos = put(e->pw_gecos, buf, len, &used)) == NULL ||
		    (pw->pw_dir = put(e->pw_dir, buf, len, &used)) == NULL ||
		    (pw->pw_shell = put(e->pw_shell, buf, len, &used)) == NULL) {
			*errnop = ERANGE;
			st = NSS_STATUS_TRYAGAIN;
		} else {
			st = NSS_STATUS_SUCCESS;
		}
		break;
	}
	fclose(f);
	return st;
}

enum nss_status
_nss_khcase_getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len, int *errnop)
{
	(void)uid;
	(void)pw;
	(void)buf;
	(void)len;
	(void)errnop;
	return NSS_STATUS_NOTFOUND;
}
