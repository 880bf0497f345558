/*
 * polkit_probe — drive kh_polkit_check from the integration tests.
 *
 *   polkit_probe [-t MS] MODE ACTION PID UID [KEY VALUE]...
 *   polkit_probe -l MODE PID UID SERVICE USER SERIAL KUBE_USER [GROUP]...
 *
 * MODE is required | if-available | off.  -l goes through
 * kh_polkit_check_login (org.kubehsm.cache-credentials).  Prints one line:
 *   "authorized", "authorized (<log line>)" when polkit was unreachable,
 *   "denied: <why>" or "error: <why>",
 * and exits 0, 1 or 2 respectively.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pam/kh_polkit.h"

static int
usage(void)
{
	fprintf(stderr, "usage: polkit_probe [-t MS] MODE ACTION PID UID [KEY VALUE]...\n"
		"       polkit_probe -l MODE PID UID SERVICE USER SERIAL KUBE_USER [GROUP]...\n");
	return 2;
}

static int
parse_mode(const char *s, enum kh_polkit_mode *mode)
{
	if (strcmp(s, "required") == 0)
		*mode = KH_POLKIT_REQUIRED;
	else if (strcmp(s, "if-available") == 0)
		*mode = KH_POLKIT_IF_AVAILABLE;
	else if (strcmp(s, "off") == 0)
		*mode = KH_POLKIT_OFF;
	else
		return -1;
	return 0;
}

static int
parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v > max)
		return -1;
	*out = v;
	return 0;
}

static int
report(int rc, bool unreachable, const kh_error *err)
{
	if (rc == 1 && unreachable) {
		printf("authorized (%s)\n", err->msg);
		return 0;
	}
	if (rc == 1) {
		printf("authorized\n");
		return 0;
	}
	if (rc == 0) {
		printf("denied: %s\n", err->msg);
		return 1;
	}
	printf("error: [%s] %s\n", kh_errcode_name(err->code), err->msg);
	return 2;
}

/* -l MODE PID UID SERVICE USER SERIAL KUBE_USER [GROUP]... */
static int
probe_login(int argc, char **argv)
{
	struct kh_polkit_login login;
	enum kh_polkit_mode mode;
	unsigned long pid, uid;
	bool unreachable = false;
	kh_error err;
	int rc;

	kh_error_clear(&err);
	if (argc < 9 || parse_mode(argv[2], &mode) < 0 ||
	    parse_ulong(argv[3], INT_MAX, &pid) < 0 ||
	    parse_ulong(argv[4], INT_MAX, &uid) < 0)
		return usage();
	login.service = argv[5];
	login.user = argv[6];
	login.token_serial = argv[7];
	login.kube_user = argv[8];
	login.kube_groups = (const char *const *)&argv[9];
	login.nkube_groups = (size_t)(argc - 9);
	rc = kh_polkit_check_login(mode, (pid_t)pid, (uid_t)uid, &login,
				   &unreachable, &err);
	return report(rc, unreachable, &err);
}

int
main(int argc, char **argv)
{
	enum kh_polkit_mode mode;
	unsigned long pid, uid, timeout_ms = 0;
	bool unreachable = false;
	kh_error err;
	int rc, i = 1;

	kh_error_clear(&err);
	if (argc > 1 && strcmp(argv[1], "-l") == 0)
		return probe_login(argc, argv);
	if (argc > 2 && strcmp(argv[1], "-t") == 0) {
		if (parse_ulong(argv[2], 600000, &timeout_ms) < 0)
			return usage();
		i = 3;
	}
	if (argc - i < 4 || (argc - i - 4) % 2 != 0)
		return usage();
	if (parse_mode(argv[i], &mode) < 0 ||
	    parse_ulong(argv[i + 2], INT_MAX, &pid) < 0 ||
	    parse_ulong(argv[i + 3], INT_MAX, &uid) < 0)
		return usage();

	/* argv is NULL-terminated, so the details list after UID is too. */
	rc = kh_polkit_check_timeout(mode, argv[i + 1], (pid_t)pid, (uid_t)uid,
				     (const char *const *)&argv[i + 4],
				     (unsigned)timeout_ms, &unreachable, &err);
	return report(rc, unreachable, &err);
}
