/*
 * kh_scan — `kubehsm admin scan`: the long-lived kube credentials still on
 * the host (helper/cmd_scan.c).  Internal to kubehsm-tool.
 *
 *   kh_scan_yaml.c  a kubeconfig (YAML or JSON) into a jansson tree, and
 *                   the wipe of such a tree before it is freed
 *   kh_scan_fs.c    reading users' files as root without following them
 *                   anywhere: openat/fstatat relative to directory
 *                   descriptors, O_NOFOLLOW, regular files only, bounded
 *   cmd_scan.c      what counts as a credential, the report, the command
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set (the message never carries file content).
 */
#ifndef KH_SCAN_H
#define KH_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

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
