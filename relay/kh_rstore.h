/*
 * kh_rstore — where kubehsm-relayd keeps session keys: in the kernel
 * keyring, never on disk, so a restart (or kill -9) loses no live session.
 *
 * The store is a keyring in the persistent keyring of the relay's uid
 * (keyctl_get_persistent), which outlives the process; the relay finds it
 * again at start.  Sessions go into "slot" keys that root creates before
 * the privilege drop and the relay fills afterwards: the relay's own uid
 * has the kernel's non-root key quota (20000 bytes, about a dozen
 * sessions), while keys root owns are charged to root.  The relay reaches
 * the slots by possession only (its process keyring links the persistent
 * keyring): no other uid can read them, and a slot's kernel timeout is
 * the session's expiry, so a key never outlives its certificate even if
 * the relay is gone.
 */
#ifndef KH_RSTORE_H
#define KH_RSTORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/kh_error.h"

struct kh_rstore;

/*
 * As root, before the drop: find or create the store named `name` for
 * uid relay_uid with at least nslots slots.  NULL + err on failure (no
 * persistent keyrings in this kernel, key quota...).
 */
struct kh_rstore *kh_rstore_open(uid_t relay_uid, const char *name, size_t nslots,
				 kh_error *err);
void kh_rstore_free(struct kh_rstore *st);

/* Every filled slot (after the drop): fn gets the slot and its payload,
 * which is wiped after fn returns. */
void kh_rstore_foreach(struct kh_rstore *st,
		       void (*fn)(void *arg, int slot, const char *buf, size_t len),
		       void *arg);

/* Store buf in `slot` (or in a free one when slot < 0; *out = the slot),
 * with the kernel timeout at `expires` (unix seconds). */
int kh_rstore_put(struct kh_rstore *st, int slot, const char *buf, size_t len,
		  int64_t expires, int *out, kh_error *err);

/* Empty a slot (the kernel wipes the payload it frees). */
void kh_rstore_clear(struct kh_rstore *st, int slot);

/* Keep the persistent keyring from expiring (call at least daily). */
int kh_rstore_refresh(struct kh_rstore *st, kh_error *err);

#endif
