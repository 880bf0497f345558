/*
 * kh_index — root's own record of the keys it issued to each uid.
 *
 * A user may link their record into any keyring of theirs, unlink it from
 * the user keyring, or keep it alive in a tmux server's session keyring;
 * and root cannot even see a record it handed over.  So root remembers
 * what it issued — key serial, kind, issuer, scope, expiry — and how many
 * logins of the uid are open, in KH_RUNDIR/index/<uid>.json (root-only, on tmpfs, gone at reboot like
 * the keys themselves).  Revocation, logout accounting and the admin views
 * act on those serials, wherever the keys were linked.
 *
 * Every change happens under the uid's lock (kh_rundir_lock_uid).
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set, unless noted (kh_uids_push takes no err).
 */
#ifndef KH_INDEX_H
#define KH_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/kh_error.h"
#include "cache/kh_record.h"

#define KH_INDEX_MAX_ENTRIES 256

enum kh_index_kind {
	KH_INDEX_SESSION,     /* a session record */
	KH_INDEX_PIN,         /* a cached PIN (session.cache_pin) */
};

struct kh_index_entry {
	enum kh_index_kind kind;
	char issuer[KH_ISSUER_ID_MAX + 1];
	enum kh_scope scope;
	int32_t serial;
	unsigned logins;          /* session records of scope user */
	int64_t created;
	int64_t expires;
};

struct kh_index {
	uid_t uid;
	char user[256];           /* the account the keys were issued to */
	unsigned logins;          /* open PAM sessions of the uid through
				   * pam_kubehsm, minting or not: a scope-user
				   * record lives while one is open */
	struct kh_index_entry *e;
	size_t n;
};

/* Load uid's index; a missing file, or one of another format version (an
 * upgrade without a reboot), is an empty index.  0 or -1. */
int kh_index_load(uid_t uid, struct kh_index *ix, kh_error *err);

/* Write it back atomically (an empty index removes the file).  0 or -1. */
int kh_index_save(const struct kh_index *ix, kh_error *err);

void kh_index_clear(struct kh_index *ix);

int kh_index_add(struct kh_index *ix, const struct kh_index_entry *e, kh_error *err);
void kh_index_remove(struct kh_index *ix, size_t i);

/* Drop entries past their expiry (the kernel has dropped their keys). */
void kh_index_prune_expired(struct kh_index *ix, int64_t now);

/* Every uid that has an index.  Caller frees *uids.  0 or -1. */
int kh_index_uids(uid_t **uids, size_t *n, kh_error *err);

/* Append u to the growing array *v (*n used, *cap allocated).  -1 when out
 * of memory, with *v unchanged (the caller frees it). */
int kh_uids_push(uid_t **v, size_t *n, size_t *cap, uid_t u);

const char *kh_index_kind_name(enum kh_index_kind k);

#endif
