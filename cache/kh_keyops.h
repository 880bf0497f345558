/*
 * kh_keyops — root's operations on a user's keys, run as that user.
 *
 * A stored record grants nothing to its possessor and nothing to root: only
 * processes of the record's uid may see, read, link or invalidate it.  So
 * the root-side operations that must resolve the user's own keyrings
 * (linking a new record into the user keyring at login, reading and
 * re-storing the current one) run in a helper program, kubehsm-keyops,
 * that fully becomes the user — real,
 * effective, saved and filesystem uid and gid, no supplementary groups —
 * and reports back over a socket.  The host login program (sshd, su, sudo,
 * login) never changes its own credentials, whatever fails (the pattern of
 * pam_ecryptfs), and none of its memory is in a process of the user's.
 *
 * The helper inherits the caller's keyrings, so KEY_SPEC_SESSION_KEYRING is
 * the login's session keyring (set up by pam_keyinit) and
 * KEY_SPEC_USER_KEYRING resolves to the user's own.
 *
 * The user may signal that helper, so nothing that ends a session waits on
 * it: revocation and logout act with the user's filesystem ids in root's
 * own thread instead (kh_asuser.h).
 *
 * Return convention: kh_keyops_run returns 0 on success and -1 on failure
 * with err set; an operation that fails does not fail the call: its errno
 * is in its result.
 */
#ifndef KH_KEYOPS_H
#define KH_KEYOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <keyutils.h>

#include "lib/kh_error.h"

#define KH_KEYOPS_DESC_MAX 96

enum kh_keyop_kind {
	KH_KEYOP_DESCRIBE,    /* owner and permissions of `key` */
	KH_KEYOP_READ,        /* describe and read `key` */
	KH_KEYOP_LINK,        /* link `key` into `ring` */
	KH_KEYOP_INVALIDATE,  /* invalidate `key` */
	KH_KEYOP_SCAN,        /* the keys directly in `ring` whose description
			       * starts with `desc`; read them if `read` */
	KH_KEYOP_DROP,        /* invalidate the user's own keys directly in
			       * `ring` described exactly `desc` */
	KH_KEYOP_GUARD,       /* take write and setattr from whoever merely
			       * possesses `ring` (the user, its owner, keeps
			       * full rights): a process of another uid sharing
			       * the login's session keyring possesses the user's
			       * keyrings and could otherwise unlink or displace
			       * what they hold */
};

struct kh_keyop {
	enum kh_keyop_kind kind;
	key_serial_t key;
	key_serial_t ring;    /* KEY_SPEC_USER_KEYRING or KEY_SPEC_SESSION_KEYRING */
	const char *desc;
	bool read;
};

/* One answer: DESCRIBE, READ, LINK, INVALIDATE and GUARD give one each; SCAN and
 * DROP one per key they found. */
struct kh_keyop_result {
	size_t op;            /* index of the operation that produced it */
	int err;              /* 0 or the errno of the failed call */
	key_serial_t key;
	uid_t owner;          /* READ, SCAN */
	key_perm_t perm;
	char desc[KH_KEYOPS_DESC_MAX];
	char *payload;        /* READ, SCAN with read; NUL-terminated; may be
			       * SECRET: wiped by kh_keyop_results_free */
	size_t len;
};

/*
 * Run ops, in order, in the helper, which becomes uid (and that account's
 * primary group, or nogroup for a uid with no account).  Root, or a user
 * for their own uid (then the helper changes no ids).  At most
 * KH_KEYOPS_MAX_OPS (kh_keyops_wire.h) operations.
 * Every answer, including per-operation failures, is in *res; the call
 * itself fails (-1) only when the helper could not be run to completion.
 */
int kh_keyops_run(uid_t uid, const struct kh_keyop *ops, size_t nops,
		  struct kh_keyop_result **res, size_t *nres, kh_error *err);

void kh_keyop_results_free(struct kh_keyop_result *res, size_t n);

/* The first answer of operation `op`, or NULL. */
const struct kh_keyop_result *kh_keyop_result_of(const struct kh_keyop_result *res,
						 size_t n, size_t op);

#endif
