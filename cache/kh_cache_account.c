/*
 * kh_cache_account — the reader's account check that asks the account
 * database, and kh_cache_find and kh_cache_find_key, which use it; and the
 * user ending their own session, whose "ended" marker names the account.
 *
 * A file of its own: getpwuid_r goes through NSS, which a static program
 * (the kubehsm front end) must not call — glibc would dlopen the NSS
 * modules of whatever glibc is installed into it.  A program that never
 * names these functions links none of this.
 */
#include "config.h"

#include <errno.h>
#include <keyutils.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "cache/kh_cache_int.h"

int
kh_cache_account_db(const char *user, kh_error *err)
{
	struct passwd pw, *found = NULL;
	char buf[4096];

	if (kh_cache_account_logname(user, err) == 0)
		return 0;
	if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &found) != 0 || found == NULL)
		return kh_fail(err, KH_ERR_REFUSED, "uid %u has no account name to match "
			       "the session record against", (unsigned)getuid());
	if (strcmp(user, found->pw_name) != 0)
		return kh_fail(err, KH_ERR_REFUSED, "the session record was issued to user "
			       "'%s', not to '%s' (a reused uid?)", user, found->pw_name);
	return 0;
}

int
kh_cache_find(const char *issuer_id, struct kh_record **out,
	      enum kh_cache_miss *miss, kh_error *err)
{
	return kh_cache_lookup(issuer_id, KH_RECORD_TAKE_PEMS, kh_cache_account_db, out, miss, err);
}

int
kh_cache_find_key(const char *issuer_id, struct kh_record **out,
		  enum kh_cache_miss *miss, kh_error *err)
{
	return kh_cache_lookup(issuer_id, KH_RECORD_TAKE_KEY, kh_cache_account_db, out, miss, err);
}

/* The caller's account name for its marker, or NULL (no marker then). */
static const char *
own_account(char *buf, size_t size, struct passwd *pw)
{
	struct passwd *found = NULL;

	if (getpwuid_r(getuid(), pw, buf, size, &found) != 0 || found == NULL)
		return NULL;
	return found->pw_name;
}

int
kh_cache_revoke_own(const char *issuer_id, kh_error *err)
{
	char desc[KH_DESC_MAX], payload[KH_MARKER_MAX], pwbuf[4096];
	struct passwd pw;
	key_serial_t key;
	int n;

	if (issuer_id == NULL)
		issuer_id = "";
	if (kh_record_description("session", issuer_id, desc, sizeof(desc), err) != 0)
		return -1;
	errno = 0;
	if (keyctl_search(KEY_SPEC_USER_KEYRING, "user", desc, 0) < 0 &&
	    kh_cache_keyring_unsupported(errno))
		return kh_cache_keyring_fail(err, errno, "searching the keyring");
	n = kh_cache_drop_own(desc);
	if (kh_record_description("pin", issuer_id, desc, sizeof(desc), NULL) == 0)
		(void)kh_cache_drop_own(desc);
	if (n == 0)
		return 0;
	/* The marker is the user's own key, informational only. */
	if (kh_record_description("ended", issuer_id, desc, sizeof(desc), NULL) == 0) {
		int len = kh_cache_marker_format(payload, sizeof(payload), kh_cache_now(),
						 own_account(pwbuf, sizeof(pwbuf), &pw));

		/* Made in the process keyring, which this process possesses, so
		 * it can be made read-only like root's markers (readers take no
		 * other) before it goes into the user keyring — reached there by
		 * serial, a key the user does not possess grants them only what
		 * its user bits say. */
		key = len < 0 ? -1 : add_key("user", desc, payload, (size_t)len,
					     KEY_SPEC_PROCESS_KEYRING);
		if (key >= 0) {
			if (keyctl_set_timeout(key, KH_ENDED_MIN_TIMEOUT * 60) == 0 &&
			    keyctl_setperm(key, KH_CACHE_PERM) == 0)
				(void)keyctl_link(key, KEY_SPEC_USER_KEYRING);
			(void)keyctl_unlink(key, KEY_SPEC_PROCESS_KEYRING);
		}
	}
	return 1;
}
