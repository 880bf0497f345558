/*
 * kh_index — root's index of issued keys, one JSON file per uid:
 *
 *   {"v":2,"uid":1001,"user":"alice","logins":2,"keys":[
 *     {"kind":"session","issuer":"","scope":"user","serial":123,
 *      "created":...,"expires":...}, ...]}
 *
 * Only root reads or writes it, but it is parsed as strictly as anything
 * else: a damaged index must fail loudly, not revoke the wrong key.
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

#include <jansson.h>

#include "cache/kh_index.h"
#include "lib/kh_io.h"
#include "lib/kh_json.h"
#include "lib/kh_rundir.h"

#define KH_INDEX_VERSION 2
#define KH_INDEX_FILE_MAX (256 * 1024)
#define KH_INDEX_DIR "index"

const char *
kh_index_kind_name(enum kh_index_kind k)
{
	return k == KH_INDEX_PIN ? "pin" : "session";
}

static int
index_path(uid_t uid, const char *suffix, char *buf, size_t size, kh_error *err)
{
	char name[48];

	(void)snprintf(name, sizeof(name), "%u.json%s", (unsigned)uid, suffix);
	return kh_rundir_file(KH_INDEX_DIR, name, buf, size, err);
}

void
kh_index_clear(struct kh_index *ix)
{
	free(ix->e);
	memset(ix, 0, sizeof(*ix));
}

int
kh_index_add(struct kh_index *ix, const struct kh_index_entry *e, kh_error *err)
{
	struct kh_index_entry *ne;

	if (ix->n >= KH_INDEX_MAX_ENTRIES)
		return kh_fail(err, KH_ERR_QUOTA, "uid %u has %d issued keys on record; "
			       "revoke some (kubehsm admin revoke)", (unsigned)ix->uid,
			       KH_INDEX_MAX_ENTRIES);
	ne = reallocarray(ix->e, ix->n + 1, sizeof(*ne));
	if (ne == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	ix->e = ne;
	ix->e[ix->n++] = *e;
	return 0;
}

void
kh_index_remove(struct kh_index *ix, size_t i)
{
	if (i >= ix->n)
		return;
	memmove(&ix->e[i], &ix->e[i + 1], (ix->n - i - 1) * sizeof(*ix->e));
	ix->n--;
}

void
kh_index_prune_expired(struct kh_index *ix, int64_t now)
{
	size_t i = 0;

	while (i < ix->n) {
		if (ix->e[i].expires <= now)
			kh_index_remove(ix, i);
		else
			i++;
	}
}

/* ---- decoding ------------------------------------------------------------- */

static int
get_int(json_t *o, const char *name, json_int_t lo, json_int_t hi, json_int_t *v)
{
	json_t *x = json_object_get(o, name);

	if (!json_is_integer(x))
		return -1;
	*v = json_integer_value(x);
	return *v >= lo && *v <= hi ? 0 : -1;
}

static int
get_str(json_t *o, const char *name, char *buf, size_t size)
{
	json_t *x = json_object_get(o, name);
	const char *s;
	size_t len;

	if (!json_is_string(x))
		return -1;
	s = json_string_value(x);
	len = json_string_length(x);
	if (len >= size || strlen(s) != len)
		return -1;
	memcpy(buf, s, len + 1);
	return 0;
}

