/*
 * kh_rctlpool — who may hold a control connection, so that root's never
 * waits behind users'.
 *
 * control.sock (root: deliver at login, forget at logout, admin revoke)
 * and user.sock (any user: kubehsm logout, status) have slots of their
 * own.  user.sock's are capped per uid as well and held for a short time
 * only, so no local user can hold what another needs, and none can touch
 * root's: a user holding every user.sock slot delays nobody's login or
 * revocation.
 */
#ifndef KH_RCTLPOOL_H
#define KH_RCTLPOOL_H

#include <stdbool.h>
#include <sys/types.h>

/* control.sock: connections at once, and how long each may take. */
#define KH_RCTL_ROOT_MAX 32
#define KH_RCTL_ROOT_TIMEOUT_MS 5000
/* user.sock: at once, per uid, and how long each may take. */
#define KH_RCTL_USER_MAX 64
#define KH_RCTL_USER_PER_UID 4
#define KH_RCTL_USER_TIMEOUT_MS 1000

struct kh_rctlpool {
	unsigned nroot, nuser;
	struct {
		uid_t uid;
		unsigned n;
	} per_uid[KH_RCTL_USER_MAX];
};

/* Take a slot for a connection on user.sock (user) or control.sock. */
bool kh_rctlpool_admit(struct kh_rctlpool *p, bool user, uid_t uid);
/* Give it back. */
void kh_rctlpool_leave(struct kh_rctlpool *p, bool user, uid_t uid);
/* The time a connection of that kind gets (milliseconds). */
int kh_rctlpool_timeout_ms(bool user);

#endif
