/*
 * kubehsm admin scan [--json] [--ttl D] [--user U]... [PATH...]
 *
 * The long-lived kube credentials still on the host: kubeconfigs with
 * client keys, bearer tokens, basic-auth passwords, auth-provider tokens or
 * exec plugins other than kubehsm; service-account tokens; client
 * certificates valid for longer than session.ttl.  Root only: it reads
 * every user's home.  It never prints a secret, only a fingerprint (the
 * first 8 bytes of its SHA-256).  What it looks at, and why, is in
 * kubehsm(1), ADMIN SCAN.
 *
 * Exit status: 0 nothing found, 1 something found (a credential, a file it
 * could not read or parse, a link it did not follow), 2 the scan could not
 * run (usage, not root, the policy).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conf/kh_policy.h"
#include "helper/kh_cli.h"
#include "helper/kh_scan.h"
#include "lib/kh_duration.h"
#include "lib/kh_mem.h"

#define KH_SCAN_EXIT_CLEAN 0
#define KH_SCAN_EXIT_FOUND 1
#define KH_SCAN_EXIT_ERROR 2

/* Without a policy file: the loader's default session.ttl. */
#define KH_SCAN_DEFAULT_TTL (8L * 3600)

/* ------------------------------------------------------------------ */
/* the walk                                                             */

/*
 * Which files are looked at.  In a home: every file under ~/.kube (but its
 * cache/ and http-cache/, except the OIDC plugins' token caches in
 * cache/oidc-login/ and cache/kubelogin/), any file whose name contains
 * "kubeconfig", and token files (".../serviceaccount/token", "token",
 * "*.token", "*.jwt").  Under a path the admin named: every file.
 */
static enum kh_cand
kh_scan_candidate(const struct kh_root *r, const char *rel, const char *name, bool in_kube)
{
	static const char *const strong_ext[] = { ".yaml", ".yml", ".json", ".conf",
						  ".config", ".kubeconfig" };
	size_t i;

	if (strcasestr(name, "kubeconfig") != NULL || kh_str_ends(rel, "serviceaccount/token"))
		return KH_CAND_STRONG;
	if (in_kube || !r->home) {
		if (in_kube && strcmp(name, "config") == 0)
			return KH_CAND_STRONG;
		for (i = 0; i < sizeof(strong_ext) / sizeof(strong_ext[0]); i++)
			if (kh_str_ends(name, strong_ext[i]))
				return in_kube ? KH_CAND_STRONG : KH_CAND_WEAK;
		return KH_CAND_WEAK;
	}
	if (strcmp(name, "token") == 0 || kh_str_ends(name, ".token") || kh_str_ends(name, ".jwt"))
		return KH_CAND_WEAK;
	return KH_CAND_NONE;
}

static const char *
kh_scan_type_name(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) ? "a character device"
	       : S_ISBLK(m) ? "a block device" : "not a regular file";
}

static void
kh_scan_file(struct kh_scan *s, const struct kh_file *f, int dirfd, const char *name,
	     enum kh_cand cand)
{
	const struct stat *st = f->st;
	char *buf = NULL;
	size_t len = 0;
	kh_error err;

	if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);

		target[n > 0 ? (size_t)n : 0] = '\0';
		kh_scan_addf(s, f, "skipped", NULL, NULL, NULL,
			     "a symbolic link (to %s), not followed", n > 0 ? target : "?");
		return;
	}
	if (!S_ISREG(st->st_mode)) {
		kh_scan_addf(s, f, "skipped", NULL, NULL, NULL, "%s, not opened",
			     kh_scan_type_name(st->st_mode));
		return;
	}
	/* A hard link in a home to someone else's file (where the kernel
	 * allows one: fs.protected_hardlinks = 0) is not that user's to show. */
	if (f->root->home && st->st_nlink > 1 && st->st_uid != f->root->uid) {
		kh_scan_addf(s, f, "skipped", NULL, NULL, NULL,
			     "a hard link to a file of uid %u, not read", (unsigned)st->st_uid);
		return;
	}
	if (kh_scan_read_at(dirfd, name, st, KH_SCAN_MAX_FILE, &buf, &len, &err) != 0) {
		if (err.code == KH_ERR_INTERNAL)
			s->failed = true;
		else
			kh_scan_add(s, f, err.code == KH_ERR_QUOTA || err.code == KH_ERR_REFUSED
				    ? "skipped" : "unparsable", NULL, err.msg, NULL, NULL);
		return;
	}
	kh_scan_content(s, f, cand, buf, len);
	kh_secure_free(buf, len + 1);
}

static void kh_scan_dir(struct kh_scan *s, struct kh_root *r, int dirfd, const char *rel,
			unsigned depth, bool in_kube);

