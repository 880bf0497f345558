/*
 * kh_cache — the kernel-keyring credential cache.
 *
 * Writers run as root (the PAM module, the admin views); readers run as the
 * user.  A stored record is owned by the user's uid with permissions
 * possessor+user view/read/search (+possessor link): the user can read it
 * from any of their processes and invalidate it (logout), but can neither
 * update it, re-permission it nor stretch its timeout; other uids see
 * nothing.  The kernel timeout is the seconds left to expiry.
 *
 * Nothing here ever falls back to files.
 */
#ifndef KH_CACHE_H
#define KH_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kh_error.h"
#include "kh_policy.h"
#include "kh_record.h"

/* Final permissions of a stored record: possessor view/read/search/link,
 * user view/read/search, nothing for group and other. */
#define KH_CACHE_PERM 0x1b0b0000u

/* Why a lookup found nothing usable (for the reader's error message). */
enum kh_cache_miss {
	KH_MISS_NONE = 0,     /* a valid record was found */
	KH_MISS_ABSENT,       /* no record: never logged in, or it timed out */
	KH_MISS_EXPIRED,      /* past its expiry */
	KH_MISS_REVOKED,      /* logged out or revoked */
	KH_MISS_REFUSED,      /* present but failed a check (owner, perms, format) */
};

/*
 * Store (root only) rec for rec->uid.  Scope user: the uid's user keyring;
 * scope session: the calling process's session keyring (the login's, as set
 * up by pam_keyinit).  Replaces any earlier record for the same issuer
 * atomically; on failure (quota, kernel refusal) the earlier record stays.
 * When pin is non-NULL (session.cache_pin) it is stored as its own key.
 */
int kh_cache_store(const struct kh_record *rec, const char *pin, kh_error *err);

/*
 * Login accounting (root only), serialised per uid with a lock in the
 * runtime directory so two concurrent logins never lose a count:
 * kh_cache_login stores rec with logins = previous valid record's + 1;
 * kh_cache_logout decrements, and when the last login ends (or
 * revoke_on_logout is set and it reaches zero) invalidates the record.
 * Returns 1 if the record was removed, 0 if kept, -1 on error.
 */
int kh_cache_login(struct kh_record *rec, const char *pin, kh_error *err);
int kh_cache_logout(uid_t uid, const char *issuer_id, enum kh_scope scope,
		    bool revoke_on_logout, kh_error *err);

/*
 * Find the calling process's valid record for issuer_id ("" = default):
 * the session keyring first, then the user keyring.  On a miss returns -1,
 * sets *miss and a message saying why and what to do.
 */
int kh_cache_find(const char *issuer_id, struct kh_record **out,
		  enum kh_cache_miss *miss, kh_error *err);

/* The cached PIN, if session.cache_pin stored one.  Wipe with kh_secure_strfree. */
int kh_cache_find_pin(const char *issuer_id, char **pin, kh_error *err);

/*
 * Remove a record.  As the user: their own (logout).  As root: any uid's
 * user-scope record.  Leaves a small "ended" marker so readers can say
 * "revoked" rather than "none".  Returns 0 if removed, 1 if none, -1 error.
 */
int kh_cache_revoke(uid_t uid, const char *issuer_id, kh_error *err);

/* One row of a listing: never carries the key. */
struct kh_cache_entry {
	uid_t uid;
	int32_t serial;          /* kernel key serial */
	char description[96];
	struct kh_record *rec;   /* decoded with key_pem wiped and NULL */
	enum kh_cache_miss state;/* KH_MISS_NONE if valid */
	char problem[KH_ERROR_MAX];
};

/*
 * List records.  uid == (uid_t)-1 (root only): every uid with keys; else
 * that uid's (a user may list only their own).  Caller frees with
 * kh_cache_entries_free.
 */
int kh_cache_list(uid_t uid, struct kh_cache_entry **out, size_t *n,
		  kh_error *err);
void kh_cache_entries_free(struct kh_cache_entry *e, size_t n);

#endif
