/*
 * kh_scan_fs — reading users' files as root without being led anywhere.
 *
 * The scan runs as root over directories their users control, who may
 * swap a file for a symbolic link to /etc/shadow, a FIFO that blocks a
 * reader for ever, or a device.  So: every open is relative to a directory
 * descriptor, with O_NOFOLLOW (a link is never followed, whatever its
 * target), O_NONBLOCK (a FIFO slipped in after the check cannot block the
 * open) and O_NOCTTY; what was opened is compared with what fstatat saw
 * before (same device and inode, still a regular file), and read only up
 * to a bound.  O_NOATIME keeps the users' access times as they were.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helper/kh_scan.h"
#include "lib/kh_mem.h"

static int
kh_scan_open_nofollow(int dirfd, const char *name, int flags)
{
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NOATIME);

	/* O_NOATIME needs the file's owner or CAP_FOWNER (root on an NFS
	 * export that squashes root has neither). */
	if (fd < 0 && errno == EPERM)
		fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	return fd;
}

static bool
kh_same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Read all of fd, up to max bytes; more is KH_ERR_QUOTA. */
static int
kh_scan_read_fd(int fd, size_t max, char **buf, size_t *len, kh_error *err)
{
	size_t cap = 4096, n = 0;
	char *b = malloc(cap), *nb;
	ssize_t r;

	if (b == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	for (;;) {
		if (n + 1 == cap) {
			if (cap > max + 1) {
				kh_secure_free(b, cap);
				return kh_fail(err, KH_ERR_QUOTA, "grew past %zu bytes while read",
					       max);
			}
			/* Grow by copying so the old buffer can be wiped. */
			nb = malloc(cap * 2);
			if (nb == NULL) {
				kh_secure_free(b, cap);
				return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
			}
			memcpy(nb, b, n);
			kh_secure_free(b, cap);
			b = nb;
			cap *= 2;
		}
		r = read(fd, b + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			kh_secure_free(b, cap);
			return kh_fail(err, KH_ERR_INPUT, "cannot read: %s", strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			kh_secure_free(b, cap);
			return kh_fail(err, KH_ERR_QUOTA, "grew past %zu bytes while read", max);
		}
	}
	b[n] = '\0';
	/* Hand back a buffer of exactly n + 1 bytes so that the caller's
	 * kh_secure_free(*buf, *len + 1) wipes all of it. */
	nb = malloc(n + 1);
	if (nb == NULL) {
		kh_secure_free(b, cap);
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	}
	memcpy(nb, b, n + 1);
	kh_secure_free(b, cap);
	*buf = nb;
	*len = n;
	return 0;
}

int
kh_scan_read_at(int dirfd, const char *name, const struct stat *expect, size_t max,
		char **buf, size_t *len, kh_error *err)
{
	struct stat st;
	int fd, rc;

	if (!S_ISREG(expect->st_mode))
		return kh_fail(err, KH_ERR_REFUSED, "not a regular file");
	if (expect->st_size > (off_t)max)
		return kh_fail(err, KH_ERR_QUOTA, "larger than %zu bytes", max);
	fd = kh_scan_open_nofollow(dirfd, name, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return kh_fail(err, errno == ELOOP ? KH_ERR_REFUSED : KH_ERR_INPUT,
			       "cannot open: %s", errno == ELOOP ? "it became a symbolic link"
			       : strerror(errno));
	if (fstat(fd, &st) != 0) {
		rc = kh_fail(err, KH_ERR_INPUT, "cannot stat: %s", strerror(errno));
	} else if (!S_ISREG(st.st_mode) || !kh_same_file(&st, expect)) {
		rc = kh_fail(err, KH_ERR_REFUSED, "replaced while being scanned");
	} else if (st.st_size > (off_t)max) {
		rc = kh_fail(err, KH_ERR_QUOTA, "larger than %zu bytes", max);
	} else {
		rc = kh_scan_read_fd(fd, max, buf, len, err);
	}
	(void)close(fd);
	return rc;
}

int
kh_scan_opendir_at(int dirfd, const char *name, const struct stat *expect, kh_error *err)
{
	struct stat st;
	int fd = kh_scan_open_nofollow(dirfd, name, O_RDONLY | O_DIRECTORY | O_NONBLOCK);

	if (fd < 0)
		return kh_fail(err, errno == ENOENT ? KH_ERR_NOTFOUND : KH_ERR_INPUT,
			       "cannot open: %s", strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    (expect != NULL && !kh_same_file(&st, expect))) {
		(void)close(fd);
		return kh_fail(err, KH_ERR_REFUSED, "replaced while being scanned");
	}
	return fd;
}

int
kh_scan_read_rel(int rootfd, const char *rel, size_t max, struct stat *st, char **buf,
		 size_t *len, kh_error *err)
{
	char comp[NAME_MAX + 1];
	const char *p = rel, *slash;
	int dirfd = rootfd, next, rc;

	while ((slash = strchr(p, '/')) != NULL) {
		size_t n = (size_t)(slash - p);

		if (n == 0) {
			p++;
			continue;
		}
		if (n > NAME_MAX) {
			rc = kh_fail(err, KH_ERR_INPUT, "a path component too long");
			goto out;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		if (fstatat(dirfd, comp, st, AT_SYMLINK_NOFOLLOW) != 0) {
			rc = kh_fail(err, KH_ERR_NOTFOUND, "cannot stat: %s", strerror(errno));
			goto out;
		}
		if (S_ISLNK(st->st_mode)) {
			rc = kh_fail(err, KH_ERR_REFUSED, "a symbolic link on the way, not followed");
			goto out;
		}
		next = kh_scan_opendir_at(dirfd, comp, st, err);
		if (next < 0) {
			rc = -1;
			goto out;
		}
		if (dirfd != rootfd)
			(void)close(dirfd);
		dirfd = next;
		p = slash + 1;
	}
	if (fstatat(dirfd, p, st, AT_SYMLINK_NOFOLLOW) != 0)
		rc = kh_fail(err, KH_ERR_NOTFOUND, "cannot stat: %s", strerror(errno));
	else if (S_ISLNK(st->st_mode))
		rc = kh_fail(err, KH_ERR_REFUSED, "a symbolic link, not followed");
	else if (!S_ISREG(st->st_mode))
		rc = kh_fail(err, KH_ERR_REFUSED, "not a regular file, not opened");
	else
		rc = kh_scan_read_at(dirfd, p, st, max, buf, len, err);
out:
	if (dirfd != rootfd)
		(void)close(dirfd);
	return rc;
}