static void
kh_scan_entry(struct kh_scan *s, struct kh_root *r, int dirfd, const char *rel,
	      const char *name, unsigned depth, bool in_kube)
{
	char path[PATH_MAX];
	struct stat st;
	struct kh_file f = { .root = r, .rel = path, .st = &st };
	enum kh_cand cand;
	kh_error err;
	int sub;

	if ((size_t)snprintf(path, sizeof(path), "%s%s%s", rel, rel[0] ? "/" : "", name) >=
	    sizeof(path))
		return;         /* deeper than any kubeconfig path is */
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return;         /* gone since readdir */
	if (S_ISDIR(st.st_mode)) {
		bool kube = in_kube || (r->home && depth == 0 && strcmp(name, ".kube") == 0);

		if (st.st_dev != r->dev || depth + 1 >= KH_SCAN_MAX_DEPTH)
			return;
		if (in_kube && depth >= 1 && (strcmp(name, "cache") == 0 ||
					      strcmp(name, "http-cache") == 0) &&
		    !(r->home && strcmp(path, ".kube/cache") == 0))
			return;
		sub = kh_scan_opendir_at(dirfd, name, &st, &err);
		if (sub < 0) {
			/* What it cannot look into is not known to be clean. */
			if (err.code != KH_ERR_NOTFOUND)
				kh_scan_addf(s, &f, "skipped", NULL, NULL, NULL,
					     "a directory, %s", err.msg);
			return;
		}
		if (r->home && strcmp(path, ".kube/cache") == 0) {
			/* Of kubectl's discovery cache, only the OIDC plugins'
			 * token caches (int128/kubelogin, Azure/kubelogin). */
			kh_scan_entry(s, r, sub, path, "oidc-login", depth + 1, true);
			kh_scan_entry(s, r, sub, path, "kubelogin", depth + 1, true);
			(void)close(sub);
			return;
		}
		kh_scan_dir(s, r, sub, path, depth + 1, kube);
		return;
	}
	if (S_ISLNK(st.st_mode) && r->home && depth == 0 && strcmp(name, ".kube") == 0) {
		kh_scan_file(s, &f, dirfd, name, KH_CAND_STRONG);
		return;
	}
	cand = kh_scan_candidate(r, path, name, in_kube);
	if (cand != KH_CAND_NONE)
		kh_scan_file(s, &f, dirfd, name, cand);
}

/* Walk dirfd (closed here). */
static void
kh_scan_dir(struct kh_scan *s, struct kh_root *r, int dirfd, const char *rel, unsigned depth,
	    bool in_kube)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *de;

	if (d == NULL) {
		(void)close(dirfd);
		return;
	}
	while (!r->stopped && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (r->home && depth == 0 && strcmp(de->d_name, ".kube") == 0)
			continue;       /* walked first, by kh_scan_root */
		if (++r->entries > KH_SCAN_MAX_ENTRIES) {
			r->stopped = true;
			break;
		}
		kh_scan_entry(s, r, dirfd, rel, de->d_name, depth, in_kube);
	}
	(void)closedir(d);
}

/* Walk a root, then say when the walk stopped at its bound. */
static void
kh_scan_root(struct kh_scan *s, struct kh_root *r)
{
	struct stat st;
	struct kh_file f = { .root = r, .rel = "", .st = &st };
	int fd = dup(r->fd);

	if (fd < 0 || fstat(r->fd, &st) != 0) {
		if (fd >= 0)
			(void)close(fd);
		s->failed = true;
		return;
	}
	/* ~/.kube first: the entry bound must not keep it from being seen. */
	if (r->home)
		kh_scan_entry(s, r, r->fd, "", ".kube", 0, false);
	kh_scan_dir(s, r, fd, "", 0, false);
	if (r->stopped)
		kh_scan_addf(s, &f, "skipped", NULL, NULL, NULL,
			     "the walk stopped after %lu entries; the rest was not looked at",
			     KH_SCAN_MAX_ENTRIES);
}

/* ------------------------------------------------------------------ */
/* what to scan                                                         */

/* A home that exists but cannot be opened is said (a link to elsewhere, a
 * network home root may not read); one that does not exist is no finding
 * (the system accounts' /nonexistent). */
static void
kh_scan_home_unopened(struct kh_scan *s, const struct passwd *pw, int e)
{
	struct kh_root r = { .fd = -1, .path = pw->pw_dir, .owner = pw->pw_name,
			     .uid = pw->pw_uid, .home = true };
	struct stat st;
	struct kh_file f = { .root = &r, .rel = "", .st = &st };

	if (lstat(pw->pw_dir, &st) != 0)
		return;
	if (S_ISLNK(st.st_mode))
		kh_scan_add(s, &f, "skipped", NULL, "the home is a symbolic link, not followed",
			    NULL, NULL);
	else if (S_ISDIR(st.st_mode))
		kh_scan_addf(s, &f, "skipped", NULL, NULL, NULL, "the home cannot be opened: %s",
			     strerror(e));
}

