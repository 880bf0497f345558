/*
 * kh_cache_int — what the cache's reader, writer and listing share.
 * Internal to cache/: not part of the cache's interface.
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set, unless noted.
 */
#ifndef KH_CACHE_INT_H
#define KH_CACHE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <keyutils.h>

#include "cache/kh_cache.h"
#include "lib/kh_error.h"
#include "cache/kh_record.h"

/* Any of these would let their holder change the record. */
#define KH_PERM_MUTATE (KEY_POS_WRITE | KEY_POS_SETATTR | KEY_USR_WRITE | KEY_USR_SETATTR)
/* Any of these would let another uid see or read it. */
#define KH_PERM_OTHERS (KEY_GRP_ALL | KEY_OTH_ALL)
/* Possession reaches across uids (a process of another uid inside the
 * login's session keyring possesses the user keyring): no possessor may
 * see or read a record.  KEY_POS_LINK alone exposes nothing. */
#define KH_PERM_POSSESSOR (KEY_POS_VIEW | KEY_POS_READ | KEY_POS_SEARCH)

/* The ended marker outlives the record by at least this (seconds). */
#define KH_ENDED_MIN_TIMEOUT 60

/*
 * The "ended" marker's payload: "revoked <unix time> <account name>".  It
 * names the account whose session ended, because the kernel keeps a uid's
 * keys after userdel: a new account given the uid must not be told that a
 * session it never had "was ended".  Longest payload, with its NUL.
 */
#define KH_MARKER_MAX (sizeof("revoked ") + 20 + 1 + 256)

/* Format a marker for `user` at `when` into buf.  Its length, or -1 when
 * user is no account name a marker can carry. */
int kh_cache_marker_format(char *buf, size_t size, int64_t when, const char *user);

/* The account a marker payload names, copied into user (size bytes).  0,
 * or -1 when the payload is not a marker of this format (an older one
 * names no account and is nobody's). */
int kh_cache_marker_user(const char *payload, size_t len, char *user, size_t size);

static inline int64_t
kh_cache_now(void)
{
	return (int64_t)time(NULL);
}

/* One clear error for a failed keyring call (errno e).  Returns -1. */
int kh_cache_keyring_fail(kh_error *err, int e, const char *what);

/* What the kernel says of a key (owner, permissions) must be what the
 * writer set: owned by `want`, nobody can change it, no other uid and no
 * possessor can see it. */
int kh_cache_check_attributes(uid_t owner, key_perm_t perm, uid_t want,
			      kh_error *err);

/* Decode a record payload and check it for `owner` and `issuer_id` at the
 * current time (kh_record_decode + kh_record_check). */
int kh_cache_decode(const char *payload, size_t len, uid_t owner,
		    const char *issuer_id, struct kh_record **out, kh_error *err);

/* The same, taking what `take` says out of the exec part. */
int kh_cache_decode_as(const char *payload, size_t len, uid_t owner,
		       const char *issuer_id, enum kh_record_take take, struct kh_record **out,
		       kh_error *err);

/* The reader, whatever it takes: kh_cache_find, _find_key, _find_answer. */
int kh_cache_lookup(const char *issuer_id, enum kh_record_take take,
		    kh_cache_account_fn account, struct kh_record **out,
		    enum kh_cache_miss *miss, kh_error *err);

/* The issuer id encoded in a key description "kubehsm:<kind>:v1[:<id>]",
 * or NULL when desc is not of that kind. */
const char *kh_cache_desc_issuer(const char *desc, const char *kind);

/* The calling user ends their own session (kubehsm logout): every own key
 * of issuer_id they reach is invalidated.  1 ended, 0 none, -1 error.
 * (kh_cache_account.c: the marker it leaves names the account.) */
int kh_cache_revoke_own(const char *issuer_id, kh_error *err);

/* Invalidate every own key `desc` the caller reaches.  Returns how many. */
int kh_cache_drop_own(const char *desc);

/* Does errno e say the kernel has no keyrings for us (no such call, or a
 * seccomp filter)? */
int kh_cache_keyring_unsupported(int e);

/* Parse keyctl_describe's "type;uid;gid;perm;description" for a "user"
 * key; desc may be NULL.  0, or -1 when the text is not that.  Uses no
 * allocation (the keyring helper's child calls it). */
int kh_cache_parse_description(const char *text, uid_t *owner, key_perm_t *perm,
			       char *desc, size_t desclen);

#endif
