/*
 * kh_policy_file — whether a file the policy trusts may be trusted, and
 * reading the policy file itself.
 *
 * Whoever can write the policy, a file it names, or any directory above
 * one can change who gets credentials: every such file must be root's (or
 * the trusted uid's) and closed to group and others, StrictModes-style, and
 * the issuer PIN file closed to everyone but its owner.  The policy is
 * opened without following links and read whole, bounded; what libconfig
 * would do on its own (@include) is refused before it sees the text.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libconfig.h>

#include "lib/kh_error.h"
#include "conf/kh_policy.h"
#include "conf/kh_policy_int.h"

/*
 * StrictModes for the directories above a file the policy trusts: whoever
 * may write one of them may replace the file.  Like OpenSSH's safe_path,
 * the path is resolved first; then every directory from the file's own up
 * to / must belong to root (or the trusted uid) and be closed to group and
 * others — unless it is a sticky directory of root's (or the trusted
 * uid's), such as /tmp: others may add entries there but can neither
 * rename nor remove another owner's, so a root-owned entry stays put.
 * 0 when safe; 1 with *bad (a copy of the offending directory, caller
 * frees) and *st; -1 with errno when the path cannot be resolved.
 */
static int
kh_unsafe_ancestor(const char *path, uid_t trusted, char **bad, struct stat *st)
{
	char *real = realpath(path, NULL), *slash;

	*bad = NULL;
	if (real == NULL)
		return -1;
	for (;;) {
		slash = strrchr(real, '/');
		if (slash == NULL)
			break;
		if (slash == real)
			slash[1] = '\0';   /* "/" itself */
		else
			*slash = '\0';
		if (stat(real, st) != 0) {
			free(real);
			return -1;
		}
		if ((st->st_uid != 0 && st->st_uid != trusted) ||
		    ((st->st_mode & 022) != 0 && (st->st_mode & S_ISVTX) == 0)) {
			*bad = real;
			return 1;
		}
		if (real[1] == '\0')
			break;
	}
	free(real);
	return 0;
}

/* kh_unsafe_ancestor as a policy error at setting s (NULL: the file). */
static int
kh_check_ancestors(const struct kh_loader *ld, const config_setting_t *s,
		   const char *what, const char *path)
{
	struct stat st;
	char *bad = NULL;
	int rc = kh_unsafe_ancestor(path, ld->opts->trusted_uid, &bad, &st);

	if (rc == 0)
		return 0;
	if (rc < 0)
		rc = s != NULL ? kh_pol_fail_at(ld, s, "%s %s: %s", what, path, strerror(errno))
			       : kh_fail(ld->err, KH_ERR_CONFIG, "%s: %s", path, strerror(errno));
	else if (st.st_uid != 0 && st.st_uid != ld->opts->trusted_uid)
		rc = s != NULL
			? kh_pol_fail_at(ld, s, "%s %s: directory %s is owned by uid %lu; whoever owns "
					 "it can replace the file", what, path, bad,
					 (unsigned long)st.st_uid)
			: kh_fail(ld->err, KH_ERR_CONFIG, "%s: directory %s is owned by uid %lu; "
				  "whoever owns it can change the policy", path, bad,
				  (unsigned long)st.st_uid);
	else
		rc = s != NULL
			? kh_pol_fail_at(ld, s, "%s %s: directory %s has mode %04o: group/others can "
					 "replace the file; chmod go-w %s", what, path, bad,
					 (unsigned int)(st.st_mode & 07777), bad)
			: kh_fail(ld->err, KH_ERR_CONFIG, "%s: directory %s has mode %04o: "
				  "group/others could change the policy; chmod go-w %s", path,
				  bad, (unsigned int)(st.st_mode & 07777), bad);
	free(bad);
	return rc;
}