/* One user's home: a directory owned by that user (which leaves out the
 * system accounts' /usr/sbin, /bin, /nonexistent...), or root's. */
static void
kh_scan_home(struct kh_scan *s, const struct passwd *pw, bool named, dev_t *seen_dev,
	     ino_t *seen_ino, size_t *nseen, size_t maxseen)
{
	struct kh_root r = { .fd = -1 };
	struct stat st;
	size_t i;
	int fd;

	if (pw->pw_dir == NULL || pw->pw_dir[0] != '/') {
		if (named)
			kh_cli_error("admin scan: %s has no absolute home directory: not scanned",
				     pw->pw_name);
		return;
	}
	fd = open(pw->pw_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT && named)
			kh_cli_error("admin scan: %s's home %s does not exist: not scanned",
				     pw->pw_name, pw->pw_dir);
		kh_scan_home_unopened(s, pw, errno);
		return;
	}
	if (fstat(fd, &st) != 0 || st.st_uid != pw->pw_uid) {
		/* Asked for by name (--user): say why nothing was looked at. */
		if (named)
			kh_cli_error("admin scan: %s's home %s is not theirs (owner uid %u): "
				     "not scanned", pw->pw_name, pw->pw_dir, (unsigned)st.st_uid);
		(void)close(fd);
		return;
	}
	for (i = 0; i < *nseen; i++) {
		if (seen_dev[i] == st.st_dev && seen_ino[i] == st.st_ino) {
			(void)close(fd);   /* a home two accounts share: once */
			return;
		}
	}
	if (*nseen < maxseen) {
		seen_dev[*nseen] = st.st_dev;
		seen_ino[*nseen] = st.st_ino;
		(*nseen)++;
	}
	r.fd = fd;
	r.path = pw->pw_dir;
	r.owner = pw->pw_name;
	r.uid = pw->pw_uid;
	r.dev = st.st_dev;
	r.home = true;
	kh_scan_root(s, &r);
	(void)close(fd);
}

#define KH_SCAN_MAX_HOMES 65536

static int
kh_scan_homes(struct kh_scan *s, char **users, size_t nusers)
{
	dev_t *dev = calloc(KH_SCAN_MAX_HOMES, sizeof(*dev));
	ino_t *ino = calloc(KH_SCAN_MAX_HOMES, sizeof(*ino));
	size_t nseen = 0, i;
	struct passwd *pw;
	int rc = 0;

	if (dev == NULL || ino == NULL) {
		free(dev);
		free(ino);
		kh_cli_error("admin scan: out of memory");
		return -1;
	}
	if (nusers > 0) {
		for (i = 0; i < nusers; i++) {
			pw = getpwnam(users[i]);
			if (pw == NULL) {
				kh_cli_error("admin scan: no such user '%s'", users[i]);
				rc = -1;
				break;
			}
			kh_scan_home(s, pw, true, dev, ino, &nseen, KH_SCAN_MAX_HOMES);
		}
	} else {
		setpwent();
		while ((pw = getpwent()) != NULL)
			kh_scan_home(s, pw, false, dev, ino, &nseen, KH_SCAN_MAX_HOMES);
		endpwent();
	}
	free(dev);
	free(ino);
	return rc;
}

/* A path the admin named: a directory is walked, a file read. */
static int
kh_scan_named(struct kh_scan *s, const char *path)
{
	char *copy = strdup(path), *slash, *dir, *base;
	struct kh_root r = { .fd = -1 };
	struct stat st;
	int fd, rc = 0;

	if (copy == NULL)
		return -1;
	while (strlen(copy) > 1 && copy[strlen(copy) - 1] == '/')
		copy[strlen(copy) - 1] = '\0';
	if (copy[0] != '/') {
		kh_cli_error("admin scan: '%s': name paths from / (absolute)", path);
		free(copy);
		return -1;
	}
	fd = open(copy, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0 && fstat(fd, &st) == 0) {
		r.fd = fd;
		r.path = copy;
		r.dev = st.st_dev;
		kh_scan_root(s, &r);
		(void)close(fd);
		free(copy);
		return 0;
	}
	if (fd >= 0)
		(void)close(fd);
	/* A file: its directory is the root (for the paths it names). */
	slash = strrchr(copy, '/');
	*slash = '\0';
	dir = slash == copy ? "/" : copy;
	base = slash + 1;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		kh_cli_error("admin scan: %s: %s", path, strerror(errno));
		rc = -1;
	} else {
		struct kh_file f = { .root = &r, .rel = base, .st = &st };

		r.fd = fd;
		r.path = dir;
		r.dev = st.st_dev;
		kh_scan_file(s, &f, fd, base, KH_CAND_STRONG);
	}
	if (fd >= 0)
		(void)close(fd);
	free(copy);
	return rc;
}

