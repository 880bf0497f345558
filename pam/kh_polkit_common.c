/*
 * kh_polkit_common — the parts of the polkit client that need no GLib,
 * shared by the kubehsm-polkit.so plugin (pam/kh_polkit.c) and the PAM
 * module's look at the system bus before it loads the plugin
 * (pam/kh_pam_polkit.c): the subject's start time and the one verdict and
 * log line for a polkit that is not there.  One copy of each, so the
 * module's shortcut cannot drift from what the plugin decides.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pam/kh_polkit.h"

int
kh_polkit_start_time(pid_t pid, uint64_t *start, kh_error *err)
{
	char path[64], buf[1024];
	const char *p;
	FILE *f;
	size_t n;
	int field;
	char *end;
	unsigned long long v;

	(void)snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return kh_fail(err, KH_ERR_NOTFOUND,
			       "polkit: process %ld does not exist (%s)",
			       (long)pid, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	(void)fclose(f);
	buf[n] = '\0';
	/* comm (field 2) may hold spaces and ')': fields restart after the last ')'. */
	p = strrchr(buf, ')');
	if (p == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "polkit: cannot parse %s", path);
	p++;
	for (field = 2; field < 21 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	if (p == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "polkit: cannot parse %s", path);
	errno = 0;
	v = strtoull(p + 1, &end, 10);
	if (errno != 0 || end == p + 1 || (*end != ' ' && *end != '\0'))
		return kh_fail(err, KH_ERR_INTERNAL, "polkit: cannot parse %s", path);
	*start = v;
	return 0;
}

int
kh_polkit_unreachable(enum kh_polkit_mode mode, const char *action_id,
		      const char *why, bool *unreachable, kh_error *err)
{
	if (mode == KH_POLKIT_IF_AVAILABLE) {
		if (unreachable != NULL)
			*unreachable = true;
		(void)kh_fail(err, KH_ERR_UNSUPPORTED,
			      "polkit unreachable (%s); %s allowed by polkit.mode = if-available",
			      why, action_id);
		return 1;
	}
	return kh_fail(err, KH_ERR_PERM,
		       "polkit unreachable (%s), policy requires it (polkit.mode = required): %s refused",
		       why, action_id);
}