static int
decode_entry(json_t *o, struct kh_index_entry *e)
{
	char kind[16], scope[16];
	json_int_t v;

	memset(e, 0, sizeof(*e));
	if (!json_is_object(o) || json_object_size(o) != 6 ||
	    get_str(o, "kind", kind, sizeof(kind)) != 0 ||
	    get_str(o, "issuer", e->issuer, sizeof(e->issuer)) != 0 ||
	    get_str(o, "scope", scope, sizeof(scope)) != 0)
		return -1;
	if (strcmp(kind, "session") == 0)
		e->kind = KH_INDEX_SESSION;
	else if (strcmp(kind, "pin") == 0)
		e->kind = KH_INDEX_PIN;
	else
		return -1;
	if (strcmp(scope, "user") == 0)
		e->scope = KH_SCOPE_USER;
	else if (strcmp(scope, "session") == 0)
		e->scope = KH_SCOPE_SESSION;
	else
		return -1;
	if (get_int(o, "serial", 1, INT32_MAX, &v) != 0)
		return -1;
	e->serial = (int32_t)v;
	if (get_int(o, "created", 0, INT64_MAX, &v) != 0)
		return -1;
	e->created = v;
	if (get_int(o, "expires", 0, INT64_MAX, &v) != 0)
		return -1;
	e->expires = v;
	return 0;
}

/* 0 decoded, 1 another format version (start over), -1 damaged. */
static int
decode_index(const char *text, size_t len, uid_t uid, struct kh_index *ix)
{
	json_t *doc = json_loadb(text, len, KH_JSON_DECODE_FLAGS, NULL), *keys, *k;
	json_int_t v;
	size_t i;
	int rc = -1;

	if (doc == NULL || !json_is_object(doc))
		goto out;
	if (get_int(doc, "v", KH_INDEX_VERSION, KH_INDEX_VERSION, &v) != 0 &&
	    json_is_integer(json_object_get(doc, "v"))) {
		rc = 1;
		goto out;
	}
	if (json_object_size(doc) != 5 ||
	    get_int(doc, "v", KH_INDEX_VERSION, KH_INDEX_VERSION, &v) != 0 ||
	    get_int(doc, "uid", uid, uid, &v) != 0 ||
	    get_str(doc, "user", ix->user, sizeof(ix->user)) != 0 ||
	    get_int(doc, "logins", 0, 1000000, &v) != 0)
		goto out;
	ix->logins = (unsigned)v;
	keys = json_object_get(doc, "keys");
	if (!json_is_array(keys) || json_array_size(keys) > KH_INDEX_MAX_ENTRIES)
		goto out;
	json_array_foreach(keys, i, k) {
		struct kh_index_entry e;

		if (decode_entry(k, &e) != 0 || kh_index_add(ix, &e, NULL) != 0)
			goto out;
	}
	rc = 0;
out:
	json_decref(doc);
	return rc;
}

/* Read a root-owned regular file of at most KH_INDEX_FILE_MAX bytes.
 * 1 read, 0 absent, -1 error. */
static int
read_root_file(const char *path, char **text, size_t *len, kh_error *err)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	*text = NULL;
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 077) != 0 || st.st_size > KH_INDEX_FILE_MAX) {
		close(fd);
		return kh_fail(err, KH_ERR_PERM, "%s must be a root-owned file of mode 0600 "
			       "and at most %d bytes", path, KH_INDEX_FILE_MAX);
	}
	*text = malloc((size_t)st.st_size + 1);
	if (*text == NULL) {
		close(fd);
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	}
	n = read(fd, *text, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(*text);
		*text = NULL;
		return kh_fail(err, KH_ERR_INTERNAL, "cannot read %s", path);
	}
	(*text)[n] = '\0';
	*len = (size_t)n;
	return 1;
}

int
kh_index_load(uid_t uid, struct kh_index *ix, kh_error *err)
{
	char path[sizeof(KH_RUNDIR) + 96];
	char *text = NULL;
	size_t len = 0;
	int rc;

	memset(ix, 0, sizeof(*ix));
	ix->uid = uid;
	if (index_path(uid, "", path, sizeof(path), err) != 0)
		return -1;
	rc = read_root_file(path, &text, &len, err);
	if (rc <= 0)
		return rc;
	rc = decode_index(text, len, uid, ix);
	free(text);
	if (rc == 1) {
		/* Written by another version of kubehsm since boot: its keys
		 * still end at their expiry; this index starts over. */
		kh_index_clear(ix);
		ix->uid = uid;
		return 0;
	}
	if (rc != 0) {
		kh_index_clear(ix);
		ix->uid = uid;
		return kh_fail(err, KH_ERR_INTERNAL, "%s is damaged; remove it to start over "
			       "(issued sessions then end only at their expiry)", path);
	}
	return 0;
}