/* session.ttl from the policy; the loader's default when there is none
 * (a host being moved to kubehsm may not have its policy yet). */
static int
kh_scan_policy_ttl(long *ttl)
{
	const char *path = kh_cli_config_path(NULL);
	struct kh_policy *policy;
	kh_error err;

	if (access(path, F_OK) != 0 && errno == ENOENT) {
		*ttl = KH_SCAN_DEFAULT_TTL;
		kh_cli_error("admin scan: no policy at %s: taking session.ttl = 8h", path);
		return 0;
	}
	policy = kh_policy_load(path, NULL, &err);
	if (policy == NULL) {
		kh_cli_error("admin scan: %s", err.msg);
		return -1;
	}
	*ttl = policy->session.ttl;
	kh_policy_free(policy);
	return 0;
}

static void
kh_scan_usage(FILE *out)
{
	fprintf(out,
		"Usage: kubehsm admin scan [--json] [--ttl DURATION] [--user USER]... [PATH...]\n\n"
		"Find the long-lived kube credentials still on this host: in every user's\n"
		"home (or only the --user homes), and under each absolute PATH named.\n"
		"Reports kubeconfigs with client keys, bearer tokens, basic-auth passwords,\n"
		"auth-provider tokens or exec plugins other than kubehsm; service-account\n"
		"tokens; client certificates valid for longer than session.ttl.  Secrets\n"
		"are never printed, only a fingerprint (first 8 bytes of their SHA-256).\n\n"
		"  --json          a JSON array of findings, for jq\n"
		"  --ttl DURATION  instead of the policy's session.ttl (8h, 1d)\n"
		"  --user USER     scan USER's home (repeatable); with PATHs and no --user,\n"
		"                  only the PATHs\n"
		"  -h, --help      show this help\n\n"
		"Exit status: 0 nothing found, 1 something found, 2 the scan could not run.\n");
}

int
kh_cmd_admin_scan(int argc, char **argv)
{
	struct kh_scan s = { .ttl = 0 };
	char **users = calloc((size_t)argc, sizeof(*users));
	char **paths = calloc((size_t)argc, sizeof(*paths));
	size_t nusers = 0, npaths = 0, i;
	bool json = false, have_ttl = false;
	int rc = KH_SCAN_EXIT_ERROR, a;
	kh_error err;

	if (users == NULL || paths == NULL) {
		kh_cli_error("admin scan: out of memory");
		goto out;
	}
	for (a = 2; a < argc; a++) {
		const char *v = a + 1 < argc ? argv[a + 1] : NULL;

		if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
			kh_scan_usage(stdout);
			rc = KH_SCAN_EXIT_CLEAN;
			goto out;
		} else if (strcmp(argv[a], "--json") == 0) {
			json = true;
		} else if (v != NULL && strcmp(argv[a], "--user") == 0) {
			users[nusers++] = argv[++a];
		} else if (v != NULL && strcmp(argv[a], "--ttl") == 0) {
			if (kh_duration_parse(v, &s.ttl, &err) != 0 || s.ttl <= 0) {
				kh_cli_error("admin scan: --ttl '%s' is not a duration (8h, 1d)", v);
				goto out;
			}
			have_ttl = true;
			a++;
		} else if (argv[a][0] == '-') {
			kh_cli_error("admin scan: unexpected argument '%s'; run 'kubehsm admin scan "
				     "--help'", argv[a]);
			goto out;
		} else {
			paths[npaths++] = argv[a];
		}
	}
	if (geteuid() != 0) {
		kh_cli_error("admin scan reads every user's files and needs root: run "
			     "'sudo kubehsm admin scan'");
		goto out;
	}
	if (!have_ttl && kh_scan_policy_ttl(&s.ttl) != 0)
		goto out;
	s.now = time(NULL);
	if ((nusers > 0 || npaths == 0) && kh_scan_homes(&s, users, nusers) != 0)
		goto out;
	for (i = 0; i < npaths; i++)
		if (kh_scan_named(&s, paths[i]) != 0)
			goto out;
	if (s.failed) {
		kh_cli_error("admin scan: out of memory; the report would be incomplete");
		goto out;
	}
	if ((json ? kh_scan_print_json(&s) : kh_scan_print_text(&s)) != 0 || fflush(stdout) != 0) {
		kh_cli_error("admin scan: cannot write the report: %s", strerror(errno));
		goto out;
	}
	rc = s.n > 0 ? KH_SCAN_EXIT_FOUND : KH_SCAN_EXIT_CLEAN;
out:
	kh_scan_free(&s);
	free(users);
	free(paths);
	return rc;
}
