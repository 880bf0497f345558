/*
 * kh_cache_account — the reader's account check that asks the account
 * database, and kh_cache_find and kh_cache_find_key, which use it.
 *
 * A file of its own: getpwuid_r goes through NSS, which a static program
 * (the kubehsm front end) must not call — glibc would dlopen the NSS
 * modules of whatever glibc is installed into it.  A program that never
 * names these functions links none of this.
 */
#include "config.h"

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
