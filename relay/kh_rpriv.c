/*
 * kh_rpriv — the privileged-port check and the privilege drop.
 *
 * The drop is libcap-ng's capng_change_id (setgroups, setresgid,
 * setresuid with every capability set cleared, the bounding set too),
 * then checked the way an auditor would: read every id back, ask the
 * kernel (capget) for each capability set, and try to get root back.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cap-ng.h>
#include <keyutils.h>
#include <linux/capability.h>

#include "relay/kh_rpriv.h"

#define KH_UNPRIV_PORT_START "/proc/sys/net/ipv4/ip_unprivileged_port_start"

int
kh_rpriv_check_ports(const struct kh_policy *p, kh_error *err)
{
	FILE *f = fopen(KH_UNPRIV_PORT_START, "re");
	long start = 1024;
	size_t i;

	if (f != NULL) {
		if (fscanf(f, "%ld", &start) != 1)
			start = -1;
		(void)fclose(f);
		if (start < 0)
			return kh_fail(err, KH_ERR_INTERNAL, "cannot read %s", KH_UNPRIV_PORT_START);
	} else if (errno != ENOENT) {
		/* Absent only on kernels before 4.11, where 1024 is fixed. */
		return kh_fail(err, KH_ERR_INTERNAL, "%s: %s", KH_UNPRIV_PORT_START,
			       strerror(errno));
	}
	for (i = 0; i < p->relay.nclusters; i++) {
		const struct kh_relay_cluster *c = &p->relay.clusters[i];

		if (c->listen >= start)
			return kh_fail(err, KH_ERR_CONFIG, "cluster %s: port %d is not privileged "
				       "here: net.ipv4.ip_unprivileged_port_start = %ld lets any "
				       "user bind it while the relay is down; raise the sysctl "
				       "above %d or pick a port below %ld", c->name, c->listen,
				       start, c->listen, start);
	}
	return 0;
}

int
kh_rpriv_lookup(const char *user, uid_t *uid, gid_t *gid, kh_error *err)
{
	struct passwd *pw;

	errno = 0;
	pw = getpwnam(user);
	if (pw == NULL)
		return kh_fail(err, KH_ERR_CONFIG, "relay.run_as: no user \"%s\"%s%s (create a "
			       "system user: adduser --system --group --no-create-home %s)", user,
			       errno != 0 ? ": " : "", errno != 0 ? strerror(errno) : "", user);
	if (pw->pw_uid == 0 || pw->pw_gid == 0)
		return kh_fail(err, KH_ERR_CONFIG, "relay.run_as: user \"%s\" has uid or gid 0; "
			       "the relay must not keep root's identity", user);
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

int
kh_rpriv_raise_nofile(unsigned long want, kh_error *err)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "getrlimit: %s", strerror(errno));
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= want)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
		rl.rlim_max = want;     /* root may raise the hard limit */
	rl.rlim_cur = want;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot allow %lu open files: %s", want,
			       strerror(errno));
	return 0;
}

long
kh_rpriv_leave_session_keyring(kh_error *err)
{
	long k = keyctl_join_session_keyring(NULL);

	if (k < 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot join a fresh session keyring: %s",
			       strerror(errno));
	return k;
}

static int
kh_rpriv_verify(uid_t uid, gid_t gid, kh_error *err)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	int cap;

	if (getresuid(&ru, &eu, &su) != 0 || getresgid(&rg, &eg, &sg) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "getresuid: %s", strerror(errno));
	if (ru != uid || eu != uid || su != uid || rg != gid || eg != gid || sg != gid)
		return kh_fail(err, KH_ERR_INTERNAL, "privilege drop left ids %u/%u/%u %u/%u/%u",
			       (unsigned)ru, (unsigned)eu, (unsigned)su, (unsigned)rg,
			       (unsigned)eg, (unsigned)sg);
	if (getgroups(0, NULL) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "privilege drop left supplementary groups");
	/* capget, through libcap-ng: effective, permitted, inheritable, bounding, ambient. */
	capng_clear(CAPNG_SELECT_ALL);
	if (capng_get_caps_process() != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "capget failed");
	if (capng_have_capabilities(CAPNG_SELECT_CAPS) != CAPNG_NONE ||
	    capng_have_capabilities(CAPNG_SELECT_BOUNDS) != CAPNG_NONE)
		return kh_fail(err, KH_ERR_INTERNAL, "privilege drop left capabilities");
	for (cap = 0; cap <= CAP_LAST_CAP; cap++) {
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 1)
			return kh_fail(err, KH_ERR_INTERNAL, "privilege drop left ambient "
				       "capability %d", cap);
	}
	if (setuid(0) == 0 || seteuid(0) == 0 || setgid(0) == 0)
		return kh_fail(err, KH_ERR_INTERNAL, "privilege drop is not permanent: root "
			       "could be regained");
	return 0;
}

int
kh_rpriv_drop(uid_t uid, gid_t gid, kh_error *err)
{
	int rc;

	if (uid == 0 || gid == 0)
		return kh_fail(err, KH_ERR_INTERNAL, "refusing to drop to uid/gid 0");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot clear ambient capabilities: %s",
			       strerror(errno));
	capng_clear(CAPNG_SELECT_BOTH);
	rc = capng_change_id((int)uid, (int)gid, CAPNG_DROP_SUPP_GRP | CAPNG_CLEAR_BOUNDING);
	if (rc != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot become uid %u gid %u "
			       "(capng_change_id %d): %s", (unsigned)uid, (unsigned)gid, rc,
			       strerror(errno));
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) != 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "prctl: %s", strerror(errno));
	return kh_rpriv_verify(uid, gid, err);
}
