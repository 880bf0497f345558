/*
 * kh_rctlpool — slot counts; the per-uid table has one entry per slot, so
 * it can never be full while a slot is free.
 */
#include "config.h"

#include "relay/kh_rctlpool.h"

bool
kh_rctlpool_admit(struct kh_rctlpool *p, bool user, uid_t uid)
{
	unsigned i, free_at = KH_RCTL_USER_MAX;

	if (!user) {
		if (p->nroot >= KH_RCTL_ROOT_MAX)
			return false;
		p->nroot++;
		return true;
	}
	if (p->nuser >= KH_RCTL_USER_MAX)
		return false;
	for (i = 0; i < KH_RCTL_USER_MAX; i++) {
		if (p->per_uid[i].n > 0 && p->per_uid[i].uid == uid) {
			if (p->per_uid[i].n >= KH_RCTL_USER_PER_UID)
				return false;
			p->per_uid[i].n++;
			p->nuser++;
			return true;
		}
		if (p->per_uid[i].n == 0 && free_at == KH_RCTL_USER_MAX)
			free_at = i;
	}
	p->per_uid[free_at].uid = uid;
	p->per_uid[free_at].n = 1;
	p->nuser++;
	return true;
}

void
kh_rctlpool_leave(struct kh_rctlpool *p, bool user, uid_t uid)
{
	unsigned i;

	if (!user) {
		if (p->nroot > 0)
			p->nroot--;
		return;
	}
	for (i = 0; i < KH_RCTL_USER_MAX; i++) {
		if (p->per_uid[i].n > 0 && p->per_uid[i].uid == uid) {
			p->per_uid[i].n--;
			p->nuser--;
			return;
		}
	}
}

int
kh_rctlpool_timeout_ms(bool user)
{
	return user ? KH_RCTL_USER_TIMEOUT_MS : KH_RCTL_ROOT_TIMEOUT_MS;
}