int
kh_pol_check_named_file(const struct kh_loader *ld, const config_setting_t *s,
			const char *what, const char *path, enum kh_file_kind kind)
{
	struct stat st;
	int fd, flags = O_PATH | O_CLOEXEC;
	uid_t trusted = ld->opts->trusted_uid;

	if (ld->opts->skip_file_checks || path[0] == '\0')
		return 0;
	if (kind == KH_FILE_SECRET && ld->opts->skip_secret_file_checks)
		return 0;
	/*
	 * O_PATH: the loader only inspects these files and never reads them
	 * (the PIN least of all), and fstat on the descriptor describes the
	 * very file that was resolved.  A PIN file must not be a symlink, so
	 * nobody can point it elsewhere.
	 */
	if (kind == KH_FILE_SECRET)
		flags |= O_NOFOLLOW;
	fd = open(path, flags);
	if (fd < 0)
		return kh_pol_fail_at(ld, s, "%s %s: %s", what, path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		int e = errno;

		(void)close(fd);
		return kh_pol_fail_at(ld, s, "%s %s: %s", what, path, strerror(e));
	}
	(void)close(fd);
	if (S_ISLNK(st.st_mode))
		return kh_pol_fail_at(ld, s, "%s %s: is a symbolic link; name the file itself",
				      what, path);
	if (!S_ISREG(st.st_mode))
		return kh_pol_fail_at(ld, s, "%s %s: not a regular file", what, path);
	if (kind != KH_FILE_SECRET && st.st_uid != 0 && st.st_uid != trusted)
		return kh_pol_fail_at(ld, s, "%s %s: owned by uid %lu; it must be owned by root%s",
				      what, path, (unsigned long)st.st_uid,
				      trusted != 0 ? " or the trusted uid" : "");
	if (kind == KH_FILE_SECRET) {
		if (st.st_uid != trusted)
			return kh_pol_fail_at(ld, s, "%s %s: owned by uid %lu; the issuer PIN file "
					      "must be owned by uid %lu", what, path,
					      (unsigned long)st.st_uid, (unsigned long)trusted);
		if ((st.st_mode & 077) != 0)
			return kh_pol_fail_at(ld, s, "%s %s: mode %04o lets group/others read the "
					      "issuer PIN; chmod 0600 %s", what, path,
					      (unsigned int)(st.st_mode & 07777), path);
	} else if ((st.st_mode & 022) != 0) {
		return kh_pol_fail_at(ld, s, "%s %s: mode %04o lets group/others replace a file "
				      "the policy trusts; chmod go-w %s", what, path,
				      (unsigned int)(st.st_mode & 07777), path);
	}
	return kh_check_ancestors(ld, s, what, path);
}

/* The config and its directory: a non-root writer could rewrite the policy. */
static int
kh_check_owner_mode(const struct kh_loader *ld, const struct stat *st,
		    const char *what, const char *path)
{
	uid_t trusted = ld->opts->trusted_uid;

	if (st->st_uid != trusted && st->st_uid != 0)
		return kh_fail(ld->err, KH_ERR_CONFIG,
			       "%s: %s owned by uid %lu; it must be owned by %s (uid %lu)",
			       ld->name, what, (unsigned long)st->st_uid,
			       trusted == 0 ? "root" : "the trusted user", (unsigned long)trusted);
	if ((st->st_mode & 022) != 0)
		return kh_fail(ld->err, KH_ERR_CONFIG,
			       "%s: %s %s has mode %04o: group/others could change the policy; "
			       "chmod go-w %s", ld->name, what, path,
			       (unsigned int)(st->st_mode & 07777), path);
	return 0;
}

