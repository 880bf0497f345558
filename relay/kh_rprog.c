/*
 * kh_rprog — the /proc scan, and the finder process that runs it.
 *
 * Why a process of its own, and these two capabilities: reading another
 * uid's /proc/PID/fd takes CAP_DAC_READ_SEARCH (the directory is its
 * owner's, mode 0500) and resolving its links, or /proc/PID/exe, takes
 * CAP_SYS_PTRACE (ptrace_may_access, PTRACE_MODE_READ) — measured: either
 * alone fails.  No smaller grant does it (setfsuid to the peer needs
 * CAP_SETUID, which is more, and misses non-dumpable processes).  Both are
 * much more than the network-facing relay should hold, so the relay keeps
 * none, and this process — no listening socket, no TLS, no key, no file
 * but /proc, fed fixed-size questions (a tag, an inode, a uid) — keeps
 * them, as the relay's uid, with no_new_privs, not dumpable, and an empty
 * bounding set besides them.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "relay/kh_rprog.h"

/* ------------------------------------------------------------------ */
/* the scan                                                             */

static bool
kh_rprog_holds(int pidfd_dir, const char *want)
{
	char link[64];
	struct dirent *e;
	ssize_t n;
	DIR *d;
	int fd = openat(pidfd_dir, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool found = false;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			(void)close(fd);
		return false;
	}
	while (!found && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		found = strcmp(link, want) == 0;
	}
	(void)closedir(d);
	return found;
}

static void
kh_rprog_describe(int dir, struct kh_rprog *p)
{
	ssize_t n, i;
	char buf[KH_RPROG_CMD_MAX + 1];
	int fd;

	n = readlinkat(dir, "exe", p->exe, sizeof(p->exe) - 1);
	p->exe[n > 0 ? n : 0] = '\0';
	p->cmdline[0] = '\0';
	fd = openat(dir, "cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	/* One byte more than kept: it says the line was cut. */
	n = read(fd, buf, sizeof(buf));
	(void)close(fd);
	if (n <= 0)
		return;
	p->cmdline_cut = n > KH_RPROG_CMD_MAX;
	if (p->cmdline_cut)
		n = KH_RPROG_CMD_MAX;
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (i = 0; i < n; i++)
		p->cmdline[i] = buf[i] == '\0' ? ' ' : buf[i];
	p->cmdline[n] = '\0';
}

/*
 * Where to look first.  A client usually makes several connections (the
 * pids found last), or is new (the highest pids: pids are handed out in
 * increasing order until they wrap), so those are read first; the rest
 * of the uid's processes only when neither holds the socket.
 */
#define KH_RPROG_RECENT 16
static int32_t kh_rprog_recent[KH_RPROG_RECENT];
static unsigned kh_rprog_recent_next;

/* Read the process `pid` (if it is uid's): 1 it holds the socket (p is
 * filled), 0 not, -1 not uid's or gone. */
static int
kh_rprog_try(int procfd, int32_t pid, uid_t uid, const char *want, struct kh_rprog *p)
{
	char name[16];
	struct stat st;
	int dir, rc;

	snprintf(name, sizeof(name), "%d", (int)pid);
	/* /proc/PID belongs to the process's euid: a stat, no open, skips
	 * every process of another user. */
	if (fstatat(procfd, name, &st, 0) != 0 || st.st_uid != uid)
		return -1;
	dir = openat(procfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -1;
	rc = kh_rprog_holds(dir, want) ? 1 : 0;
	if (rc == 1) {
		p->pid = pid;
		kh_rprog_describe(dir, p);
	}
	(void)close(dir);
	return rc;
}

void
kh_rprog_forget(void)
{
	memset(kh_rprog_recent, 0, sizeof(kh_rprog_recent));
	kh_rprog_recent_next = 0;
}

static int
kh_rprog_cmp_desc(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return x > y ? -1 : x < y;
}

unsigned
kh_rprog_find(uint64_t inode, uid_t uid, struct kh_rprog *p)
{
	char want[48];
	unsigned looked = 0, i;
	int32_t *pids = NULL, *np;
	size_t n = 0, cap = 0, k;
	struct dirent *e;
	struct stat st;
	DIR *proc;
	int r;

	memset(p, 0, sizeof(*p));
	snprintf(want, sizeof(want), "socket:[%llu]", (unsigned long long)inode);
	proc = opendir("/proc");
	if (proc == NULL)
		return 0;
	for (i = 0; i < KH_RPROG_RECENT; i++) {
		if (kh_rprog_recent[i] <= 0)
			continue;
		r = kh_rprog_try(dirfd(proc), kh_rprog_recent[i], uid, want, p);
		looked += r >= 0;
		if (r == 1)
			goto found;
	}
	while ((e = readdir(proc)) != NULL) {
		if (!isdigit((unsigned char)e->d_name[0]) ||
		    fstatat(dirfd(proc), e->d_name, &st, 0) != 0 || st.st_uid != uid)
			continue;
		if (n == cap) {
			cap = cap != 0 ? cap * 2 : 256;
			np = realloc(pids, cap * sizeof(*pids));
			if (np == NULL)
				break;          /* look at what was listed */
			pids = np;
		}
		pids[n++] = (int32_t)strtol(e->d_name, NULL, 10);
	}
	if (n > 0)
		qsort(pids, n, sizeof(*pids), kh_rprog_cmp_desc);
	for (k = 0; k < n; k++) {
		r = kh_rprog_try(dirfd(proc), pids[k], uid, want, p);
		looked += r >= 0;
		if (r == 1)
			break;
	}
found:
	if (p->pid > 0) {
		for (i = 0; i < KH_RPROG_RECENT && kh_rprog_recent[i] != p->pid; i++)
			;
		if (i == KH_RPROG_RECENT) {
			kh_rprog_recent[kh_rprog_recent_next] = p->pid;
			kh_rprog_recent_next = (kh_rprog_recent_next + 1) % KH_RPROG_RECENT;
		}
	}
	free(pids);
	(void)closedir(proc);
	return looked;
}

/* ------------------------------------------------------------------ */
/* the finder                                                           */

struct kh_rprog_req {
	uint64_t tag;
	uint64_t inode;
	uint32_t uid;
};

struct kh_rprog_ans {
	uint64_t tag;
	struct kh_rprog prog;
};

static int
kh_rprog_keep_caps(uid_t uid, gid_t gid)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	const uint32_t keep = (1u << CAP_SYS_PTRACE) | (1u << CAP_DAC_READ_SEARCH);
	int c;

	for (c = 0; c <= CAP_LAST_CAP; c++)
		if (c != CAP_SYS_PTRACE && c != CAP_DAC_READ_SEARCH &&
		    prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno != EINVAL)
			return -1;
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0 || setgroups(0, NULL) != 0 ||
	    setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0)
		return -1;
	memset(d, 0, sizeof(d));
	d[0].effective = d[0].permitted = keep;
	if (syscall(SYS_capset, &h, d) != 0 || prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) != 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		return -1;
	/* Proof, as kh_rpriv_drop does: root is out of reach. */
	return setuid(0) == 0 ? -1 : 0;
}

