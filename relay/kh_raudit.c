/*
 * kh_raudit — format audit lines (jansson), and append them to a file only
 * root and the relay's own user can reach, and/or to syslog.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <jansson.h>

#include "relay/kh_raudit.h"

struct kh_raudit {
	char *file;             /* NULL: no file */
	int fd;
	dev_t dev;              /* fd's file, to notice its name now names another */
	ino_t ino;
	uid_t uid;              /* the relay's user, whose file it is */
	bool to_syslog;
	bool reopen_failed;     /* logged once until a reopen succeeds */
	unsigned long failed;   /* writes that failed since the last success */
};

/* ------------------------------------------------------------------ */
/* the line                                                             */

/* A request target as JSON can carry it: bytes outside printable ASCII
 * become %XX (it was percent-encoded on the wire in any sane client). */
static void
kh_raudit_clean_path(const char *in, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *in != '\0' && o + 4 < cap; in++) {
		unsigned char c = (unsigned char)*in;

		if (c >= 0x20 && c < 0x7f) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}

static int
kh_raudit_time(const struct timespec *ts, char *buf, size_t cap)
{
	struct tm tm;
	char base[32];

	if (gmtime_r(&ts->tv_sec, &tm) == NULL ||
	    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		return -1;
	return snprintf(buf, cap, "%s.%03ldZ", base, ts->tv_nsec / 1000000) > 0 ? 0 : -1;
}

static json_t *
kh_raudit_origin(const struct kh_relay_origin *o)
{
	json_t *j = json_object();

	if (j == NULL || o == NULL)
		return j;
	if ((o->service != NULL && json_object_set_new(j, "service", json_string(o->service)) != 0) ||
	    (o->rhost != NULL && json_object_set_new(j, "rhost", json_string(o->rhost)) != 0) ||
	    (o->tty != NULL && json_object_set_new(j, "tty", json_string(o->tty)) != 0)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/*
 * Who asked: the session certificate's UID (what the API server's audit
 * shows as user.uid), and the client program, once per connection: its
 * pid, executable and command line (NULs made spaces, cut at
 * KH_RPROG_CMD_MAX: "cmdlineCut"), each null when it could not be found.
 * jansson escapes them; bytes that are not UTF-8 are made '?' first, as
 * json_string takes UTF-8 only.
 */
static json_t *
kh_raudit_text(const char *s)
{
	char buf[KH_RPROG_CMD_MAX + KH_RPROG_EXE_MAX + 2];
	json_t *j = json_string(s);
	size_t i;

	if (j != NULL)
		return j;
	snprintf(buf, sizeof(buf), "%s", s);
	for (i = 0; buf[i] != '\0'; i++)
		if ((unsigned char)buf[i] >= 0x80)
			buf[i] = '?';
	return json_string(buf);
}

int
kh_raudit_set_prog(json_t *o, const struct kh_rprog *prog)
{
	const struct kh_rprog *p = prog != NULL && prog->pid > 0 ? prog : NULL;

	if (json_object_set_new(o, "pid", p != NULL ? json_integer(p->pid) : json_null()) != 0 ||
	    json_object_set_new(o, "exe", p != NULL && p->exe[0] != '\0' ?
				kh_raudit_text(p->exe) : json_null()) != 0 ||
	    json_object_set_new(o, "cmdline", p != NULL && p->cmdline[0] != '\0' ?
				kh_raudit_text(p->cmdline) : json_null()) != 0)
		return -1;
	if (p != NULL && p->cmdline_cut && json_object_set_new(o, "cmdlineCut", json_true()) != 0)
		return -1;
	return 0;
}

json_t *
kh_raudit_line(const struct kh_raudit_rec *r)
{
	char when[48], path[KH_RAUDIT_LINE_MAX / 2];
	json_t *o;

	if (kh_raudit_time(&r->start, when, sizeof(when)) != 0)
		return NULL;
	kh_raudit_clean_path(r->path != NULL ? r->path : "", path, sizeof(path));
	o = json_pack("{s:s, s:I, s:o, s:s, s:s, s:s, s:i, s:I, s:I, s:f, s:b, s:b, s:o}",
		      "time", when,
		      "uid", (json_int_t)r->uid,
		      "user", r->user != NULL ? json_string(r->user) : json_null(),
		      "cluster", r->cluster,
		      "method", r->method != NULL ? r->method : "",
		      "path", path,
		      "status", (int)r->status,
		      "bytesIn", (json_int_t)r->bytes_in,
		      "bytesOut", (json_int_t)r->bytes_out,
		      "durationMs", (double)r->duration_ns / 1e6,
		      "watch", r->watch,
		      "upgrade", r->upgrade,
		      "origin", r->origin != NULL ? kh_raudit_origin(r->origin) : json_null());
	if (o == NULL)
		return NULL;
	if ((r->path_cut || strlen(path) + 4 >= sizeof(path)) &&
	    json_object_set_new(o, "pathCut", json_true()) != 0)
		goto fail;
	if (r->relay_note != NULL &&
	    json_object_set_new(o, "relay", json_string(r->relay_note)) != 0)
		goto fail;
	if (json_object_set_new(o, "kubeUid", r->kube_uid != NULL ?
				kh_raudit_text(r->kube_uid) : json_null()) != 0 ||
	    kh_raudit_set_prog(o, r->prog) != 0)
		goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}

/* The line (with its '\n', then a NUL) into buf: its length, or -1. */
static int
kh_raudit_dump(json_t *o, char *buf, size_t cap)
{
	size_t n;

	if (cap < 2)
		return -1;
	n = json_dumpb(o, buf, cap - 2, JSON_COMPACT | JSON_PRESERVE_ORDER |
		       JSON_REAL_PRECISION(6));
	if (n == 0 || n > cap - 2)
		return -1;
	buf[n++] = '\n';
	buf[n] = '\0';
	return (int)n;
}

int
kh_raudit_format(const struct kh_raudit_rec *r, char *buf, size_t cap)
{
	json_t *o = kh_raudit_line(r);
	int n;

	if (o == NULL)
		return -1;
	n = kh_raudit_dump(o, buf, cap);
	json_decref(o);
	return n;
}

/* ------------------------------------------------------------------ */
/* the file                                                             */

/*
 * The directory: made root's, group gid, 0750, or if there, written by
 * root only.  The relay's group may enter it to append to its own file
 * and to reopen it by name after a rotation, never to create, rename or
 * remove a file there: the weeks logrotate kept stay out of the reach of
 * the unprivileged relay, and logrotate (which refuses a directory
 * writable by a group other than root's) rotates it without "su".  An
 * older relay made it 0770: that one is tightened.
 */
static int
kh_raudit_dir(const char *file, gid_t gid, kh_error *err)
{
	char *copy = strdup(file), *dir;
	struct stat st;
	int rc = -1;

	if (copy == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	dir = dirname(copy);
	if (mkdir(dir, 0750) == 0) {
		if (chown(dir, 0, gid) != 0 || chmod(dir, 0750) != 0) {
			kh_fail(err, KH_ERR_INTERNAL, "%s: %s", dir, strerror(errno));
			goto out;
		}
	} else if (errno != EEXIST) {
		kh_fail(err, KH_ERR_INTERNAL, "cannot create %s: %s", dir, strerror(errno));
		goto out;
	}
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		kh_fail(err, KH_ERR_CONFIG, "relay.audit.file: %s is not a directory", dir);
		goto out;
	}
	if (st.st_uid == 0 && st.st_gid == gid && gid != 0 && (st.st_mode & 07777) == 0770 &&
	    chmod(dir, 0750) == 0)
		st.st_mode &= ~(mode_t)020;
	if (st.st_uid != 0 || (st.st_mode & 002) != 0 || ((st.st_mode & 020) != 0 && st.st_gid != 0)) {
		kh_fail(err, KH_ERR_CONFIG, "relay.audit.file: %s must be a directory owned by "
			"root that only root can write", dir);
		goto out;
	}
	rc = 0;
out:
	free(copy);
	return rc;
}

static int
kh_raudit_open_file(const char *file, int create, kh_error *err)
{
	int fd = open(file, O_WRONLY | O_APPEND | create | O_NOFOLLOW | O_CLOEXEC, 0600);
	int e = errno;

	if (fd < 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot open the audit log %s: %s%s", file,
			       strerror(e), e == ENOENT ? " (after a rotation, logrotate's "
			       "\"create\" makes it)" : "");
	return fd;
}

/* A new descriptor for the log: it replaces the old one if it is a
 * regular file of the relay's or root's. */
static int
kh_raudit_adopt(struct kh_raudit *a, int fd, kh_error *err)
{
	struct stat st;

	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != a->uid)) {
		(void)close(fd);
		return kh_fail(err, KH_ERR_CONFIG, "the audit log %s must be a regular file of "
			       "root's or the relay's", a->file);
	}
	if (a->fd >= 0)
		(void)close(a->fd);
	a->fd = fd;
	a->dev = st.st_dev;
	a->ino = st.st_ino;
	return 0;
}

struct kh_raudit *
kh_raudit_open(const char *file, bool to_syslog, uid_t uid, gid_t gid, kh_error *err)
{
	struct kh_raudit *a = calloc(1, sizeof(*a));
	int fd;

	if (a == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory"), NULL;
	a->fd = -1;
	a->uid = uid;
	a->to_syslog = to_syslog;
	if (file == NULL || file[0] == '\0')
		return a;
	a->file = strdup(file);
	if (a->file == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto fail;
	}
	if (kh_raudit_dir(file, gid, err) != 0)
		goto fail;
	fd = kh_raudit_open_file(file, O_CREAT, err);
	if (fd < 0 || kh_raudit_adopt(a, fd, err) != 0)
		goto fail;
	/* Read by root only; written by the relay, also after the drop. */
	if (fchown(a->fd, uid, gid) != 0 || fchmod(a->fd, 0600) != 0) {
		kh_fail(err, KH_ERR_INTERNAL, "%s: %s", file, strerror(errno));
		goto fail;
	}
	return a;
fail:
	kh_raudit_free(a);
	return NULL;
}

int
kh_raudit_reopen(struct kh_raudit *a, kh_error *err)
{
	int fd;

	if (a == NULL || a->file == NULL)
		return 0;
	/* No O_CREAT: after the drop the relay cannot create a file in the
	 * directory, and must not make one that is not the rotation's. */
	fd = kh_raudit_open_file(a->file, 0, err);
	if (fd < 0)
		return -1;
	if (fchmod(fd, 0600) != 0) {
		(void)close(fd);
		return kh_fail(err, KH_ERR_INTERNAL, "%s: %s", a->file, strerror(errno));
	}
	return kh_raudit_adopt(a, fd, err);
}

/*
 * Before a line: does the name still lead to the open file?  logrotate
 * renames it and makes a new one (its "create"); the SIGHUP its
 * postrotate sends may reach no relay (another name, another unit, a
 * relay started by hand), so the relay looks for itself, one stat(2) per
 * line.  Until a new file is there, lines go on to the old one.
 */
static void
kh_raudit_follow(struct kh_raudit *a)
{
	struct stat st;
	kh_error err = { 0 };

	if (stat(a->file, &st) == 0 && st.st_dev == a->dev && st.st_ino == a->ino)
		return;
	if (kh_raudit_reopen(a, &err) == 0) {
		a->reopen_failed = false;
		return;
	}
	if (!a->reopen_failed)
		syslog(LOG_ERR, "kubehsm-relayd: the audit log was moved; %s; still writing "
		       "the old file", err.msg);
	a->reopen_failed = true;
}

void
kh_raudit_write_line(struct kh_raudit *a, json_t *o)
{
	char line[KH_RAUDIT_LINE_MAX];
	int n;

	if (a == NULL || o == NULL || (a->fd < 0 && !a->to_syslog))
		return;
	n = kh_raudit_dump(o, line, sizeof(line));
	if (n <= 0)
		return;
	if (a->fd >= 0) {
		kh_raudit_follow(a);
		if (write(a->fd, line, (size_t)n) == n) {
			if (a->failed > 0)
				syslog(LOG_WARNING, "kubehsm-relayd: audit log %s: %lu line(s) lost "
				       "before this one", a->file, a->failed);
			a->failed = 0;
		} else if (a->failed++ == 0) {
			syslog(LOG_ERR, "kubehsm-relayd: cannot write the audit log %s: %s",
			       a->file, strerror(errno));
		}
	}
	if (a->to_syslog)
		syslog(LOG_AUTHPRIV | LOG_INFO, "%.*s", n - 1, line);
}

void
kh_raudit_write(struct kh_raudit *a, const struct kh_raudit_rec *r)
{
	json_t *o;

	if (a == NULL || (a->fd < 0 && !a->to_syslog))
		return;
	o = kh_raudit_line(r);
	kh_raudit_write_line(a, o);
	json_decref(o);
}

bool
kh_raudit_enabled(const struct kh_raudit *a)
{
	return a != NULL && (a->fd >= 0 || a->to_syslog);
}

void
kh_raudit_free(struct kh_raudit *a)
{
	if (a == NULL)
		return;
	if (a->fd >= 0)
		(void)close(a->fd);
	free(a->file);
	free(a);
}
