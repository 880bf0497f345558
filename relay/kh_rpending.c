/*
 * kh_rpending — forgets asked for while kubehsm-relayd was not running.
 *
 * Its keyring store outlives the daemon, so a session a user logged out of
 * (or an admin revoked) while the relay was down would be served again at
 * its next start.  Root's side (kh_relay_client) leaves a note per uid in
 * KH_RUNDIR/relay-forget, dated by its mtime; the relay takes the notes as
 * root at start, before the drop, and removes them.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/kh_relay_client.h"
#include "relay/kh_relayd.h"
#include "relay/kh_rlog.h"
#include "lib/kh_rundir.h"

#define KH_RPENDING_MAX 65536

static int
kh_rpending_one(int dfd, const char *name, struct kh_rpending *p)
{
	struct stat st;
	char *end;
	unsigned long uid;
	ssize_t n;
	int fd;

	errno = 0;
	uid = strtoul(name, &end, 10);
	if (name[0] < '0' || name[0] > '9' || *end != '\0' || errno != 0 ||
	    uid >= (unsigned long)(uid_t)-1)
		return -1;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
		(void)close(fd);
		return -1;
	}
	n = read(fd, p->reason, sizeof(p->reason) - 1);
	(void)close(fd);
	p->reason[n > 0 ? n : 0] = '\0';
	if (strcmp(p->reason, "logout") != 0 && strcmp(p->reason, "revoked") != 0)
		(void)strcpy(p->reason, "revoked");
	p->uid = (uid_t)uid;
	p->when = st.st_mtime;
	return 0;
}

int
kh_rpending_take(struct kh_rpending **out, size_t *n, kh_error *err)
{
	char dir[256];
	struct dirent *de;
	struct kh_rpending *p = NULL, *np;
	size_t cap = 0;
	DIR *d;

	*out = NULL;
	*n = 0;
	if (kh_rundir_sub(KH_RELAY_PENDING_DIR, dir, sizeof(dir), err) != 0)
		return -1;
	d = opendir(dir);
	if (d == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d)) != NULL && *n < KH_RPENDING_MAX) {
		if (de->d_name[0] == '.')
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			np = realloc(p, cap * sizeof(*p));
			if (np == NULL) {
				free(p);
				(void)closedir(d);
				return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
			}
			p = np;
		}
		if (kh_rpending_one(dirfd(d), de->d_name, &p[*n]) == 0)
			(*n)++;
		/* Taken (or not ours to read): either way it is done with. */
		if (unlinkat(dirfd(d), de->d_name, 0) != 0)
			kh_rlog(LOG_WARNING, "%s/%s: cannot remove: %s", dir, de->d_name,
				strerror(errno));
	}
	(void)closedir(d);
	*out = p;
	return 0;
}