static void
kh_rprog_serve(int fd)
{
	struct kh_rprog_req q;
	struct kh_rprog_ans a;
	ssize_t n;

	for (;;) {
		n = recv(fd, &q, sizeof(q), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(q))
			_exit(n == 0 ? 0 : 1);
		memset(&a, 0, sizeof(a));
		a.tag = q.tag;
		(void)kh_rprog_find(q.inode, (uid_t)q.uid, &a.prog);
		do {
			n = send(fd, &a, sizeof(a), MSG_NOSIGNAL);
		} while (n < 0 && errno == EINTR);
		if (n != (ssize_t)sizeof(a))
			_exit(1);
	}
}

/* Close every descriptor from `from` on (close_range, or one by one on a
 * kernel older than 5.9). */
static int
kh_rprog_close_from(int from)
{
	long max, i;

	if (syscall(SYS_close_range, (unsigned)from, ~0U, 0) == 0)
		return 0;
	if (errno != ENOSYS)
		return -1;
	max = sysconf(_SC_OPEN_MAX);
	for (i = from; i < (max > 0 ? max : 65536); i++)
		(void)close((int)i);
	return 0;
}

int
kh_rprog_finder_start(uid_t uid, gid_t gid, int *fd, pid_t *pid, kh_error *err)
{
	pid_t p, parent = getpid();
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "socketpair: %s", strerror(errno));
	p = fork();
	if (p < 0) {
		(void)close(sv[0]);
		(void)close(sv[1]);
		return kh_fail(err, KH_ERR_INTERNAL, "fork: %s", strerror(errno));
	}
	if (p == 0) {
		/* Nothing of the relay's but stdio and its end of the pair. */
		if (dup2(sv[1], 3) != 3 || kh_rprog_close_from(4) != 0 ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent ||
		    kh_rprog_keep_caps(uid, gid) != 0)
			_exit(1);
		(void)prctl(PR_SET_NAME, "kh-relay-prog", 0, 0, 0);
		kh_rprog_serve(3);
		_exit(0);
	}
	(void)close(sv[1]);
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) != 0) {
		(void)close(sv[0]);
		return kh_fail(err, KH_ERR_INTERNAL, "fcntl: %s", strerror(errno));
	}
	*fd = sv[0];
	*pid = p;
	return 0;
}

int
kh_rprog_ask(int fd, uint64_t tag, uint64_t inode, uid_t uid)
{
	struct kh_rprog_req q = { .tag = tag, .inode = inode, .uid = (uint32_t)uid };

	return send(fd, &q, sizeof(q), MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof(q) ? 0 : -1;
}

int
kh_rprog_answer(int fd, uint64_t *tag, struct kh_rprog *p)
{
	struct kh_rprog_ans a;
	ssize_t n;

	do {
		n = recv(fd, &a, sizeof(a), MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n != (ssize_t)sizeof(a))
		return -1;
	a.prog.exe[sizeof(a.prog.exe) - 1] = '\0';
	a.prog.cmdline[sizeof(a.prog.cmdline) - 1] = '\0';
	*tag = a.tag;
	*p = a.prog;
	return 1;
}
