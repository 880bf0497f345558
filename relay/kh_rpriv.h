/*
 * kh_rpriv — what kubehsm-relayd checks and gives up before it serves.
 */
#ifndef KH_RPRIV_H
#define KH_RPRIV_H

#include <sys/types.h>

#include "lib/kh_error.h"
#include "conf/kh_policy.h"

/*
 * Refuse to serve on a port an unprivileged user could bind while the
 * relay is down: every listen port must be below the netns's
 * net.ipv4.ip_unprivileged_port_start (which covers IPv6 too).
 */
int kh_rpriv_check_ports(const struct kh_policy *policy, kh_error *err);

/* The run_as user's uid and primary gid; root is refused. */
int kh_rpriv_lookup(const char *user, uid_t *uid, gid_t *gid, kh_error *err);

/* Raise RLIMIT_NOFILE for `want` descriptors (as root, before the drop). */
int kh_rpriv_raise_nofile(unsigned long want, kh_error *err);

/*
 * Leave whatever session keyring the starter had (a root shell's, whose
 * keys root's logins link in) for a fresh anonymous one, so nothing the
 * relay possesses after the drop came from the login that started it.
 * systemd's KeyringMode=private does the same for the unit.  The new
 * keyring's serial, or -1.  (Files opened before keep a reference to the
 * old credentials, and so to the old keyring, for their life: that keeps
 * the keyring alive, and gives no access to it.)
 */
long kh_rpriv_leave_session_keyring(kh_error *err);

/*
 * Become uid/gid for good: no supplementary groups, every capability set
 * (effective, permitted, inheritable, ambient, bounding) empty,
 * no_new_privs, not dumpable.  Then prove it: the ids read back, capget
 * shows nothing, and setuid(0) fails.
 */
int kh_rpriv_drop(uid_t uid, gid_t gid, kh_error *err);

#endif
