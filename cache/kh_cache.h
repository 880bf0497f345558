/*
 * kh_cache — the kernel-keyring credential cache.
 *
 * Writers run as root (the PAM module, the admin views); readers run as the
 * user.  A stored record is owned by the user's uid with permissions user
 * view/read/search/link and nothing for the possessor, group or other:
 * every process of the user can read it, none can update it, re-permission
 * it or stretch its timeout, and no other uid gets anything — also not a
 * process of another uid that shares or possesses the user's keyrings
 * (sudo -u, su), since possession grants nothing.  Root itself acts on the
 * records as the user: through a child that becomes the user to store them
 * (kh_keyops), with the user's filesystem ids in its own thread to end them
 * (kh_asuser), and remembers what it issued in its own index (kh_index).  The kernel timeout
 * is the seconds left to expiry.
 *
 * Nothing here ever falls back to files.
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set, unless noted: kh_cache_logout and kh_cache_revoke return 1
 * when a session ended and 0 when none did; kh_cache_drop_pin returns a
 * count.
 */
#ifndef KH_CACHE_H
#define KH_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/kh_error.h"
#include "cache/kh_record.h"

/* Final permissions of a stored key: user view/read/search/link. */
#define KH_CACHE_PERM 0x001b0000u

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
 * up by pam_keyinit).  Replaces the earlier record of the same issuer
 * (scope user) atomically, and invalidates it wherever it was linked; on
 * failure (quota, kernel refusal) the earlier record stays.  When pin is
 * non-NULL (session.cache_pin) it is stored as its own key; without it an
 * earlier PIN key goes.  *serial (may be NULL) gets the record's key serial.
 */
int kh_cache_store(const struct kh_record *rec, const char *pin, int32_t *serial,
		   kh_error *err);

/*
 * Login accounting (root only), serialised per uid.  Root counts the uid's
 * open logins through pam_kubehsm, minting or not: a record of scope user
 * is the session of all of them and ends (with revoke_on_logout) when the
 * last one closes.
 *
 * kh_cache_login: a login that authenticated with a token opens and mints
 * rec (KH_LOGIN_NEW counts it; KH_LOGIN_JOIN — `kubehsm login` inside a
 * login — does not, the record joins the logins already open).
 * rec->logins is set to the count.  *serial (may be NULL) gets the record's
 * key serial.
 * kh_cache_login_count: a login that minted nothing opens.
 * kh_cache_logout: one login closes; serials are the scope-session records
 * it minted (ended with revoke_on_logout); at the uid's last login every
 * scope-user key goes too.  Returns 1 if a session ended, 0 if none did,
 * -1 on error.  `ending` (may be NULL) is called with ctx once the logout
 * is known to end a session record and before any key is touched, whatever
 * the keyring step then does: the caller tells whoever else holds the
 * session (kubehsm-relayd) there, first.
 */
enum kh_login_kind {
	KH_LOGIN_NEW,
	KH_LOGIN_JOIN,
};

int kh_cache_login(struct kh_record *rec, const char *pin, enum kh_login_kind kind,
		   int32_t *serial, kh_error *err);
int kh_cache_login_count(uid_t uid, const char *user, kh_error *err);
typedef void (*kh_cache_ending_fn)(void *ctx);
int kh_cache_logout(uid_t uid, const char *user, const int32_t *serials,
		    size_t nserials, bool revoke_on_logout, kh_cache_ending_fn ending,
		    void *ctx, kh_error *err);

/*
 * Find the calling process's valid record for issuer_id ("" = default):
 * the session keyring first, then the user keyring.  On a miss returns -1,
 * sets *miss and a message saying why and what to do.  The record's user
 * must be the caller's account (kh_cache_account_db).
 */
int kh_cache_find(const char *issuer_id, struct kh_record **out,
		  enum kh_cache_miss *miss, kh_error *err);

/* kh_cache_find taking only the session key out of the record's exec
 * answer (cert_chain_pem is NULL unless the relay holds the key): what a
 * signer needs for a SignRequest, without decoding the chain. */
int kh_cache_find_key(const char *issuer_id, struct kh_record **out,
		      enum kh_cache_miss *miss, kh_error *err);

/*
 * Whether `user`, the account a record was issued to, is the caller's
 * account: the kernel keeps a uid's keys after the account is deleted, so a
 * uid handed to a new account can find the old holder's record.  0 it is,
 * -1 it is not (err says why), KH_CACHE_ACCOUNT_UNKNOWN this check cannot
 * tell.
 *
 * kh_cache_account_logname: the login's LOGNAME only (set by login, sshd,
 * su and sudo from the account database); UNKNOWN when unset or naming
 * someone else.  No system call, and nothing of NSS linked: what a static
 * program can do.
 * kh_cache_account_db: LOGNAME, then the account database (getpwuid_r) —
 * always decides.  In its own file, so a program that does not use it does
 * not link NSS.
 */
#define KH_CACHE_ACCOUNT_UNKNOWN 1
typedef int (*kh_cache_account_fn)(const char *user, kh_error *err);
int kh_cache_account_logname(const char *user, kh_error *err);
int kh_cache_account_db(const char *user, kh_error *err);

/*
 * kh_cache_find for `kubehsm exec`: every check of kh_cache_find, but the
 * record decoded with kh_record_decode_answer (exec_answer set, the chain
 * and the key left in it) and the account checked by `account`.  0 found,
 * -1 as kh_cache_find, KH_CACHE_ACCOUNT_UNKNOWN when `account` could not
 * tell for the record found (*out NULL): ask again with kh_cache_account_db.
 */
int kh_cache_find_answer(const char *issuer_id, kh_cache_account_fn account,
			 struct kh_record **out, enum kh_cache_miss *miss, kh_error *err);

/* The cached PIN, if session.cache_pin stored one.  Wipe with kh_secure_strfree. */
int kh_cache_find_pin(const char *issuer_id, char **pin, kh_error *err);

/* Forget the caller's cached PIN (the token refused it: trying it again
 * would only spend the token's tries).  Returns how many keys went. */
int kh_cache_drop_pin(const char *issuer_id);

/*
 * End a session.  As the user: their own (logout), every key of theirs of
 * that issuer they can reach.  As root: every key the host issued to uid
 * for that issuer, in any scope, wherever it is linked.  Leaves a small
 * "ended" marker so readers can say "revoked" rather than "none".
 * Returns 1 if a session ended, 0 if there was none, -1 on error.
 */
int kh_cache_revoke(uid_t uid, const char *issuer_id, kh_error *err);

/* One row of a listing: never carries the key. */
struct kh_cache_entry {
	uid_t uid;
	int32_t serial;          /* kernel key serial */
	char description[KH_DESC_MAX];
	struct kh_record *rec;   /* decoded with key_pem wiped and NULL */
	enum kh_cache_miss state;/* KH_MISS_NONE if valid */
	char problem[KH_ERROR_MAX];
};

/*
 * List records.  uid == (uid_t)-1 (root only): every uid the host issued
 * keys to or that holds keys; else that uid's (a user may list only their
 * own).  Root sees every record it issued, in any scope.  Caller frees with
 * kh_cache_entries_free.
 */
int kh_cache_list(uid_t uid, struct kh_cache_entry **out, size_t *n,
		  kh_error *err);
void kh_cache_entries_free(struct kh_cache_entry *e, size_t n);

#endif
