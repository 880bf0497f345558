/*
 * kh_pam_forward — the user's token forwarded from their laptop.
 *
 * p11-kit's client module reaches the token through the unix socket the
 * user's `ssh -R` made at the path policy names for their uid
 * (pkcs11.forward.socket).  This process is root and that path lies in a
 * directory the user controls: it must be a socket the user owns, and not
 * a link (lstat) — checked here, so that the user is told plainly.  Root
 * itself never loads the client module nor connects to the socket: every
 * word with that token is had by a process that has become the user
 * (kh_pam_forward_child.c), so a link swapped in after the check reaches
 * nothing the user could not reach themselves, and the other end sees the
 * user's uid, not root's.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

#include <security/pam_ext.h>

#include "lib/kh_pkcs11.h"
#include "pam/kh_pam.h"

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

struct kh_p11 *
kh_pam_open_token_module(pam_handle_t *pamh, const struct kh_pam_opts *opts,
			 const struct kh_policy *policy, const char *user, uid_t uid,
			 char **forward_path, kh_error *err)
{
	char *path;
	int r;

	*forward_path = NULL;
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
	*forward_path = path;
	return NULL;
}