/* Open the policy file race-free: check its directory, then openat() in it. */
int
kh_pol_open_file(const struct kh_loader *ld, const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash != NULL ? slash + 1 : path;
	char *dir;
	struct stat st;
	int dfd, fd, e;

	if (base[0] == '\0')
		return kh_fail(ld->err, KH_ERR_CONFIG, "%s: names a directory, not a file", path);
	if (slash == NULL)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (dir == NULL)
		return kh_pol_fail_oom(ld);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		e = errno;
		kh_fail(ld->err, KH_ERR_CONFIG, "%s: cannot open directory %s: %s",
			path, dir, strerror(e));
		free(dir);
		return -1;
	}
	if (fstat(dfd, &st) != 0 ||
	    kh_check_owner_mode(ld, &st, "directory", dir) != 0) {
		if (ld->err->code == KH_OK)
			kh_fail(ld->err, KH_ERR_CONFIG, "%s: %s: %s", path, dir, strerror(errno));
		(void)close(dfd);
		free(dir);
		return -1;
	}
	free(dir);
	fd = openat(dfd, base, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	e = errno;
	(void)close(dfd);
	if (fd < 0 && e == ELOOP)
		return kh_fail(ld->err, KH_ERR_CONFIG,
			       "%s: is a symbolic link; name the policy file itself", path);
	if (fd < 0)
		return kh_fail(ld->err, KH_ERR_CONFIG, "%s: cannot open: %s", path, strerror(e));
	if (fstat(fd, &st) != 0) {
		e = errno;
		(void)close(fd);
		return kh_fail(ld->err, KH_ERR_CONFIG, "%s: %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode) || kh_check_owner_mode(ld, &st, "file", path) != 0 ||
	    kh_check_ancestors(ld, NULL, "policy", path) != 0) {
		if (!S_ISREG(st.st_mode))
			kh_fail(ld->err, KH_ERR_CONFIG, "%s: not a regular file", path);
		(void)close(fd);
		return -1;
	}
	return fd;
}

/* Read the whole (bounded) file; returns a NUL-terminated buffer. */
char *
kh_pol_read_file(const struct kh_loader *ld, int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap), *nbuf;
	ssize_t r;

	if (buf == NULL)
		return kh_pol_fail_oom(ld), NULL;
	for (;;) {
		if (len + 1 >= cap) {
			if (len > KH_POLICY_MAX_SIZE) {
				kh_fail(ld->err, KH_ERR_CONFIG, "%s: larger than %d bytes",
					ld->name, KH_POLICY_MAX_SIZE);
				free(buf);
				return NULL;
			}
			cap *= 2;
			nbuf = realloc(buf, cap + 1);
			if (nbuf == NULL) {
				free(buf);
				return kh_pol_fail_oom(ld), NULL;
			}
			buf = nbuf;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			kh_fail(ld->err, KH_ERR_CONFIG, "%s: read: %s", ld->name, strerror(errno));
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len > KH_POLICY_MAX_SIZE) {
		kh_fail(ld->err, KH_ERR_CONFIG, "%s: larger than %d bytes",
			ld->name, KH_POLICY_MAX_SIZE);
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	if (strlen(buf) != len) {
		kh_fail(ld->err, KH_ERR_CONFIG, "%s: contains a NUL byte; not a text file", ld->name);
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * Refuse @include before libconfig sees it: an included file would escape
 * the owner and mode checks made on this one, and libconfig would open it.
 * Also refuse text libconfig cannot number (line numbers are 16-bit).
 */
int
kh_pol_check_text(const struct kh_loader *ld, const char *text)
{
	const char *p = text;
	unsigned long line = 1;

	for (;;) {
		const char *q = p;

		while (*q == ' ' || *q == '\t')
			q++;
		if (strncmp(q, "@include", 8) == 0)
			return kh_fail(ld->err, KH_ERR_CONFIG,
				       "%s:%lu: @include is not allowed: the whole policy must be "
				       "in this one checked file", ld->name, line);
		p = strchr(p, '\n');
		if (p == NULL)
			return 0;
		p++;
		if (++line > USHRT_MAX)
			return kh_fail(ld->err, KH_ERR_CONFIG, "%s: more than %u lines",
				       ld->name, USHRT_MAX);
	}
}
