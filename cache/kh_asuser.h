/*
 * kh_asuser — root acting on a user's keys in its own thread, with the
 * user's filesystem ids.
 *
 * The kernel checks a key's permissions against the caller's fsuid and
 * fsgid (key_task_permission), never its real, effective or saved ids, and
 * a capability does not help.  So root with fsuid = the user may do to the
 * user's keys what the user may (see, read, search and so invalidate a
 * record) — and no process of the user's is involved that the user could
 * stop or kill.  Revocation and logout end a session this way: whatever
 * its target does, it happens, in bounded time.  (The keyring helper of
 * kh_keyops, which fully becomes the user, is left to what must resolve
 * the user's own keyrings: storing at login.)
 *
 * setfsuid and setfsgid change the calling thread's filesystem ids only;
 * kh_asuser_end restores root's, and checks that it did: the host process
 * (sshd, su, login) never goes on with changed credentials.
 *
 * Possession does not follow ids: what root's own keyrings reach stays
 * possessed, and a possessor bit grants its right whatever the fsuid
 * (measured: root with fsuid = the user invalidates a root key that gives
 * the possessor everything).  So every operation here first describes the
 * key and acts only on one owned by the user with a kubehsm description;
 * root's own keys and other users' are never touched.
 *
 * Return convention: kh_asuser_begin 0 or -1 with err; the key operations
 * 0 or an errno value.
 */
#ifndef KH_ASUSER_H
#define KH_ASUSER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <keyutils.h>

#include "lib/kh_error.h"

struct kh_asuser {
	uid_t uid;
	gid_t gid;
	gid_t saved_fsgid;    /* root's, restored by kh_asuser_end (its fsuid is 0) */
	bool active;
};

/* The primary group of uid's account, or nogroup (65534) for a uid with
 * no account. */
gid_t kh_asuser_account_gid(uid_t uid);

/* Root only: this thread's fsuid/fsgid become uid's (and its account's
 * group).  Every begin is followed by kh_asuser_end. */
int kh_asuser_begin(struct kh_asuser *as, uid_t uid, kh_error *err);

/* Root's filesystem ids back, checked: a thread that cannot get them back
 * must not go on in its host, and aborts (it cannot happen to root: any
 * id may set fsuid to its euid). */
void kh_asuser_end(struct kh_asuser *as);

/* Invalidate key if it is the user's and described "kubehsm:...". */
int kh_asuser_invalidate(const struct kh_asuser *as, key_serial_t key);

/* Link key (the user's, as above) into ring. */
int kh_asuser_link(const struct kh_asuser *as, key_serial_t key, key_serial_t ring);

/*
 * Invalidate every key of the user described exactly `desc` ("kubehsm:...")
 * — directly in `ring` when ring != 0, else wherever it is (every key the
 * user may see, from /proc/keys).  The serials that went are stored at
 * gone[*ngone] on (while below max), and *ngone counts each.  0, or an
 * errno value when the ring or /proc/keys could not be read.
 */
int kh_asuser_drop(const struct kh_asuser *as, key_serial_t ring, const char *desc,
		   key_serial_t *gone, size_t max, size_t *ngone);

/* The user's user keyring ("_uid.N", theirs), found by name in /proc/keys;
 * -1 when there is none or more than one (a user may name a keyring of
 * theirs so).  Only for what improves a message: nothing that must reach
 * the user depends on it. */
key_serial_t kh_asuser_user_keyring(const struct kh_asuser *as);

#endif
