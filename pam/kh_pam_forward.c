/*
 * kh_pam_forward — the user's token forwarded from their laptop.
 *
 * p11-kit's client module reaches the token through the unix socket the
 * user's `ssh -R` made at the path policy names for their uid
 * (pkcs11.forward.socket).  This process is root and that path lies in a
 * directory the user controls, so two things stand between the user and
 * anything else on the host:
 *   - the path must be a socket the user owns, and not a link (lstat);
 *   - the connection is made with the user's file-system identity
 *     (setfsuid/setfsgid), so a link swapped in after the check still
 *     cannot reach what the user could not reach themselves — another
 *     user's forwarded token under their 0700 runtime directory, say.
 * p11-kit's client connects in C_Initialize, which kh_p11_open calls; the
 * identity goes back to root before anything else happens.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <syslog.h>

#include <security/pam_ext.h>

#include "lib/kh_pkcs11.h"
#include "pam/kh_pam.h"

#define KH_P11_KIT_ADDRESS_ENV "P11_KIT_SERVER_ADDRESS"

/* p11-kit reads "unix:path=" values percent-decoded; a path made of these
 * characters reads the same either way. */
static int
address_safe(const char *path)
{
	return path[strspn(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			   "0123456789/._-+")] == '\0';
}

/* 1: a socket of uid's own at path; 0: nothing there; -1: refused. */
static int
check_socket(const char *path, uid_t uid, kh_error *err)
{
	struct stat st;

	if (lstat(path, &st) != 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return kh_fail(err, KH_ERR_TOKEN, "forwarded token socket %s: %s", path,
			       strerror(errno));
	}
	if (!S_ISSOCK(st.st_mode))
		return kh_fail(err, KH_ERR_PERM, "%s is not a socket (%s); refusing it as "
			       "the forwarded token", path, S_ISLNK(st.st_mode) ? "a symbolic link" :
			       "another kind of file");
	if (st.st_uid != uid)
		return kh_fail(err, KH_ERR_PERM, "forwarded token socket %s belongs to uid "
			       "%u, not to the user (uid %u); refusing it", path,
			       (unsigned)st.st_uid, (unsigned)uid);
	if (!address_safe(path))
		return kh_fail(err, KH_ERR_CONFIG, "pkcs11.forward.socket: \"%s\" has characters "
			       "a p11-kit address cannot carry as they are", path);
	return 1;
}

/* Take uid/gid as the file-system identity; setfsuid reports no errors of
 * its own, so the result is read back. */
static int
set_fs_ids(uid_t uid, gid_t gid, kh_error *err)
{
	(void)setfsgid(gid);
	(void)setfsuid(uid);
	if ((uid_t)setfsuid((uid_t)-1) != uid || (gid_t)setfsgid((gid_t)-1) != gid)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot take uid %u gid %u as the "
			       "file-system identity", (unsigned)uid, (unsigned)gid);
	return 0;
}

static struct kh_p11 *
open_forwarded(const struct kh_policy *policy, const char *path, uid_t uid, gid_t gid,
	       kh_error *err)
{
	struct kh_p11 *p11 = NULL;
	char *address;
	size_t n = strlen(path) + sizeof("unix:path=");
	kh_error restore = { 0 };
	uid_t fsuid = (uid_t)setfsuid((uid_t)-1);
	gid_t fsgid = (gid_t)setfsgid((gid_t)-1);
	char *names[1] = { (char *)KH_P11_KIT_ADDRESS_ENV }, *values[1];
	/* Set only around C_Initialize and put back as it was (kh_env). */
	struct kh_env env = { names, values, 1 };

	address = malloc(n);
	if (address == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	(void)snprintf(address, n, "unix:path=%s", path);
	values[0] = address;
	if (set_fs_ids(uid, gid, err) == 0)
		p11 = kh_p11_open(policy->pkcs11.forward_module, &env, err);
	/* Back to what it was whatever happened.  (Failing that would leave
	 * this process with less access, not more; refused all the same.) */
	if (set_fs_ids(fsuid, fsgid, &restore) != 0) {
		kh_p11_close(p11);
		p11 = NULL;
		*err = restore;
	}
	free(address);
	return p11;
}

struct kh_p11 *
kh_pam_open_token_module(pam_handle_t *pamh, const struct kh_pam_opts *opts,
			 const struct kh_policy *policy, const char *user, uid_t uid,
			 gid_t gid, int *forwarded, kh_error *err)
{
	struct kh_p11 *p11;
	char *path;
	int r;

	*forwarded = 0;
	if (!opts->forwarded || policy->pkcs11.forward_module == NULL) {
		if (opts->forwarded)
			kh_pam_debug(pamh, opts, "user '%s': option forwarded, but the policy "
				     "has no pkcs11.forward: the bastion's module", user);
		return kh_p11_open(policy->pkcs11.module, &policy->pkcs11.env, err);
	}
	path = kh_policy_forward_socket(policy, uid, err);
	if (path == NULL)
		return NULL;
	r = check_socket(path, uid, err);
	if (r == 0) {
		kh_pam_debug(pamh, opts, "user '%s': no forwarded token at %s: the bastion's "
			     "module", user, path);
		free(path);
		return kh_p11_open(policy->pkcs11.module, &policy->pkcs11.env, err);
	}
	if (r < 0) {
		free(path);
		return NULL;
	}
	pam_syslog(pamh, LOG_INFO, "user '%s': token forwarded over %s", user, path);
	p11 = open_forwarded(policy, path, uid, gid, err);
	free(path);
	*forwarded = p11 != NULL;
	return p11;
}