/* ---- encoding ------------------------------------------------------------- */

static json_t *
encode_index(const struct kh_index *ix)
{
	json_t *doc, *keys;
	size_t i;

	keys = json_array();
	doc = json_pack("{s:i, s:I, s:s, s:i, s:o}", "v", KH_INDEX_VERSION,
			"uid", (json_int_t)ix->uid, "user", ix->user,
			"logins", (int)ix->logins, "keys", keys);
	if (doc == NULL)
		return NULL;
	for (i = 0; i < ix->n; i++) {
		const struct kh_index_entry *e = &ix->e[i];
		json_t *k = json_pack("{s:s, s:s, s:s, s:i, s:I, s:I}",
				      "kind", kh_index_kind_name(e->kind),
				      "issuer", e->issuer, "scope", kh_scope_name(e->scope),
				      "serial", (int)e->serial,
				      "created", (json_int_t)e->created,
				      "expires", (json_int_t)e->expires);

		if (k == NULL || json_array_append_new(keys, k) != 0) {
			json_decref(doc);
			return NULL;
		}
	}
	return doc;
}

int
kh_index_save(const struct kh_index *ix, kh_error *err)
{
	char path[sizeof(KH_RUNDIR) + 96], tmp[sizeof(KH_RUNDIR) + 96];
	json_t *doc;
	char *text;
	int fd, rc;

	if (index_path(ix->uid, "", path, sizeof(path), err) != 0 ||
	    index_path(ix->uid, ".new", tmp, sizeof(tmp), err) != 0)
		return -1;
	if (ix->n == 0 && ix->logins == 0) {
		if (unlink(path) != 0 && errno != ENOENT)
			return kh_fail(err, KH_ERR_INTERNAL, "cannot remove %s: %s", path,
				       strerror(errno));
		return 0;
	}
	doc = encode_index(ix);
	text = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (text == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	(void)unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	rc = fd >= 0 && kh_write_all(fd, text, strlen(text)) == 0 ? 0 : -1;
	if (fd >= 0 && close(fd) != 0)
		rc = -1;
	free(text);
	if (rc != 0 || rename(tmp, path) != 0) {
		kh_fail(err, KH_ERR_INTERNAL, "cannot write %s: %s", path, strerror(errno));
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

int
kh_uids_push(uid_t **v, size_t *n, size_t *cap, uid_t u)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		uid_t *nv = reallocarray(*v, ncap, sizeof(*nv));

		if (nv == NULL)
			return -1;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = u;
	return 0;
}

int
kh_index_uids(uid_t **uids, size_t *n, kh_error *err)
{
	char dir[sizeof(KH_RUNDIR) + 64];
	size_t cap = 0;
	struct dirent *d;
	uid_t *v = NULL;
	DIR *dp;

	*uids = NULL;
	*n = 0;
	if (kh_rundir_sub(KH_INDEX_DIR, dir, sizeof(dir), err) != 0)
		return -1;
	dp = opendir(dir);
	if (dp == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot read %s: %s", dir, strerror(errno));
	while ((d = readdir(dp)) != NULL) {
		unsigned long u;
		char *end;

		errno = 0;
		u = strtoul(d->d_name, &end, 10);
		if (errno != 0 || end == d->d_name || strcmp(end, ".json") != 0 ||
		    u == 0 || u >= UINT32_MAX)
			continue;
		if (kh_uids_push(&v, n, &cap, (uid_t)u) != 0) {
			free(v);
			closedir(dp);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
	}
	closedir(dp);
	*uids = v;
	return 0;
}
