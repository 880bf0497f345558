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
#include <time.h>
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

static long long
monotonic_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * flock has no timeout: try without blocking, then sleep a little and try
 * again until the deadline (no signal, no alarm: the PAM host owns
 * those).  The sleep is short next to an issuer's turn (a module set-up,
 * C_Login, a lookup and one signature: 5-15 ms on SoftHSM), so a waiter
 * takes the lock soon after it is free.
 */
int
kh_rundir_lock_issuer(unsigned timeout_ms, kh_error *err)
{
	const struct timespec pause = { 0, 2 * 1000 * 1000 };   /* 2 ms */
	char path[sizeof(KH_RUNDIR) + 96];
	long long deadline = monotonic_ms() + timeout_ms;
	int fd;

	if (kh_rundir_file("lock", "issuer", path, sizeof(path), err) != 0)
		return -1;
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot open %s: %s", path,
			       strerror(errno));
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			kh_fail(err, KH_ERR_INTERNAL, "cannot lock %s: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
		if (monotonic_ms() >= deadline) {
			kh_fail(err, KH_ERR_TOKEN, "the issuer is busy: no turn at it (%s) "
				"within %u ms", path, timeout_ms);
			close(fd);
			return -1;
		}
		(void)nanosleep(&pause, NULL);
	}
	return fd;
}

void
kh_rundir_unlock(int fd)
{
	if (fd >= 0)
		close(fd);   /* releases the flock */
}
