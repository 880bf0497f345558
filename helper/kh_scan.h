/*
 * kh_scan — `kubehsm admin scan`: the long-lived kube credentials still on
 * the host (helper/cmd_scan.c).  Internal to kubehsm-tool.
 *
 *   cmd_scan.c         the command: which homes and paths, the walk
 *   kh_scan_content.c  what counts as a credential in a file's content
 *   kh_scan_report.c   the findings, and the report (text or JSON)
 *   kh_scan_yaml.c     a kubeconfig (YAML or JSON) into a jansson tree, and
 *                      the wipe of such a tree before it is freed
 *   kh_scan_fs.c       reading users' files as root without following them
 *                      anywhere: openat/fstatat relative to directory
 *                      descriptors, O_NOFOLLOW, regular files only, bounded
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set (the message never carries file content); the print
 * functions take no err: -1 is a report that could not be written.
 */
#ifndef KH_SCAN_H
#define KH_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "lib/kh_error.h"

/* Largest file the scan reads; a bigger candidate is reported, not read. */
#define KH_SCAN_MAX_FILE (1024 * 1024)
/* Deepest directory below a home or named directory the walk enters. */
#define KH_SCAN_MAX_DEPTH 12
/* Most directory entries the walk looks at under one home or named path. */
#define KH_SCAN_MAX_ENTRIES 200000UL
/* Deepest YAML nesting a kubeconfig may have (kubeconfigs use 5). */
#define KH_SCAN_YAML_MAX_DEPTH 32

/* How much a file's name says about what it should hold. */
enum kh_cand {
	KH_CAND_NONE,   /* not looked at */
	KH_CAND_WEAK,   /* reported only when it holds a credential */
	KH_CAND_STRONG, /* a kubeconfig or token by name: anything else is "unparsable" */
};

struct kh_finding {
	char *owner;
	char *file;             /* absolute, escaped */
	const char *kind;
	char *entry;            /* the kubeconfig's users[].name, escaped; or NULL */
	char *detail;           /* escaped; or NULL */
	char fp[17];            /* hex of the first 8 bytes of SHA-256; or "" */
	bool has_expiry;
	time_t expiry;
	time_t mtime;
};

struct kh_scan {
	struct kh_finding *f;
	size_t n, cap;
	long ttl;
	time_t now;
	bool failed;            /* out of memory: the report would be incomplete */
};

/* The tree being walked: a home or a path the admin named. */
struct kh_root {
	int fd;
	const char *path;       /* absolute, no trailing slash ("/" stays) */
	const char *owner;      /* the home's user; NULL: each file's owner */
	uid_t uid;              /* the home's user */
	dev_t dev;              /* the walk stays on this file system */
	bool home;
	unsigned long entries;
	bool stopped;
};

/* What is being looked at: root-relative path and its status. */
struct kh_file {
	const struct kh_root *root;
	const char *rel;        /* relative to root->path */
	const struct stat *st;
};

/* The first 8 bytes of the SHA-256 of secret, in hex (out[0] = 0 if the
 * digest fails). */
void kh_scan_fingerprint(const void *secret, size_t len, char out[17]);

/* s with every byte outside printable ASCII (and the backslash) as \xHH;
 * NULL when out of memory.  free() it. */
char *kh_scan_escape(const char *s);

/* Record one finding on f: kind is a string constant; entry (the
 * kubeconfig user), detail and fp may be NULL.  Out of memory sets
 * s->failed. */
void kh_scan_add(struct kh_scan *s, const struct kh_file *f, const char *kind,
		 const char *entry, const char *detail, const char *fp, const time_t *expiry);
void kh_scan_addf(struct kh_scan *s, const struct kh_file *f, const char *kind,
		  const char *entry, const char *fp, const time_t *expiry, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/* The report on stdout.  0, or -1 when it cannot be written. */
int kh_scan_print_text(const struct kh_scan *s);
int kh_scan_print_json(const struct kh_scan *s);
void kh_scan_free(struct kh_scan *s);

/* Whether s ends in suffix, ignoring case. */
bool kh_str_ends(const char *s, const char *suffix);

/* What a candidate file's content holds (text: len bytes, NUL-terminated):
 * PEM keys and certificates, JWTs, kubeconfigs. */
void kh_scan_content(struct kh_scan *s, const struct kh_file *f, enum kh_cand cand,
		     const char *text, size_t len);

/*
 * Parse text (len bytes) as one YAML 1.1 document — JSON is read the same
 * way — into a tree of objects, arrays and strings (every scalar is a
 * string; tags are ignored).  Aliases are refused (no expansion bombs), as
 * are duplicate keys and nesting deeper than KH_SCAN_YAML_MAX_DEPTH.  An
 * empty document gives JSON null.  The reason for a failure names a line
 * and column, never the text.  Free the tree with kh_scan_json_wipe_free.
 */
int kh_scan_yaml_load(const char *text, size_t len, json_t **out, kh_error *err);

/* Overwrite every string in the tree with zeros, then release it. */
void kh_scan_json_wipe_free(json_t *j);

/*
 * Read regular file `name` of directory dirfd: opened with O_NOFOLLOW,
 * O_NONBLOCK and O_NOATIME (without it where the kernel refuses it), then
 * checked to be the very file `expect` describes (from fstatat with
 * AT_SYMLINK_NOFOLLOW) and still a regular file of at most max bytes.
 * *buf (*len bytes, NUL-terminated) goes with kh_secure_free(*buf, *len + 1).
 * err->code is KH_ERR_QUOTA for a file over max.
 */
int kh_scan_read_at(int dirfd, const char *name, const struct stat *expect, size_t max,
		    char **buf, size_t *len, kh_error *err);

/*
 * Open directory `name` of dirfd (O_DIRECTORY|O_NOFOLLOW) and check it is
 * the one `expect` describes.  A descriptor, or -1 with err set.
 */
int kh_scan_opendir_at(int dirfd, const char *name, const struct stat *expect, kh_error *err);

/*
 * Resolve `rel` (a relative path without "." or ".." components) under
 * rootfd one component at a time, never following a symbolic link, and
 * read the regular file it ends in as kh_scan_read_at does.  *st gets the
 * file's status.
 */
int kh_scan_read_rel(int rootfd, const char *rel, size_t max, struct stat *st, char **buf,
		     size_t *len, kh_error *err);

#endif
