/*
 * kh_rundir — root-only runtime directories under KH_RUNDIR.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/kh_rundir.h"

/* mkdir that tolerates an existing entry, then insist on what we need. */
static int
ensure_private_dir(const char *path, kh_error *err)
{
	struct stat st;

	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot create %s: %s", path,
			       strerror(errno));
	if (lstat(path, &st) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot stat %s: %s", path,
			       strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077) != 0)
		return kh_fail(err, KH_ERR_PERM, "%s must be a directory owned by root "
			       "with no access for group or others (mode 0700)", path);
	return 0;
}

int
kh_rundir_sub(const char *sub, char *buf, size_t size, kh_error *err)
{
	int n;

	if (ensure_private_dir(KH_RUNDIR, err) != 0)
		return -1;
	n = snprintf(buf, size, "%s/%s", KH_RUNDIR, sub);
	if (n < 0 || (size_t)n >= size)
		return kh_fail(err, KH_ERR_INTERNAL, "runtime path too long");
	return ensure_private_dir(buf, err);
}

int
kh_rundir_file(const char *sub, const char *name, char *buf, size_t size,
	       kh_error *err)
{
	char dir[sizeof(KH_RUNDIR) + 64];
	int n;

	if (kh_rundir_sub(sub, dir, sizeof(dir), err) != 0)
		return -1;
	n = snprintf(buf, size, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= size)
		return kh_fail(err, KH_ERR_INTERNAL, "runtime path too long");
	return 0;
}

int
kh_rundir_lock_uid(uid_t uid, kh_error *err)
{
	char path[sizeof(KH_RUNDIR) + 96], name[32];
	int fd;

	(void)snprintf(name, sizeof(name), "%u", (unsigned)uid);
	if (kh_rundir_file("lock", name, path, sizeof(path), err) != 0)
		return -1;
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot open %s: %s", path,
			       strerror(errno));
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			kh_fail(err, KH_ERR_INTERNAL, "cannot lock %s: %s", path,
				strerror(errno));
			close(fd);
			return -1;
		}
	}
	return fd;
}

void
kh_rundir_unlock(int fd)
{
	if (fd >= 0)
		close(fd);   /* releases the flock */
}
