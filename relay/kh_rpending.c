/*
 * kh_rpending — root's forget notes (see kh_rpending.h).
 *
 * A note's name says everything ("UID-REASON-NANOSECONDS"), so the relay,
 * no longer root, can act on it with nothing but the directory descriptor
 * it opened as root: reading a directory it already has open needs no
 * permission on it, while opening a file in it would.  Notes of the old
 * form (the name a uid, the reason inside, dated by mtime) are read at
 * start, as root, and nowhere else.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/kh_relay_client.h"
#include "lib/kh_rundir.h"
#include "relay/kh_rlog.h"
#include "relay/kh_rpending.h"
#include "relay/kh_rsession.h"

#define KH_RPENDING_MAX 65536

static int
kh_rpending_uid(const char *s, char **end, uid_t *uid)
{
	unsigned long v;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoul(s, end, 10);
	if (errno != 0 || v >= (unsigned long)(uid_t)-1)
		return -1;
	*uid = (uid_t)v;
	return 0;
}

int
kh_rpending_parse(const char *name, struct kh_rpending *p)
{
	const char *reasons[] = { "logout", "revoked" };
	char *end;
	size_t i, n;
	long long ns;

	memset(p, 0, sizeof(*p));
	if (kh_rpending_uid(name, &end, &p->uid) != 0 || *end != '-')
		return -1;
	name = end + 1;
	for (i = 0; i < 2; i++) {
		n = strlen(reasons[i]);
		if (strncmp(name, reasons[i], n) == 0 && name[n] == '-')
			break;
	}
	if (i == 2)
		return -1;
	memcpy(p->reason, reasons[i], strlen(reasons[i]) + 1);
	name += strlen(reasons[i]) + 1;
	if (name[0] < '0' || name[0] > '9')
		return -1;
	errno = 0;
	ns = strtoll(name, &end, 10);
	if (errno != 0 || *end != '\0' || ns <= 0)
		return -1;
	p->when_ns = (int64_t)ns;
	return 0;
}

/* A note of the old form: uid as the name, the reason inside, mtime. */
static int
kh_rpending_old(int dfd, const char *name, struct kh_rpending *p)
{
	struct stat st;
	char *end;
	ssize_t n;
	int fd;

	memset(p, 0, sizeof(*p));
	if (kh_rpending_uid(name, &end, &p->uid) != 0 || *end != '\0')
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
	if (strcmp(p->reason, "logout") != 0)
		(void)snprintf(p->reason, sizeof(p->reason), "revoked");
	p->when_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	return 0;
}

int
kh_rpending_open(struct kh_relayd *rd, struct kh_rpending **out, size_t *n, kh_error *err)
{
	char dir[256];
	struct dirent *de;
	struct kh_rpending *p = NULL, *np;
	size_t cap = 0;
	DIR *d;
	int fd;

	*out = NULL;
	*n = 0;
	if (kh_rundir_sub(KH_RELAY_PENDING_DIR, dir, sizeof(dir), err) != 0)
		return -1;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return kh_fail(err, KH_ERR_INTERNAL, "%s: %s", dir, strerror(errno));
	/* The running relay's view of the notes: this descriptor, kept. */
	rd->pending_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	d = fdopendir(fd);
	if (d == NULL) {
		(void)close(fd);
		return kh_fail(err, KH_ERR_INTERNAL, "%s: %s", dir, strerror(errno));
	}
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
		if (kh_rpending_parse(de->d_name, &p[*n]) == 0 ||
		    kh_rpending_old(dirfd(d), de->d_name, &p[*n]) == 0)
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

void
kh_rpending_apply(struct kh_relayd *rd, const struct kh_rpending *p, size_t n)
{
	size_t i;
	unsigned k;

	for (i = 0; i < n; i++) {
		/* ended_why must outlive p: one of the static names. */
		const char *why = strcmp(p[i].reason, "logout") == 0 ? "logout" : "revoked";

		k = kh_rsession_forget_before(rd, p[i].uid, p[i].when_ns, why);
		if (k > 0)
			kh_rlog(LOG_INFO, "uid %u: %u session(s) ended (%s) by a note root left "
				"when it could not tell the relay", (unsigned)p[i].uid, k, why);
	}
}

/* Every KH_RPENDING_SCAN_MS: the notes root left since. */
static void
kh_rpending_scan(evutil_socket_t fd, short what, void *arg)
{
	struct kh_relayd *rd = arg;
	struct kh_rpending p;
	struct dirent *de;
	DIR *d;
	int dfd;

	(void)fd;
	(void)what;
	/* A fresh stream on the kept descriptor: rewinding needs no permission. */
	dfd = fcntl(rd->pending_fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return;
	d = fdopendir(dfd);
	if (d == NULL) {
		(void)close(dfd);
		return;
	}
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] != '.' && kh_rpending_parse(de->d_name, &p) == 0)
			kh_rpending_apply(rd, &p, 1);
	}
	(void)closedir(d);
}

int
kh_rpending_start(struct kh_relayd *rd, kh_error *err)
{
	struct timeval tv = { .tv_sec = KH_RPENDING_SCAN_MS / 1000,
			      .tv_usec = KH_RPENDING_SCAN_MS % 1000 * 1000 };

	if (rd->pending_fd < 0)
		return 0;
	rd->pending_scan = event_new(rd->base, -1, EV_PERSIST, kh_rpending_scan, rd);
	if (rd->pending_scan == NULL || event_add(rd->pending_scan, &tv) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot arm the forget-note timer");
	return 0;
}
