/*
 * kh_policy — load /etc/kubehsm/kubehsm.conf into one validated structure.
 *
 * The policy decides who may mint credentials and with which keys, so the
 * loader is deliberately unforgiving: every key must be known, every value
 * well-typed and in range, and the files it trusts must be owned and
 * protected as the man page says.  The first problem found is reported as
 * one "file:line: what is wrong" line and nothing partial is returned.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include <libconfig.h>

#include "lib/kh_error.h"
#include "conf/kh_policy.h"
#include "lib/kh_duration.h"
#include "lib/kh_template.h"

#define KH_DEFAULT_TOKEN_LABEL   "%u"
#define KH_DEFAULT_KEY_LABEL     "kube"
#define KH_DEFAULT_USERNAME      "%u"
#define KH_DEFAULT_TTL           "8h"
#define KH_ISSUER_ID_MAX         32
#define KH_KEY_ID_HEX_MAX        128  /* 64 bytes of CKA_ID is plenty */
#define KH_SUGGEST_DISTANCE      2

/* Everything a load needs to phrase an error. */
struct kh_loader {
	const char *name;                       /* file name used in messages */
	const struct kh_policy_load_opts *opts;
	kh_error *err;
};

/* How a string value is checked, beyond being a string. */
enum {
	KH_STR_NONEMPTY = 1 << 0,  /* "" is an error */
	KH_STR_ABSPATH  = 1 << 1,  /* absolute path (or "" if allowed) */
	KH_STR_TEMPLATE = 1 << 2,  /* only %u and %% escapes */
};

/* What a named file must look like on disk. */
enum kh_file_kind {
	KH_FILE_PUBLIC,  /* module, certificates, CRL: root-controlled, readable */
	KH_FILE_SECRET,  /* the issuer PIN: owner only, no symlink */
};

static const char *const kh_root_keys[] = {
	"version", "pkcs11", "token", "trust", "identity", "issuer", "session",
	"signer", "polkit", "relay", NULL,
};
static const char *const kh_pkcs11_keys[] = { "module", "forward", NULL };
static const char *const kh_forward_keys[] = { "module", "socket", NULL };
static const char *const kh_token_keys[] = { "label", "key_label", "key_id", NULL };
static const char *const kh_trust_keys[] = { "ca_file", "crl_file", "map", "domains", NULL };
static const char *const kh_identity_keys[] = {
	"username", "groups", "allow_groups", "deny_groups", NULL,
};
static const char *const kh_issuer_keys[] = {
	"id", "key", "module", "cert_file", "pin_file", "key_type", NULL,
};
static const char *const kh_session_keys[] = {
	"ttl", "scope", "revoke_on_logout", "cache_pin", "allow_long_ttl", "deliver", NULL,
};
static const char *const kh_signer_keys[] = { "key", NULL };
static const char *const kh_polkit_keys[] = { "mode", NULL };


/* ------------------------------------------------------------------ */
/* error helpers                                                        */

static int
kh_fail_at(const struct kh_loader *ld, const config_setting_t *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "name:line: message"; the line is left out when libconfig has none (root). */
static int
kh_fail_at(const struct kh_loader *ld, const config_setting_t *s, const char *fmt, ...)
{
	char msg[KH_ERROR_MAX];
	unsigned int line = s != NULL ? config_setting_source_line(s) : 0;
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line > 0)
		return kh_fail(ld->err, KH_ERR_CONFIG, "%s:%u: %s", ld->name, line, msg);
	return kh_fail(ld->err, KH_ERR_CONFIG, "%s: %s", ld->name, msg);
}

static int
kh_fail_oom(const struct kh_loader *ld)
{
	return kh_fail(ld->err, KH_ERR_INTERNAL, "%s: out of memory", ld->name);
}

/* Levenshtein distance, for "did you mean"; long names are not compared. */
static size_t
kh_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t row[33], prev, tmp, best;

	if (la > 32 || lb > 32)
		return SIZE_MAX;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			tmp = row[j];
			best = prev + (a[i - 1] == b[j - 1] ? 0 : 1);
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

static const char *
kh_nearest_key(const char *name, const char *const *known)
{
	const char *best = NULL;
	size_t d, best_d = KH_SUGGEST_DISTANCE + 1;

	for (; *known != NULL; known++) {
		d = kh_edit_distance(name, *known);
		if (d < best_d) {
			best_d = d;
			best = *known;
		}
	}
	return best;
}

/* Typos must not be silently ignored: every member must be a known key. */
static int
kh_check_keys(const struct kh_loader *ld, const config_setting_t *group,
	      const char *section, const char *const *known)
{
	const config_setting_t *s;
	const char *name, *hint;
	const char *const *k;
	int i, n = config_setting_length(group);

	for (i = 0; i < n; i++) {
		s = config_setting_get_elem(group, (unsigned int)i);
		name = s != NULL ? config_setting_name(s) : NULL;
		if (name == NULL)
			continue;
		for (k = known; *k != NULL; k++) {
			if (strcmp(name, *k) == 0)
				break;
		}
		if (*k != NULL)
			continue;
		hint = kh_nearest_key(name, known);
		if (section == NULL)
			return kh_fail_at(ld, s, "unknown section '%s'%s%s%s", name,
					  hint ? " (did you mean '" : "", hint ? hint : "",
					  hint ? "'?)" : "");
		return kh_fail_at(ld, s, "unknown key '%s' in section '%s'%s%s%s", name, section,
				  hint ? " (did you mean '" : "", hint ? hint : "",
				  hint ? "'?)" : "");
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* file checks                                                          */

/*
 * StrictModes for the directories above a file the policy trusts: whoever
 * may write one of them may replace the file.  Like OpenSSH's safe_path,
 * the path is resolved first; then every directory from the file's own up
 * to / must belong to root (or the trusted uid) and be closed to group and
 * others — unless it is a sticky directory of root's (or the trusted
 * uid's), such as /tmp: others may add entries there but can neither
 * rename nor remove another owner's, so a root-owned entry stays put.
 * 0 when safe; 1 with *bad (a copy of the offending directory, caller
 * frees) and *st; -1 with errno when the path cannot be resolved.
 */
static int
kh_unsafe_ancestor(const char *path, uid_t trusted, char **bad, struct stat *st)
{
	char *real = realpath(path, NULL), *slash;

	*bad = NULL;
	if (real == NULL)
		return -1;
	for (;;) {
		slash = strrchr(real, '/');
		if (slash == NULL)
			break;
		if (slash == real)
			slash[1] = '\0';   /* "/" itself */
		else
			*slash = '\0';
		if (stat(real, st) != 0) {
			free(real);
			return -1;
		}
		if ((st->st_uid != 0 && st->st_uid != trusted) ||
		    ((st->st_mode & 022) != 0 && (st->st_mode & S_ISVTX) == 0)) {
			*bad = real;
			return 1;
		}
		if (real[1] == '\0')
			break;
	}
	free(real);
	return 0;
}

/* kh_unsafe_ancestor as a policy error at setting s (NULL: the file). */
static int
kh_check_ancestors(const struct kh_loader *ld, const config_setting_t *s,
		   const char *what, const char *path)
{
	struct stat st;
	char *bad = NULL;
	int rc = kh_unsafe_ancestor(path, ld->opts->trusted_uid, &bad, &st);

	if (rc == 0)
		return 0;
	if (rc < 0)
		rc = s != NULL ? kh_fail_at(ld, s, "%s %s: %s", what, path, strerror(errno))
			       : kh_fail(ld->err, KH_ERR_CONFIG, "%s: %s", path, strerror(errno));
	else if (st.st_uid != 0 && st.st_uid != ld->opts->trusted_uid)
		rc = s != NULL
			? kh_fail_at(ld, s, "%s %s: directory %s is owned by uid %lu; whoever owns "
				     "it can replace the file", what, path, bad,
				     (unsigned long)st.st_uid)
			: kh_fail(ld->err, KH_ERR_CONFIG, "%s: directory %s is owned by uid %lu; "
				  "whoever owns it can change the policy", path, bad,
				  (unsigned long)st.st_uid);
	else
		rc = s != NULL
			? kh_fail_at(ld, s, "%s %s: directory %s has mode %04o: group/others can "
				     "replace the file; chmod go-w %s", what, path, bad,
				     (unsigned int)(st.st_mode & 07777), bad)
			: kh_fail(ld->err, KH_ERR_CONFIG, "%s: directory %s has mode %04o: "
				  "group/others could change the policy; chmod go-w %s", path,
				  bad, (unsigned int)(st.st_mode & 07777), bad);
	free(bad);
	return rc;
}

static int
kh_check_named_file(const struct kh_loader *ld, const config_setting_t *s,
		    const char *what, const char *path, enum kh_file_kind kind)
{
	struct stat st;
	int fd, flags = O_PATH | O_CLOEXEC;
	uid_t trusted = ld->opts->trusted_uid;

	if (ld->opts->skip_file_checks || path[0] == '\0')
		return 0;
	if (kind == KH_FILE_SECRET && ld->opts->skip_secret_file_checks)
		return 0;
	/*
	 * O_PATH: the loader only inspects these files and never reads them
	 * (the PIN least of all), and fstat on the descriptor describes the
	 * very file that was resolved.  A PIN file must not be a symlink, so
	 * nobody can point it elsewhere.
	 */
	if (kind == KH_FILE_SECRET)
		flags |= O_NOFOLLOW;
	fd = open(path, flags);
	if (fd < 0)
		return kh_fail_at(ld, s, "%s %s: %s", what, path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		int e = errno;

		(void)close(fd);
		return kh_fail_at(ld, s, "%s %s: %s", what, path, strerror(e));
	}
	(void)close(fd);
	if (S_ISLNK(st.st_mode))
		return kh_fail_at(ld, s, "%s %s: is a symbolic link; name the file itself",
				  what, path);
	if (!S_ISREG(st.st_mode))
		return kh_fail_at(ld, s, "%s %s: not a regular file", what, path);
	if (kind != KH_FILE_SECRET && st.st_uid != 0 && st.st_uid != trusted)
		return kh_fail_at(ld, s, "%s %s: owned by uid %lu; it must be owned by root%s",
				  what, path, (unsigned long)st.st_uid,
				  trusted != 0 ? " or the trusted uid" : "");
	if (kind == KH_FILE_SECRET) {
		if (st.st_uid != trusted)
			return kh_fail_at(ld, s, "%s %s: owned by uid %lu; the issuer PIN file "
					  "must be owned by uid %lu", what, path,
					  (unsigned long)st.st_uid, (unsigned long)trusted);
		if ((st.st_mode & 077) != 0)
			return kh_fail_at(ld, s, "%s %s: mode %04o lets group/others read the "
					  "issuer PIN; chmod 0600 %s", what, path,
					  (unsigned int)(st.st_mode & 07777), path);
	} else if ((st.st_mode & 022) != 0) {
		return kh_fail_at(ld, s, "%s %s: mode %04o lets group/others replace a file "
				  "the policy trusts; chmod go-w %s", what, path,
				  (unsigned int)(st.st_mode & 07777), path);
	}
	return kh_check_ancestors(ld, s, what, path);
}

/* The config and its directory: a non-root writer could rewrite the policy. */
static int
kh_check_owner_mode(const struct kh_loader *ld, const struct stat *st,
		    const char *what, const char *path)
{
	uid_t trusted = ld->opts->trusted_uid;

	if (st->st_uid != trusted && st->st_uid != 0)
		return kh_fail(ld->err, KH_ERR_CONFIG,
			       "%s: %s owned by uid %lu; it must be owned by %s (uid %lu)",
			       ld->name, what, (unsigned long)st->st_uid,
			       trusted == 0 ? "root" : "the trusted user", (unsigned long)trusted);
	if ((st->st_mode & 022) != 0)
		return kh_fail(ld->err, KH_ERR_CONFIG,
			       "%s: %s %s has mode %04o: group/others could change the policy; "
			       "chmod go-w %s", ld->name, what, path,
			       (unsigned int)(st->st_mode & 07777), path);
	return 0;
}

/* Open the policy file race-free: check its directory, then openat() in it. */
static int
kh_open_policy(const struct kh_loader *ld, const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash != NULL ? slash + 1 : path;
	char *dir;
	struct stat st;
	int dfd, fd, e;

	if (base[0] == '\0')
		return kh_fail(ld->err, KH_ERR_CONFIG, "%s: names a directory, not a file", path);
	if (slash == NULL)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (dir == NULL)
		return kh_fail_oom(ld);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		e = errno;
		kh_fail(ld->err, KH_ERR_CONFIG, "%s: cannot open directory %s: %s",
			path, dir, strerror(e));
		free(dir);
		return -1;
	}
	if (fstat(dfd, &st) != 0 ||
	    kh_check_owner_mode(ld, &st, "directory", dir) != 0) {
		if (ld->err->code == KH_OK)
			kh_fail(ld->err, KH_ERR_CONFIG, "%s: %s: %s", path, dir, strerror(errno));
		(void)close(dfd);
		free(dir);
		return -1;
	}
	free(dir);
	fd = openat(dfd, base, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	e = errno;
	(void)close(dfd);
	if (fd < 0 && e == ELOOP)
		return kh_fail(ld->err, KH_ERR_CONFIG,
			       "%s: is a symbolic link; name the policy file itself", path);
	if (fd < 0)
		return kh_fail(ld->err, KH_ERR_CONFIG, "%s: cannot open: %s", path, strerror(e));
	if (fstat(fd, &st) != 0) {
		e = errno;
		(void)close(fd);
		return kh_fail(ld->err, KH_ERR_CONFIG, "%s: %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode) || kh_check_owner_mode(ld, &st, "file", path) != 0 ||
	    kh_check_ancestors(ld, NULL, "policy", path) != 0) {
		if (!S_ISREG(st.st_mode))
			kh_fail(ld->err, KH_ERR_CONFIG, "%s: not a regular file", path);
		(void)close(fd);
		return -1;
	}
	return fd;
}

/* Read the whole (bounded) file; returns a NUL-terminated buffer. */
static char *
kh_read_policy(const struct kh_loader *ld, int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap), *nbuf;
	ssize_t r;

	if (buf == NULL)
		return kh_fail_oom(ld), NULL;
	for (;;) {
		if (len + 1 >= cap) {
			if (len > KH_POLICY_MAX_SIZE) {
				kh_fail(ld->err, KH_ERR_CONFIG, "%s: larger than %d bytes",
					ld->name, KH_POLICY_MAX_SIZE);
				free(buf);
				return NULL;
			}
			cap *= 2;
			nbuf = realloc(buf, cap + 1);
			if (nbuf == NULL) {
				free(buf);
				return kh_fail_oom(ld), NULL;
			}
			buf = nbuf;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			kh_fail(ld->err, KH_ERR_CONFIG, "%s: read: %s", ld->name, strerror(errno));
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len > KH_POLICY_MAX_SIZE) {
		kh_fail(ld->err, KH_ERR_CONFIG, "%s: larger than %d bytes",
			ld->name, KH_POLICY_MAX_SIZE);
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	if (strlen(buf) != len) {
		kh_fail(ld->err, KH_ERR_CONFIG, "%s: contains a NUL byte; not a text file", ld->name);
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * Refuse @include before libconfig sees it: an included file would escape
 * the owner and mode checks made on this one, and libconfig would open it.
 * Also refuse text libconfig cannot number (line numbers are 16-bit).
 */
static int
kh_check_text(const struct kh_loader *ld, const char *text)
{
	const char *p = text;
	unsigned long line = 1;

	for (;;) {
		const char *q = p;

		while (*q == ' ' || *q == '\t')
			q++;
		if (strncmp(q, "@include", 8) == 0)
			return kh_fail(ld->err, KH_ERR_CONFIG,
				       "%s:%lu: @include is not allowed: the whole policy must be "
				       "in this one checked file", ld->name, line);
		p = strchr(p, '\n');
		if (p == NULL)
			return 0;
		p++;
		if (++line > USHRT_MAX)
			return kh_fail(ld->err, KH_ERR_CONFIG, "%s: more than %u lines",
				       ld->name, USHRT_MAX);
	}
}

/* ------------------------------------------------------------------ */
/* typed getters                                                        */

static bool
kh_has_control_char(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return true;
	}
	return false;
}

/* A group (section) of the root, or NULL when absent and not required. */
static int
kh_get_section(const struct kh_loader *ld, const config_setting_t *root,
	       const char *name, bool required, const char *const *known,
	       config_setting_t **out)
{
	config_setting_t *s = config_setting_get_member(root, name);

	*out = NULL;
	if (s == NULL) {
		if (required)
			return kh_fail_at(ld, NULL, "missing required section '%s' "
					  "(%s = { ... };)", name, name);
		return 0;
	}
	if (!config_setting_is_group(s))
		return kh_fail_at(ld, s, "%s must be a group: %s = { ... };", name, name);
	if (kh_check_keys(ld, s, name, known) != 0)
		return -1;
	*out = s;
	return 0;
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF. */
static bool
kh_valid_utf8(const char *v)
{
	const unsigned char *p = (const unsigned char *)v;

	while (*p != '\0') {
		unsigned int c = *p, n, cp, min;

		if (c < 0x80) {
			p++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1; cp = c & 0x1f; min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2; cp = c & 0x0f; min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3; cp = c & 0x07; min = 0x10000;
		} else {
			return false;
		}
		for (unsigned int i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += n + 1;
	}
	return true;
}

static int
kh_check_string_value(const struct kh_loader *ld, const config_setting_t *s,
		      const char *section, const char *key, const char *v, unsigned int flags)
{
	const char *bad;

	if (kh_has_control_char(v))
		return kh_fail_at(ld, s, "%s.%s contains a control character", section, key);
	if (!kh_valid_utf8(v))
		return kh_fail_at(ld, s, "%s.%s is not valid UTF-8", section, key);
	if ((flags & KH_STR_NONEMPTY) && v[0] == '\0')
		return kh_fail_at(ld, s, "%s.%s must not be empty", section, key);
	if ((flags & KH_STR_ABSPATH) && v[0] != '\0' && v[0] != '/')
		return kh_fail_at(ld, s, "%s.%s must be an absolute path, not \"%s\"",
				  section, key, v);
	if (flags & KH_STR_TEMPLATE) {
		bad = kh_template_check(v);
		if (bad != NULL && bad[1] == '\0')
			return kh_fail_at(ld, s, "%s.%s: \"%s\" ends with a lone '%%'; write %%%% "
					  "for a literal %%", section, key, v);
		if (bad != NULL)
			return kh_fail_at(ld, s, "%s.%s: \"%s\": '%%%c' is not a template escape; "
					  "only %%u (user name) and %%%% (a literal %%) are",
					  section, key, v, bad[1]);
	}
	return 0;
}

/*
 * A string member.  def == NULL means required.  `where` is the setting the
 * value came from (for later errors), or the group when defaulted.
 */
static int
kh_get_string(const struct kh_loader *ld, const config_setting_t *group,
	      const char *section, const char *key, const char *def,
	      unsigned int flags, char **out, const config_setting_t **where)
{
	const config_setting_t *s = group != NULL ? config_setting_get_member(group, key) : NULL;
	const char *v;

	if (where != NULL)
		*where = s != NULL ? s : group;
	if (s == NULL) {
		if (def == NULL)
			return kh_fail_at(ld, group, "%s.%s is required", section, key);
		v = def;
	} else {
		if (config_setting_type(s) != CONFIG_TYPE_STRING)
			return kh_fail_at(ld, s, "%s.%s must be a string (\"...\")", section, key);
		v = config_setting_get_string(s);
		if (v == NULL)
			return kh_fail_at(ld, s, "%s.%s: unreadable string", section, key);
		if (kh_check_string_value(ld, s, section, key, v, flags) != 0)
			return -1;
	}
	*out = strdup(v);
	if (*out == NULL)
		return kh_fail_oom(ld);
	return 0;
}

/*
 * A list of strings (array or list syntax), at most KH_POLICY_LIST_MAX,
 * each checked like kh_get_string's values (flags).  Absent: a copy of
 * `def` (NULL-terminated; NULL for none).  `where` as for kh_get_string.
 */
static int
kh_get_string_list(const struct kh_loader *ld, const config_setting_t *group,
		   const char *section, const char *key, const char *const *def,
		   unsigned int flags, char ***out, size_t *n, const config_setting_t **where)
{
	const config_setting_t *s = group != NULL ? config_setting_get_member(group, key) : NULL;
	size_t count = 0, i;
	const char *v;

	*out = NULL;
	*n = 0;
	if (where != NULL)
		*where = s != NULL ? s : group;
	if (s != NULL && !config_setting_is_array(s) && !config_setting_is_list(s))
		return kh_fail_at(ld, s, "%s.%s must be a list of strings, e.g. [ \"...\" ]",
				  section, key);
	if (s != NULL)
		count = (size_t)config_setting_length(s);
	else
		while (def != NULL && def[count] != NULL)
			count++;
	if (count > KH_POLICY_LIST_MAX)
		return kh_fail_at(ld, s, "%s.%s has %zu entries; at most %d", section, key,
				  count, KH_POLICY_LIST_MAX);
	if (count == 0)
		return 0;
	*out = calloc(count, sizeof(**out));
	if (*out == NULL)
		return kh_fail_oom(ld);
	for (i = 0; i < count; i++) {
		const config_setting_t *e = s != NULL ? config_setting_get_elem(s, (unsigned int)i) : NULL;

		if (s == NULL) {
			v = def[i];
		} else if (e == NULL || config_setting_type(e) != CONFIG_TYPE_STRING ||
			   (v = config_setting_get_string(e)) == NULL) {
			return kh_fail_at(ld, e != NULL ? e : s, "%s.%s entries must be strings",
					  section, key);
		} else if (kh_check_string_value(ld, e, section, key, v, flags) != 0) {
			return -1;
		}
		if (((*out)[i] = strdup(v)) == NULL)
			return kh_fail_oom(ld);
		(*n)++;
	}
	return 0;
}

static void
kh_strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int
kh_get_bool(const struct kh_loader *ld, const config_setting_t *group,
	    const char *section, const char *key, bool def, bool *out)
{
	const config_setting_t *s = group != NULL ? config_setting_get_member(group, key) : NULL;

	if (s == NULL) {
		*out = def;
		return 0;
	}
	if (config_setting_type(s) != CONFIG_TYPE_BOOL)
		return kh_fail_at(ld, s, "%s.%s must be a boolean (true/false)", section, key);
	*out = config_setting_get_bool(s) != 0;
	return 0;
}

static int
kh_get_enum(const struct kh_loader *ld, const config_setting_t *group,
	    const char *section, const char *key, const struct kh_enum_word *words,
	    int def, int *out, const config_setting_t **where)
{
	const config_setting_t *s = group != NULL ? config_setting_get_member(group, key) : NULL;
	const struct kh_enum_word *w;
	char valid[128];
	size_t used = 0;
	const char *v;
	int n;

	if (where != NULL)
		*where = s != NULL ? s : group;
	if (s == NULL) {
		*out = def;
		return 0;
	}
	valid[0] = '\0';
	for (w = words; w->word != NULL; w++) {
		n = snprintf(valid + used, sizeof(valid) - used, "%s%s",
			     w == words ? "" : ", ", w->word);
		if (n < 0 || (size_t)n >= sizeof(valid) - used)
			break;
		used += (size_t)n;
	}
	if (config_setting_type(s) != CONFIG_TYPE_STRING)
		return kh_fail_at(ld, s, "%s.%s must be a string, one of: %s", section, key, valid);
	v = config_setting_get_string(s);
	for (w = words; v != NULL && w->word != NULL; w++) {
		if (strcmp(v, w->word) == 0) {
			*out = w->value;
			return 0;
		}
	}
	return kh_fail_at(ld, s, "%s.%s: unknown value \"%s\"; valid: %s", section, key,
			  v != NULL ? v : "", valid);
}

static int
kh_get_duration(const struct kh_loader *ld, const config_setting_t *group,
		const char *section, const char *key, const char *def,
		long min, long max, long *out)
{
	const config_setting_t *s = group != NULL ? config_setting_get_member(group, key) : NULL;
	char lo[32], hi[32];
	kh_error derr;
	const char *v;
	long secs;

	kh_error_clear(&derr);
	if (s == NULL)
		v = def;
	else if (config_setting_type(s) != CONFIG_TYPE_STRING)
		return kh_fail_at(ld, s, "%s.%s must be a duration string such as \"8h\" or "
				  "\"1h30m\"", section, key);
	else
		v = config_setting_get_string(s);
	if (kh_duration_parse(v, &secs, &derr) != 0)
		return kh_fail_at(ld, s, "%s.%s: %s", section, key, derr.msg);
	if (secs < min || secs > max) {
		if (kh_duration_format(min, lo, sizeof(lo)) != 0 ||
		    kh_duration_format(max, hi, sizeof(hi)) != 0)
			return kh_fail(ld->err, KH_ERR_INTERNAL, "duration bounds unprintable");
		return kh_fail_at(ld, s, "%s.%s = \"%s\" is out of range (%s to %s)",
				  section, key, v, lo, hi);
	}
	*out = secs;
	return 0;
}

/* ------------------------------------------------------------------ */
/* sections                                                             */

/* "%U" (the uid) and "%%" are the only escapes of a socket template. */
static const char *
kh_socket_template_bad(const char *t)
{
	for (; *t != '\0'; t++) {
		if (*t != '%')
			continue;
		if (t[1] != 'U' && t[1] != '%')
			return t;
		t++;
	}
	return NULL;
}

/*
 * pkcs11.forward: the user's own token, forwarded from their laptop with
 * p11-kit over ssh -R, for `kubehsm login`.  The socket is a template of
 * the uid, under the user's runtime directory; only kubehsm login's root
 * program (PAM service kubehsm, option `forwarded`) uses it.
 */
static int
kh_load_forward(const struct kh_loader *ld, const config_setting_t *pkcs11,
		struct kh_policy *p)
{
	config_setting_t *g = pkcs11 != NULL ? config_setting_get_member(pkcs11, "forward") : NULL;
	const config_setting_t *mod, *sock;
	const char *bad;

	if (g == NULL)
		return 0;
	if (!config_setting_is_group(g))
		return kh_fail_at(ld, g, "pkcs11.forward must be a group: forward = { module "
				  "= \"...\"; socket = \"...\"; };");
	if (kh_check_keys(ld, g, "pkcs11.forward", kh_forward_keys) != 0 ||
	    kh_get_string(ld, g, "pkcs11.forward", "module", NULL,
			  KH_STR_NONEMPTY | KH_STR_ABSPATH, &p->pkcs11.forward_module, &mod) != 0 ||
	    kh_get_string(ld, g, "pkcs11.forward", "socket", NULL,
			  KH_STR_NONEMPTY | KH_STR_ABSPATH, &p->pkcs11.forward_socket, &sock) != 0)
		return -1;
	bad = kh_socket_template_bad(p->pkcs11.forward_socket);
	if (bad != NULL)
		return kh_fail_at(ld, sock, "pkcs11.forward.socket: \"%s\": '%%%c' is not a "
				  "template escape; only %%U (the user's uid) and %%%% are",
				  p->pkcs11.forward_socket, bad[1] != '\0' ? bad[1] : ' ');
	if (strstr(p->pkcs11.forward_socket, "%U") == NULL)
		return kh_fail_at(ld, sock, "pkcs11.forward.socket must name each user's own "
				  "socket with %%U (the uid), e.g. \"/run/user/%%U/p11-kit/pkcs11\"");
	return kh_check_named_file(ld, mod, "pkcs11.forward.module", p->pkcs11.forward_module,
				   KH_FILE_PUBLIC);
}

char *
kh_policy_forward_socket(const struct kh_policy *p, uid_t uid, kh_error *err)
{
	const char *t = p->pkcs11.forward_socket;
	char uidbuf[16], *out;
	size_t len = 0, cap;

	if (t == NULL) {
		kh_fail(err, KH_ERR_CONFIG, "the policy names no forwarded token "
			"(pkcs11.forward)");
		return NULL;
	}
	(void)snprintf(uidbuf, sizeof(uidbuf), "%u", (unsigned)uid);
	/* Each two-byte "%U" grows to at most the uid's length. */
	cap = strlen(t) + (strlen(t) / 2) * strlen(uidbuf) + 1;
	out = malloc(cap);
	if (out == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	for (; *t != '\0'; t++) {
		if (t[0] == '%' && t[1] == 'U') {
			memcpy(out + len, uidbuf, strlen(uidbuf));
			len += strlen(uidbuf);
			t++;
		} else if (t[0] == '%' && t[1] == '%') {
			out[len++] = '%';
			t++;
		} else {
			out[len++] = *t;
		}
	}
	out[len] = '\0';
	return out;
}

static int
kh_load_pkcs11(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g;
	const config_setting_t *where;

	if (kh_get_section(ld, root, "pkcs11", true, kh_pkcs11_keys, &g) != 0 ||
	    kh_get_string(ld, g, "pkcs11", "module", NULL, KH_STR_NONEMPTY | KH_STR_ABSPATH,
			  &p->pkcs11.module, &where) != 0 ||
	    kh_check_named_file(ld, where, "pkcs11.module", p->pkcs11.module, KH_FILE_PUBLIC) != 0)
		return -1;
	return kh_load_forward(ld, g, p);
}

static bool
kh_is_hex(const char *s)
{
	for (; *s != '\0'; s++) {
		if (!isxdigit((unsigned char)*s))
			return false;
	}
	return true;
}

static int
kh_load_token(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g;
	const config_setting_t *where;
	size_t n;

	if (kh_get_section(ld, root, "token", false, kh_token_keys, &g) != 0 ||
	    kh_get_string(ld, g, "token", "label", KH_DEFAULT_TOKEN_LABEL,
			  KH_STR_NONEMPTY | KH_STR_TEMPLATE, &p->token.label, NULL) != 0 ||
	    kh_get_string(ld, g, "token", "key_label", KH_DEFAULT_KEY_LABEL,
			  KH_STR_TEMPLATE, &p->token.key_label, NULL) != 0 ||
	    kh_get_string(ld, g, "token", "key_id", "", 0, &p->token.key_id, &where) != 0)
		return -1;
	n = strlen(p->token.key_id);
	if (!kh_is_hex(p->token.key_id) || n % 2 != 0 || n > KH_KEY_ID_HEX_MAX)
		return kh_fail_at(ld, where, "token.key_id \"%s\" must be an even number of hex "
				  "digits (at most %d), e.g. \"01\" or \"a1b2\"",
				  p->token.key_id, KH_KEY_ID_HEX_MAX);
	if (p->token.key_label[0] == '\0' && n == 0)
		return kh_fail_at(ld, g, "token: key_label and key_id are both empty; "
				  "set at least one so the user's key can be found");
	return 0;
}

/* A DNS domain name as written in certificates: letters, digits, '-' and
 * inner dots; lowered in place for exact, case-insensitive matching. */
static bool
kh_valid_domain(char *d)
{
	size_t n = strlen(d), i;

	if (n == 0 || n > 253 || d[0] == '.' || d[0] == '-' || d[n - 1] == '.' ||
	    strstr(d, "..") != NULL)
		return false;
	for (i = 0; i < n; i++) {
		if (!isalnum((unsigned char)d[i]) && d[i] != '.' && d[i] != '-')
			return false;
		d[i] = (char)tolower((unsigned char)d[i]);
	}
	return true;
}

static int
kh_load_trust(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g;
	const config_setting_t *ca, *crl, *doms;
	int map;
	size_t i;

	if (kh_get_section(ld, root, "trust", true, kh_trust_keys, &g) != 0 ||
	    kh_get_string(ld, g, "trust", "ca_file", NULL, KH_STR_NONEMPTY | KH_STR_ABSPATH,
			  &p->trust.ca_file, &ca) != 0 ||
	    kh_get_string(ld, g, "trust", "crl_file", "", KH_STR_ABSPATH,
			  &p->trust.crl_file, &crl) != 0 ||
	    kh_get_enum(ld, g, "trust", "map", kh_map_words, KH_MAP_CN, &map, NULL) != 0 ||
	    kh_get_string_list(ld, g, "trust", "domains", NULL, KH_STR_NONEMPTY,
			       &p->trust.domains, &p->trust.ndomains, &doms) != 0)
		return -1;
	p->trust.map = (enum kh_map_rule)map;
	for (i = 0; i < p->trust.ndomains; i++)
		if (!kh_valid_domain(p->trust.domains[i]))
			return kh_fail_at(ld, doms, "trust.domains: \"%s\" is not a domain name "
					  "(e.g. \"example.com\", no '@')", p->trust.domains[i]);
	/* email and upn keep only the part before the @: a CA that certifies
	 * more than one domain would make alice@partner.example local alice. */
	if ((map == KH_MAP_EMAIL || map == KH_MAP_UPN) && p->trust.ndomains == 0)
		return kh_fail_at(ld, g, "trust.domains is required with map = \"%s\": the "
				  "user is the part before the @, so name the domain(s) whose "
				  "users are this host's, e.g. domains = [ \"example.com\" ]",
				  kh_map_rule_name(p->trust.map));
	if (map != KH_MAP_EMAIL && map != KH_MAP_UPN && p->trust.ndomains > 0)
		return kh_fail_at(ld, doms, "trust.domains applies only to map = \"email\" or "
				  "\"upn\", not \"%s\"", kh_map_rule_name(p->trust.map));
	if (kh_check_named_file(ld, ca, "trust.ca_file", p->trust.ca_file, KH_FILE_PUBLIC) != 0)
		return -1;
	return kh_check_named_file(ld, crl, "trust.crl_file", p->trust.crl_file, KH_FILE_PUBLIC);
}

/* One identity.groups entry: "cert:O", "cert:OU", "unix:<glob>", "static:<name>". */
static int
kh_parse_group_rule(const struct kh_loader *ld, const config_setting_t *s,
		    const char *v, struct kh_group_rule *rule)
{
	const char *arg;

	if (strncmp(v, "cert:", 5) == 0) {
		arg = v + 5;
		if (strcmp(arg, "O") != 0 && strcmp(arg, "OU") != 0)
			return kh_fail_at(ld, s, "identity.groups: \"%s\": the certificate "
					  "attribute must be O or OU", v);
		rule->source = KH_GROUP_CERT;
	} else if (strncmp(v, "unix:", 5) == 0) {
		arg = v + 5;
		rule->source = KH_GROUP_UNIX;
	} else if (strncmp(v, "static:", 7) == 0) {
		arg = v + 7;
		rule->source = KH_GROUP_STATIC;
	} else {
		return kh_fail_at(ld, s, "identity.groups: \"%s\" must start with cert:, unix: "
				  "or static: (e.g. \"cert:O\", \"unix:k8s-*\", \"static:devs\")", v);
	}
	if (arg[0] == '\0')
		return kh_fail_at(ld, s, "identity.groups: \"%s\" has nothing after the ':'", v);
	if (kh_has_control_char(arg))
		return kh_fail_at(ld, s, "identity.groups: entry contains a control character");
	rule->arg = strdup(arg);
	if (rule->arg == NULL)
		return kh_fail_oom(ld);
	return 0;
}

static int
kh_load_identity(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g, *list, *e;
	const char *v;
	int i, n;

	static const char *const allow_all[] = { "*", NULL };
	static const char *const deny_system[] = { "system:*", NULL };

	if (kh_get_section(ld, root, "identity", false, kh_identity_keys, &g) != 0 ||
	    kh_get_string(ld, g, "identity", "username", KH_DEFAULT_USERNAME,
			  KH_STR_NONEMPTY | KH_STR_TEMPLATE, &p->identity.username, NULL) != 0 ||
	    kh_get_string_list(ld, g, "identity", "allow_groups", allow_all, KH_STR_NONEMPTY,
			       &p->identity.allow_groups, &p->identity.nallow_groups, NULL) != 0 ||
	    kh_get_string_list(ld, g, "identity", "deny_groups", deny_system, KH_STR_NONEMPTY,
			       &p->identity.deny_groups, &p->identity.ndeny_groups, NULL) != 0)
		return -1;
	list = g != NULL ? config_setting_get_member(g, "groups") : NULL;
	if (list == NULL)
		return 0;
	if (!config_setting_is_array(list) && !config_setting_is_list(list))
		return kh_fail_at(ld, list, "identity.groups must be a list of strings, "
				  "e.g. [ \"cert:O\", \"unix:k8s-*\" ]");
	n = config_setting_length(list);
	if (n == 0)
		return 0;
	p->identity.groups = calloc((size_t)n, sizeof(*p->identity.groups));
	if (p->identity.groups == NULL)
		return kh_fail_oom(ld);
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(list, (unsigned int)i);
		if (e == NULL || config_setting_type(e) != CONFIG_TYPE_STRING ||
		    (v = config_setting_get_string(e)) == NULL)
			return kh_fail_at(ld, e != NULL ? e : list,
					  "identity.groups entries must be strings");
		if (kh_parse_group_rule(ld, e, v, &p->identity.groups[i]) != 0)
			return -1;
		p->identity.ngroups++;
	}
	return 0;
}

static bool
kh_valid_issuer_id(const char *id)
{
	size_t n = strlen(id), i;

	if (n < 1 || n > KH_ISSUER_ID_MAX)
		return false;
	for (i = 0; i < n; i++) {
		if (!isalnum((unsigned char)id[i]) && id[i] != '.' && id[i] != '_' && id[i] != '-')
			return false;
	}
	return true;
}

static int
kh_load_issuer(const struct kh_loader *ld, const config_setting_t *g, bool in_list,
	       const char *default_module, struct kh_issuer *is)
{
	const config_setting_t *where, *idw, *certw, *pinw, *modw;
	int kt;

	if (kh_check_keys(ld, g, "issuer", kh_issuer_keys) != 0 ||
	    kh_get_string(ld, g, "issuer", "id", in_list ? NULL : "", 0, &is->id, &idw) != 0)
		return -1;
	if ((in_list || is->id[0] != '\0') && !kh_valid_issuer_id(is->id))
		return kh_fail_at(ld, idw, "issuer.id \"%s\" must be 1 to %d characters from "
				  "A-Z a-z 0-9 . _ -", is->id, KH_ISSUER_ID_MAX);
	if (kh_get_string(ld, g, "issuer", "key", NULL, KH_STR_NONEMPTY, &is->key, &where) != 0)
		return -1;
	if (strncmp(is->key, "pkcs11:", 7) != 0)
		return kh_fail_at(ld, where, "issuer.key must be a PKCS#11 URI starting with "
				  "\"pkcs11:\", e.g. \"pkcs11:token=kubehsm-host;object=issuer\"");
	if (kh_get_string(ld, g, "issuer", "module", default_module,
			  KH_STR_NONEMPTY | KH_STR_ABSPATH, &is->module, &modw) != 0 ||
	    kh_get_string(ld, g, "issuer", "cert_file", NULL, KH_STR_NONEMPTY | KH_STR_ABSPATH,
			  &is->cert_file, &certw) != 0 ||
	    kh_get_string(ld, g, "issuer", "pin_file", NULL, KH_STR_NONEMPTY | KH_STR_ABSPATH,
			  &is->pin_file, &pinw) != 0 ||
	    kh_get_enum(ld, g, "issuer", "key_type", kh_key_type_words, KH_KEY_EC_P256,
			&kt, NULL) != 0)
		return -1;
	is->key_type = (enum kh_key_type)kt;
	/* The default module was already checked as pkcs11.module. */
	if ((modw != g &&
	     kh_check_named_file(ld, modw, "issuer.module", is->module, KH_FILE_PUBLIC) != 0) ||
	    kh_check_named_file(ld, certw, "issuer.cert_file", is->cert_file, KH_FILE_PUBLIC) != 0 ||
	    kh_check_named_file(ld, pinw, "issuer.pin_file", is->pin_file, KH_FILE_SECRET) != 0)
		return -1;
	return 0;
}

static int
kh_load_issuers(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *s = config_setting_get_member(root, "issuer"), *e;
	bool in_list;
	size_t i, j;
	int n;

	if (s == NULL)
		return kh_fail_at(ld, NULL, "missing required section 'issuer' (issuer = { ... }; "
				  "or issuer = ( { id = ...; ... }, ... );)");
	in_list = config_setting_is_list(s);
	if (!in_list && !config_setting_is_group(s))
		return kh_fail_at(ld, s, "issuer must be a group { ... } or a list of groups "
				  "( { ... }, { ... } )");
	n = in_list ? config_setting_length(s) : 1;
	if (n == 0)
		return kh_fail_at(ld, s, "issuer list is empty; name at least one issuer");
	p->issuers = calloc((size_t)n, sizeof(*p->issuers));
	if (p->issuers == NULL)
		return kh_fail_oom(ld);
	p->nissuers = (size_t)n;
	for (i = 0; i < p->nissuers; i++) {
		e = in_list ? config_setting_get_elem(s, (unsigned int)i) : s;
		if (e == NULL || !config_setting_is_group(e))
			return kh_fail_at(ld, e != NULL ? e : s,
					  "issuer list entries must be groups { id = \"...\"; ... }");
		if (kh_load_issuer(ld, e, in_list, p->pkcs11.module, &p->issuers[i]) != 0)
			return -1;
		for (j = 0; j < i; j++) {
			if (strcmp(p->issuers[j].id, p->issuers[i].id) == 0)
				return kh_fail_at(ld, config_setting_get_member(e, "id"),
						  "issuer.id \"%s\" is used twice; ids must be unique",
						  p->issuers[i].id);
		}
	}
	return 0;
}

static int
kh_load_session(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g;
	int scope, deliver;

	if (kh_get_section(ld, root, "session", false, kh_session_keys, &g) != 0 ||
	    kh_get_duration(ld, g, "session", "ttl", KH_DEFAULT_TTL, KH_TTL_MIN, KH_TTL_MAX,
			    &p->session.ttl) != 0 ||
	    kh_get_enum(ld, g, "session", "scope", kh_scope_words, KH_SCOPE_USER,
			&scope, NULL) != 0 ||
	    kh_get_bool(ld, g, "session", "revoke_on_logout", true,
			&p->session.revoke_on_logout) != 0 ||
	    kh_get_bool(ld, g, "session", "cache_pin", false, &p->session.cache_pin) != 0 ||
	    kh_get_bool(ld, g, "session", "allow_long_ttl", false,
			&p->session.allow_long_ttl) != 0 ||
	    kh_get_enum(ld, g, "session", "deliver", kh_deliver_words, KH_DELIVER_EXEC,
			&deliver, NULL) != 0)
		return -1;
	p->session.scope = (enum kh_scope)scope;
	p->session.deliver = (enum kh_deliver)deliver;
	/* Handed to the user (exec, both), the session key stays valid after a
	 * revocation until the certificate expires, so a long one is a choice;
	 * held by the relay alone, revocation ends it. */
	if (p->session.ttl > KH_TTL_LONG && !p->session.allow_long_ttl &&
	    p->session.deliver != KH_DELIVER_RELAY)
		return kh_fail_at(ld, g != NULL && config_setting_get_member(g, "ttl") != NULL
					  ? config_setting_get_member(g, "ttl") : g,
				  "session.ttl is longer than 24h: with deliver = \"%s\" a revoked "
				  "user keeps a valid session certificate until it expires; set "
				  "session.allow_long_ttl = true to accept that, or shorten the ttl",
				  kh_deliver_name(p->session.deliver));
	return 0;
}

static int
kh_load_signer(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g;
	const config_setting_t *where;
	int key;

	if (kh_get_section(ld, root, "signer", false, kh_signer_keys, &g) != 0 ||
	    kh_get_enum(ld, g, "signer", "key", kh_signer_words, KH_SIGNER_SESSION,
			&key, &where) != 0)
		return -1;
	p->signer.key = (enum kh_signer_key)key;
	/* Signing on the user's token after login needs the PIN kept in the cache. */
	if (p->signer.key == KH_SIGNER_TOKEN && !p->session.cache_pin)
		return kh_fail_at(ld, where, "signer.key = \"token\" needs session.cache_pin = true "
				  "(the token must be unlocked after login)");
	return 0;
}

static int
kh_load_polkit(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g;
	int mode;

	if (kh_get_section(ld, root, "polkit", false, kh_polkit_keys, &g) != 0 ||
	    kh_get_enum(ld, g, "polkit", "mode", kh_polkit_words, KH_POLKIT_IF_AVAILABLE,
			&mode, NULL) != 0)
		return -1;
	p->polkit.mode = (enum kh_polkit_mode)mode;
	return 0;
}

/* ------------------------------------------------------------------ */
/* relay: kubehsm-relayd and session.deliver                           */

#define KH_RELAY_DEFAULT_RUN_AS          "kubehsm"
#define KH_RELAY_DEFAULT_HANDSHAKE       "10s"
#define KH_RELAY_DEFAULT_IDLE            "1h"
#define KH_RELAY_DEFAULT_MAX_SESSIONS    1024
#define KH_RELAY_DEFAULT_MAX_CONNS       4096
#define KH_RELAY_DEFAULT_MAX_CONNS_USER  128
#define KH_RELAY_USER_MAX                32

static const char *const kh_relay_keys[] = {
	"run_as", "rundir", "handshake_timeout", "idle_timeout", "max_sessions",
	"max_connections", "max_connections_per_user", "upstream_idle_timeout", "audit",
	"clusters", NULL,
};
static const char *const kh_relay_cluster_keys[] = {
	"name", "listen", "server", "ca_file", "server_name", "issuer", NULL,
};

/* An integer member in [min, max]; def when absent. */
static int
kh_get_long(const struct kh_loader *ld, const config_setting_t *group, const char *section,
	    const char *key, long def, long min, long max, long *out,
	    const config_setting_t **where)
{
	const config_setting_t *s = group != NULL ? config_setting_get_member(group, key) : NULL;
	long long v;

	if (where != NULL)
		*where = s != NULL ? s : group;
	if (s == NULL) {
		*out = def;
		return 0;
	}
	if (config_setting_type(s) != CONFIG_TYPE_INT && config_setting_type(s) != CONFIG_TYPE_INT64)
		return kh_fail_at(ld, s, "%s.%s must be an integer", section, key);
	v = config_setting_get_int64(s);
	if (v < min || v > max)
		return kh_fail_at(ld, s, "%s.%s = %lld is out of range (%ld to %ld)",
				  section, key, v, min, max);
	*out = (long)v;
	return 0;
}

/* A name of [A-Za-z0-9._-], 1..max characters (cluster names, users). */
static bool
kh_valid_word(const char *v, size_t max)
{
	size_t n = strlen(v), i;

	if (n < 1 || n > max)
		return false;
	for (i = 0; i < n; i++) {
		if (!isalnum((unsigned char)v[i]) && v[i] != '.' && v[i] != '_' && v[i] != '-')
			return false;
	}
	return true;
}

/* A DNS name as an API server has one: letters, digits, '-' and '.' only. */
static bool
kh_valid_hostname(const char *h)
{
	size_t n = strlen(h), i;

	if (n < 1 || n > 253 || h[0] == '.' || h[0] == '-')
		return false;
	for (i = 0; i < n; i++) {
		if (!isalnum((unsigned char)h[i]) && h[i] != '-' && h[i] != '.')
			return false;
	}
	return true;
}

/*
 * relay.clusters[].server: "https://HOST[:PORT]" with an optional "/"; HOST
 * is a DNS name, an IPv4 address or a bracketed IPv6 address.  The relay
 * forwards requests unchanged, so a path prefix could not be honoured.
 */
static int
kh_parse_server_url(const struct kh_loader *ld, const config_setting_t *s,
		    struct kh_relay_cluster *c)
{
	const char *u = c->server, *h, *end, *port = NULL;
	unsigned char bin[16];
	char *host;
	size_t hlen;

	if (strncmp(u, "https://", 8) != 0)
		return kh_fail_at(ld, s, "relay.clusters.server \"%s\" must start with https:// "
				  "(the relay speaks mTLS to the API server)", u);
	h = u + 8;
	if (h[0] == '[') {
		end = strchr(h, ']');
		if (end == NULL)
			return kh_fail_at(ld, s, "relay.clusters.server \"%s\": missing ']'", u);
		host = strndup(h + 1, (size_t)(end - h - 1));
		end++;
	} else {
		end = h + strcspn(h, ":/");
		host = strndup(h, (size_t)(end - h));
	}
	if (host == NULL)
		return kh_fail_oom(ld);
	c->server_host = host;
	if (*end == ':') {
		port = end + 1;
		end = port + strspn(port, "0123456789");
	}
	if (strcmp(end, "") != 0 && strcmp(end, "/") != 0)
		return kh_fail_at(ld, s, "relay.clusters.server \"%s\": only https://HOST[:PORT] "
				  "is allowed (no path, query or user)", u);
	hlen = strlen(host);
	if (hlen == 0 ||
	    (h[0] == '[' && inet_pton(AF_INET6, host, bin) != 1) ||
	    (h[0] != '[' && inet_pton(AF_INET, host, bin) != 1 && !kh_valid_hostname(host)))
		return kh_fail_at(ld, s, "relay.clusters.server \"%s\": \"%s\" is not a host name "
				  "or IP address (IPv6 goes in brackets)", u, host);
	c->server_port = 443;
	if (port != NULL) {
		long v = 0;

		for (const char *d = port; d < end; d++)
			v = v > 65535 ? v : v * 10 + (*d - '0');
		if (port == end || v < 1 || v > 65535)
			return kh_fail_at(ld, s, "relay.clusters.server \"%s\": bad port", u);
		c->server_port = (int)v;
	}
	return 0;
}

static int
kh_load_relay_cluster(const struct kh_loader *ld, const config_setting_t *g,
		      const struct kh_policy *p, struct kh_relay_cluster *c)
{
	const config_setting_t *w, *caw, *snw;
	long port;

	if (kh_check_keys(ld, g, "relay.clusters", kh_relay_cluster_keys) != 0 ||
	    kh_get_string(ld, g, "relay.clusters", "name", NULL, KH_STR_NONEMPTY, &c->name, &w) != 0)
		return -1;
	if (!kh_valid_word(c->name, KH_RELAY_NAME_MAX))
		return kh_fail_at(ld, w, "relay.clusters.name \"%s\" must be 1 to %d characters "
				  "from A-Z a-z 0-9 . _ -", c->name, KH_RELAY_NAME_MAX);
	if (config_setting_get_member(g, "listen") == NULL)
		return kh_fail_at(ld, g, "relay.clusters.listen is required (a port below 1024, "
				  "e.g. listen = 644;)");
	if (kh_get_long(ld, g, "relay.clusters", "listen", 0, 1, KH_RELAY_PORT_MAX, &port,
			&w) != 0) {
		kh_error_append(ld->err, "; a privileged port, so no user can stand in for "
				"the relay while it is down");
		return -1;
	}
	c->listen = (int)port;
	if (kh_get_string(ld, g, "relay.clusters", "server", NULL, KH_STR_NONEMPTY,
			  &c->server, &w) != 0 ||
	    kh_parse_server_url(ld, w, c) != 0 ||
	    kh_get_string(ld, g, "relay.clusters", "ca_file", NULL,
			  KH_STR_NONEMPTY | KH_STR_ABSPATH, &c->ca_file, &caw) != 0 ||
	    kh_get_string(ld, g, "relay.clusters", "server_name", "", 0, &c->server_name,
			  &snw) != 0 ||
	    kh_get_string(ld, g, "relay.clusters", "issuer", "", 0, &c->issuer, &w) != 0)
		return -1;
	if (c->server_name[0] != '\0' && !kh_valid_hostname(c->server_name))
		return kh_fail_at(ld, snw, "relay.clusters.server_name \"%s\" is not a host name",
				  c->server_name);
	if (kh_policy_issuer(p, c->issuer) == NULL)
		return kh_fail_at(ld, w, "relay.clusters.issuer \"%s\" names no configured issuer",
				  c->issuer);
	return kh_check_named_file(ld, caw, "relay.clusters.ca_file", c->ca_file, KH_FILE_PUBLIC);
}

static int
kh_load_relay_clusters(const struct kh_loader *ld, const config_setting_t *g,
		       struct kh_policy *p)
{
	config_setting_t *list = config_setting_get_member(g, "clusters"), *e;
	struct kh_relay_policy *r = &p->relay;
	size_t i, j;
	int n;

	if (list == NULL)
		return kh_fail_at(ld, g, "relay.clusters is required: ( { name = \"prod\"; "
				  "listen = 644; server = \"https://...\"; ca_file = \"...\"; } )");
	if (!config_setting_is_list(list))
		return kh_fail_at(ld, list, "relay.clusters must be a list of groups ( { ... }, ... )");
	n = config_setting_length(list);
	if (n < 1 || n > KH_RELAY_CLUSTERS_MAX)
		return kh_fail_at(ld, list, "relay.clusters must name 1 to %d clusters",
				  KH_RELAY_CLUSTERS_MAX);
	r->clusters = calloc((size_t)n, sizeof(*r->clusters));
	if (r->clusters == NULL)
		return kh_fail_oom(ld);
	for (i = 0; i < (size_t)n; i++) {
		e = config_setting_get_elem(list, (unsigned int)i);
		if (e == NULL || !config_setting_is_group(e))
			return kh_fail_at(ld, e != NULL ? e : list,
					  "relay.clusters entries must be groups { name = ...; ... }");
		r->nclusters++;
		if (kh_load_relay_cluster(ld, e, p, &r->clusters[i]) != 0)
			return -1;
		for (j = 0; j < i; j++) {
			if (strcmp(r->clusters[j].name, r->clusters[i].name) == 0)
				return kh_fail_at(ld, e, "relay.clusters.name \"%s\" is used twice",
						  r->clusters[i].name);
			if (r->clusters[j].listen == r->clusters[i].listen)
				return kh_fail_at(ld, e, "relay.clusters.listen %d is used twice",
						  r->clusters[i].listen);
		}
	}
	return 0;
}

/*
 * relay.upstream_idle_timeout and relay.audit = { file = "..."; syslog = b; }:
 * how long a pooled upstream connection waits for its uid's next request,
 * and where the one-line-per-request audit log goes (file "" = none).
 */
#define KH_RELAY_DEFAULT_UPSTREAM_IDLE   "30s"
static const char *const kh_relay_audit_keys[] = { "file", "syslog", NULL };

static int
kh_load_relay_audit(const struct kh_loader *ld, const config_setting_t *g,
		    struct kh_relay_policy *r)
{
	const config_setting_t *a = config_setting_get_member(g, "audit");

	if (kh_get_duration(ld, g, "relay", "upstream_idle_timeout",
			    KH_RELAY_DEFAULT_UPSTREAM_IDLE, 1, 3600, &r->upstream_idle_timeout) != 0)
		return -1;
	if (a != NULL && !config_setting_is_group(a))
		return kh_fail_at(ld, a, "relay.audit must be a group: audit = { file = \"%s\"; "
				  "syslog = false; };", KH_RELAY_DEFAULT_AUDIT);
	if (a != NULL && kh_check_keys(ld, a, "relay.audit", kh_relay_audit_keys) != 0)
		return -1;
	if (kh_get_string(ld, a, "relay.audit", "file", KH_RELAY_DEFAULT_AUDIT, KH_STR_ABSPATH,
			  &r->audit_file, NULL) != 0 ||
	    kh_get_bool(ld, a, "relay.audit", "syslog", false, &r->audit_syslog) != 0)
		return -1;
	return 0;
}

static int
kh_load_relay(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	struct kh_relay_policy *r = &p->relay;
	const config_setting_t *sess = config_setting_get_member(root, "session");
	const config_setting_t *dw = sess != NULL ? config_setting_get_member(sess, "deliver") : NULL;
	const config_setting_t *w;
	config_setting_t *g;

	if (kh_get_section(ld, root, "relay", false, kh_relay_keys, &g) != 0)
		return -1;
	if (g == NULL) {
		if (p->session.deliver != KH_DELIVER_EXEC)
			return kh_fail_at(ld, dw, "session.deliver = \"%s\" needs a relay section "
					  "naming the clusters kubehsm-relayd serves",
					  kh_deliver_name(p->session.deliver));
		return 0;
	}
	r->configured = true;
	if (kh_get_string(ld, g, "relay", "run_as", KH_RELAY_DEFAULT_RUN_AS, KH_STR_NONEMPTY,
			  &r->run_as, &w) != 0)
		return -1;
	if (!kh_valid_word(r->run_as, KH_RELAY_USER_MAX) || strcmp(r->run_as, "root") == 0)
		return kh_fail_at(ld, w, "relay.run_as \"%s\" must name a dedicated system user "
				  "(not root), e.g. \"kubehsm\"", r->run_as);
	if (kh_get_string(ld, g, "relay", "rundir", KH_RELAY_DEFAULT_RUNDIR,
			  KH_STR_NONEMPTY | KH_STR_ABSPATH, &r->rundir, &w) != 0)
		return -1;
	if (strlen(r->rundir) > 64)
		return kh_fail_at(ld, w, "relay.rundir is longer than 64 bytes (a socket path "
				  "must fit in sun_path)");
	if (kh_get_duration(ld, g, "relay", "handshake_timeout", KH_RELAY_DEFAULT_HANDSHAKE,
			    1, 300, &r->handshake_timeout) != 0 ||
	    kh_get_duration(ld, g, "relay", "idle_timeout", KH_RELAY_DEFAULT_IDLE,
			    10, KH_TTL_MAX, &r->idle_timeout) != 0 ||
	    kh_get_long(ld, g, "relay", "max_sessions", KH_RELAY_DEFAULT_MAX_SESSIONS,
			1, 65536, &r->max_sessions, NULL) != 0 ||
	    kh_get_long(ld, g, "relay", "max_connections", KH_RELAY_DEFAULT_MAX_CONNS,
			16, 262144, &r->max_connections, NULL) != 0 ||
	    kh_get_long(ld, g, "relay", "max_connections_per_user",
			KH_RELAY_DEFAULT_MAX_CONNS_USER, 1, 262144,
			&r->max_connections_per_user, &w) != 0)
		return -1;
	if (r->max_connections_per_user > r->max_connections)
		return kh_fail_at(ld, w, "relay.max_connections_per_user (%ld) is larger than "
				  "relay.max_connections (%ld)", r->max_connections_per_user,
				  r->max_connections);
	if (kh_load_relay_audit(ld, g, r) != 0 || kh_load_relay_clusters(ld, g, p) != 0)
		return -1;
	/* The relay tells users apart by uid, not by login. */
	if (p->session.deliver != KH_DELIVER_EXEC && p->session.scope != KH_SCOPE_USER)
		return kh_fail_at(ld, dw, "session.deliver = \"%s\" needs session.scope = \"user\": "
				  "kubehsm-relayd knows a connection's uid, not its login",
				  kh_deliver_name(p->session.deliver));
	return 0;
}

static void
kh_relay_policy_free(struct kh_relay_policy *r)
{
	size_t i;

	free(r->run_as);
	free(r->rundir);
	free(r->audit_file);
	for (i = 0; r->clusters != NULL && i < r->nclusters; i++) {
		free(r->clusters[i].name);
		free(r->clusters[i].server);
		free(r->clusters[i].server_host);
		free(r->clusters[i].ca_file);
		free(r->clusters[i].server_name);
		free(r->clusters[i].issuer);
	}
	free(r->clusters);
}

const struct kh_relay_cluster *
kh_policy_relay_cluster_for(const struct kh_policy *p, const char *issuer_id)
{
	size_t i;

	if (p == NULL || !p->relay.configured)
		return NULL;
	if (issuer_id == NULL)
		issuer_id = "";
	for (i = 0; i < p->relay.nclusters; i++) {
		const struct kh_issuer *is = kh_policy_issuer(p, p->relay.clusters[i].issuer);

		if (is != NULL && strcmp(is->id, issuer_id) == 0)
			return &p->relay.clusters[i];
	}
	return NULL;
}

bool
kh_policy_delivers_to_relay(const struct kh_policy *p)
{
	return p != NULL && p->relay.configured && p->session.deliver != KH_DELIVER_EXEC;
}

bool
kh_policy_delivers_to_exec(const struct kh_policy *p)
{
	return p == NULL || p->session.deliver != KH_DELIVER_RELAY;
}


static int
kh_load_version(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	const config_setting_t *s = config_setting_get_member(root, "version");
	long long v;

	if (s == NULL)
		return kh_fail_at(ld, NULL, "missing 'version = %d;' at the top", KH_POLICY_VERSION);
	if (config_setting_type(s) != CONFIG_TYPE_INT && config_setting_type(s) != CONFIG_TYPE_INT64)
		return kh_fail_at(ld, s, "version must be an integer (version = %d;)",
				  KH_POLICY_VERSION);
	v = config_setting_get_int64(s);
	if (v != KH_POLICY_VERSION)
		return kh_fail_at(ld, s, "version %lld is not supported; this kubehsm reads "
				  "version %d", v, KH_POLICY_VERSION);
	p->version = (int)v;
	return 0;
}

/* Parse text (already read and screened) into a new policy. */
static struct kh_policy *
kh_policy_parse(const struct kh_loader *ld, const char *text)
{
	struct kh_policy *p;
	config_setting_t *root;
	config_t cfg;
	int rc = -1;

	if (kh_check_text(ld, text) != 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return kh_fail_oom(ld), NULL;
	config_init(&cfg);
	if (config_read_string(&cfg, text) != CONFIG_TRUE) {
		kh_fail(ld->err, KH_ERR_CONFIG, "%s:%d: %s", ld->name, config_error_line(&cfg),
			config_error_text(&cfg) != NULL ? config_error_text(&cfg) : "parse error");
		goto out;
	}
	root = config_root_setting(&cfg);
	p->path = strdup(ld->name);
	if (p->path == NULL) {
		kh_fail_oom(ld);
		goto out;
	}
	/* Sections in file order of the man page; session before signer (cache_pin). */
	if (kh_check_keys(ld, root, NULL, kh_root_keys) != 0 ||
	    kh_load_version(ld, root, p) != 0 ||
	    kh_load_pkcs11(ld, root, p) != 0 ||
	    kh_load_token(ld, root, p) != 0 ||
	    kh_load_trust(ld, root, p) != 0 ||
	    kh_load_identity(ld, root, p) != 0 ||
	    kh_load_issuers(ld, root, p) != 0 ||
	    kh_load_session(ld, root, p) != 0 ||
	    kh_load_signer(ld, root, p) != 0 ||
	    kh_load_polkit(ld, root, p) != 0 ||
	    kh_load_relay(ld, root, p) != 0)
		goto out;
	rc = 0;
out:
	config_destroy(&cfg);
	if (rc != 0) {
		kh_policy_free(p);
		return NULL;
	}
	return p;
}

static const struct kh_policy_load_opts kh_default_opts = { .trusted_uid = 0 };

struct kh_policy *
kh_policy_load_string(const char *text, const char *name,
		      const struct kh_policy_load_opts *opts, kh_error *err)
{
	kh_error local;
	struct kh_loader ld = {
		.name = (name != NULL && name[0] != '\0') ? name : "(string)",
		.opts = opts != NULL ? opts : &kh_default_opts,
		.err = err != NULL ? err : &local,
	};

	kh_error_clear(ld.err);
	if (text == NULL)
		return kh_fail(ld.err, KH_ERR_INPUT, "%s: no policy text", ld.name), NULL;
	return kh_policy_parse(&ld, text);
}

struct kh_policy *
kh_policy_load(const char *path, const struct kh_policy_load_opts *opts, kh_error *err)
{
	kh_error local;
	struct kh_loader ld = {
		.name = path,
		.opts = opts != NULL ? opts : &kh_default_opts,
		.err = err != NULL ? err : &local,
	};
	struct kh_policy *p;
	char *text;
	int fd;

	kh_error_clear(ld.err);
	if (path == NULL || path[0] == '\0')
		return kh_fail(ld.err, KH_ERR_INPUT, "no policy file named"), NULL;
	fd = kh_open_policy(&ld, path);
	if (fd < 0)
		return NULL;
	text = kh_read_policy(&ld, fd);
	(void)close(fd);
	if (text == NULL)
		return NULL;
	p = kh_policy_parse(&ld, text);
	free(text);
	return p;
}

void
kh_policy_free(struct kh_policy *p)
{
	size_t i;

	if (p == NULL)
		return;
	free(p->path);
	free(p->pkcs11.module);
	free(p->pkcs11.forward_module);
	free(p->pkcs11.forward_socket);
	free(p->token.label);
	free(p->token.key_label);
	free(p->token.key_id);
	free(p->trust.ca_file);
	free(p->trust.crl_file);
	kh_strv_free(p->trust.domains, p->trust.ndomains);
	free(p->identity.username);
	kh_strv_free(p->identity.allow_groups, p->identity.nallow_groups);
	kh_strv_free(p->identity.deny_groups, p->identity.ndeny_groups);
	for (i = 0; i < p->identity.ngroups; i++)
		free(p->identity.groups[i].arg);
	free(p->identity.groups);
	for (i = 0; p->issuers != NULL && i < p->nissuers; i++) {
		free(p->issuers[i].id);
		free(p->issuers[i].key);
		free(p->issuers[i].module);
		free(p->issuers[i].cert_file);
		free(p->issuers[i].pin_file);
	}
	free(p->issuers);
	kh_relay_policy_free(&p->relay);
	free(p);
}

bool
kh_policy_group_allowed(const struct kh_policy *p, const char *group)
{
	size_t i;
	bool allowed = false;

	for (i = 0; i < p->identity.nallow_groups && !allowed; i++)
		allowed = fnmatch(p->identity.allow_groups[i], group, 0) == 0;
	for (i = 0; i < p->identity.ndeny_groups && allowed; i++)
		allowed = fnmatch(p->identity.deny_groups[i], group, 0) != 0;
	return allowed;
}

const struct kh_issuer *
kh_policy_issuer(const struct kh_policy *p, const char *id)
{
	size_t i;

	if (p == NULL || p->nissuers == 0)
		return NULL;
	if (id == NULL || id[0] == '\0')
		return &p->issuers[0];
	for (i = 0; i < p->nissuers; i++) {
		if (strcmp(p->issuers[i].id, id) == 0)
			return &p->issuers[i];
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* printing                                                             */

/* A libconfig string literal; control characters never load, so \ and " suffice. */
static int
kh_print_quoted(FILE *out, const char *v)
{
	if (fputc('"', out) == EOF)
		return -1;
	for (; *v != '\0'; v++) {
		if ((*v == '"' || *v == '\\') && fputc('\\', out) == EOF)
			return -1;
		if (fputc(*v, out) == EOF)
			return -1;
	}
	return fputc('"', out) == EOF ? -1 : 0;
}

static int
kh_print_str(FILE *out, const char *indent, const char *key, const char *v)
{
	if (fprintf(out, "%s%s = ", indent, key) < 0 || kh_print_quoted(out, v) != 0)
		return -1;
	return fputs(";\n", out) == EOF ? -1 : 0;
}

/* `key = [ "a", "b" ];` on one line. */
static int
kh_print_list(FILE *out, const char *indent, const char *key, char *const *v, size_t n)
{
	size_t i;

	if (fprintf(out, "%s%s = [", indent, key) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (fputs(i == 0 ? " " : ", ", out) == EOF || kh_print_quoted(out, v[i]) != 0)
			return -1;
	}
	return fputs(" ];\n", out) == EOF ? -1 : 0;
}

static int
kh_print_group_rule(FILE *out, const struct kh_group_rule *r, bool last)
{
	static const char *const prefix[] = {
		[KH_GROUP_CERT] = "cert:", [KH_GROUP_UNIX] = "unix:", [KH_GROUP_STATIC] = "static:",
	};
	const char *v;

	if (fprintf(out, "    \"%s", prefix[r->source]) < 0)
		return -1;
	for (v = r->arg; *v != '\0'; v++) {
		if ((*v == '"' || *v == '\\') && fputc('\\', out) == EOF)
			return -1;
		if (fputc(*v, out) == EOF)
			return -1;
	}
	return fputs(last ? "\"\n" : "\",\n", out) == EOF ? -1 : 0;
}

static int
kh_print_issuer(FILE *out, const struct kh_issuer *is, const char *indent)
{
	if (kh_print_str(out, indent, "id", is->id) != 0 ||
	    kh_print_str(out, indent, "key", is->key) != 0 ||
	    kh_print_str(out, indent, "module", is->module) != 0 ||
	    kh_print_str(out, indent, "cert_file", is->cert_file) != 0 ||
	    fprintf(out, "%s# the PIN itself is never printed\n", indent) < 0 ||
	    kh_print_str(out, indent, "pin_file", is->pin_file) != 0 ||
	    kh_print_str(out, indent, "key_type", kh_key_type_name(is->key_type)) != 0)
		return -1;
	return 0;
}

static int
kh_print_issuers(FILE *out, const struct kh_policy *p)
{
	size_t i;

	if (p->nissuers == 1) {
		if (fputs("issuer = {\n", out) == EOF ||
		    kh_print_issuer(out, &p->issuers[0], "  ") != 0 ||
		    fputs("};\n", out) == EOF)
			return -1;
		return 0;
	}
	if (fputs("issuer = (\n", out) == EOF)
		return -1;
	for (i = 0; i < p->nissuers; i++) {
		if (fputs("  {\n", out) == EOF ||
		    kh_print_issuer(out, &p->issuers[i], "    ") != 0 ||
		    fputs(i + 1 < p->nissuers ? "  },\n" : "  }\n", out) == EOF)
			return -1;
	}
	return fputs(");\n", out) == EOF ? -1 : 0;
}

/* The relay section (its loader is with the other relay code above). */
static int
kh_print_relay(FILE *out, const struct kh_policy *p)
{
	const struct kh_relay_policy *r = &p->relay;
	char hs[32], idle[32], upidle[32];
	size_t i;

	if (!r->configured)
		return fputs("# relay: not configured (kubehsm-relayd does not run)\n", out) == EOF ?
			-1 : 0;
	if (kh_duration_format(r->handshake_timeout, hs, sizeof(hs)) != 0 ||
	    kh_duration_format(r->idle_timeout, idle, sizeof(idle)) != 0 ||
	    kh_duration_format(r->upstream_idle_timeout, upidle, sizeof(upidle)) != 0)
		return -1;
	if (fputs("relay = {\n", out) == EOF ||
	    kh_print_str(out, "  ", "run_as", r->run_as) != 0 ||
	    kh_print_str(out, "  ", "rundir", r->rundir) != 0 ||
	    fprintf(out, "  handshake_timeout = \"%s\";\n  idle_timeout = \"%s\";\n"
		    "  max_sessions = %ld;\n  max_connections = %ld;\n"
		    "  max_connections_per_user = %ld;\n  upstream_idle_timeout = \"%s\";\n",
		    hs, idle, r->max_sessions, r->max_connections, r->max_connections_per_user,
		    upidle) < 0 ||
	    fputs("  audit = {\n", out) == EOF ||
	    kh_print_str(out, "    ", "file", r->audit_file) != 0 ||
	    fprintf(out, "    syslog = %s;\n  };\n  clusters = (\n",
		    r->audit_syslog ? "true" : "false") < 0)
		return -1;
	for (i = 0; i < r->nclusters; i++) {
		const struct kh_relay_cluster *c = &r->clusters[i];

		if (fputs("    {\n", out) == EOF ||
		    kh_print_str(out, "      ", "name", c->name) != 0 ||
		    fprintf(out, "      listen = %d;  # 127.0.0.1 and [::1]\n", c->listen) < 0 ||
		    kh_print_str(out, "      ", "server", c->server) != 0 ||
		    kh_print_str(out, "      ", "ca_file", c->ca_file) != 0 ||
		    kh_print_str(out, "      ", "server_name", c->server_name) != 0 ||
		    kh_print_str(out, "      ", "issuer", c->issuer) != 0 ||
		    fputs(i + 1 < r->nclusters ? "    },\n" : "    }\n", out) == EOF)
			return -1;
	}
	return fputs("  );\n};\n", out) == EOF ? -1 : 0;
}

int
kh_policy_print(const struct kh_policy *p, FILE *out)
{
	char ttl[32];
	size_t i;

	if (p == NULL || out == NULL || kh_duration_format(p->session.ttl, ttl, sizeof(ttl)) != 0)
		return -1;
	if (fprintf(out, "# Effective kubehsm policy from %s (defaults filled in).\n"
		    "version = %d;\n", p->path != NULL ? p->path : "(unknown)", p->version) < 0 ||
	    fputs("pkcs11 = {\n", out) == EOF ||
	    kh_print_str(out, "  ", "module", p->pkcs11.module) != 0 ||
	    (p->pkcs11.forward_module != NULL &&
	     (fputs("  forward = {\n", out) == EOF ||
	      kh_print_str(out, "    ", "module", p->pkcs11.forward_module) != 0 ||
	      kh_print_str(out, "    ", "socket", p->pkcs11.forward_socket) != 0 ||
	      fputs("  };\n", out) == EOF)) ||
	    fputs("};\ntoken = {\n", out) == EOF ||
	    kh_print_str(out, "  ", "label", p->token.label) != 0 ||
	    kh_print_str(out, "  ", "key_label", p->token.key_label) != 0 ||
	    kh_print_str(out, "  ", "key_id", p->token.key_id) != 0 ||
	    fputs("};\ntrust = {\n", out) == EOF ||
	    kh_print_str(out, "  ", "ca_file", p->trust.ca_file) != 0 ||
	    kh_print_str(out, "  ", "crl_file", p->trust.crl_file) != 0 ||
	    kh_print_str(out, "  ", "map", kh_map_rule_name(p->trust.map)) != 0 ||
	    (p->trust.ndomains > 0 &&
	     kh_print_list(out, "  ", "domains", p->trust.domains, p->trust.ndomains) != 0) ||
	    fputs("};\nidentity = {\n", out) == EOF ||
	    kh_print_str(out, "  ", "username", p->identity.username) != 0 ||
	    fputs(p->identity.ngroups == 0 ? "  groups = [ ];\n" : "  groups = [\n", out) == EOF)
		return -1;
	for (i = 0; i < p->identity.ngroups; i++) {
		if (kh_print_group_rule(out, &p->identity.groups[i], i + 1 == p->identity.ngroups) != 0)
			return -1;
	}
	if ((p->identity.ngroups > 0 && fputs("  ];\n", out) == EOF) ||
	    fputs("  # kube groups: minted only if allowed and not denied, whatever the source\n",
		  out) == EOF ||
	    kh_print_list(out, "  ", "allow_groups", p->identity.allow_groups,
			  p->identity.nallow_groups) != 0 ||
	    kh_print_list(out, "  ", "deny_groups", p->identity.deny_groups,
			  p->identity.ndeny_groups) != 0 ||
	    fputs("};\n", out) == EOF ||
	    kh_print_issuers(out, p) != 0 ||
	    fputs("session = {\n", out) == EOF ||
	    fprintf(out, "  ttl = \"%s\";  # %ld seconds\n", ttl, p->session.ttl) < 0 ||
	    kh_print_str(out, "  ", "scope", kh_scope_name(p->session.scope)) != 0 ||
	    fprintf(out, "  revoke_on_logout = %s;\n  cache_pin = %s;\n  allow_long_ttl = %s;\n",
		    p->session.revoke_on_logout ? "true" : "false",
		    p->session.cache_pin ? "true" : "false",
		    p->session.allow_long_ttl ? "true" : "false") < 0 ||
	    kh_print_str(out, "  ", "deliver", kh_deliver_name(p->session.deliver)) != 0 ||
	    fputs("};\n", out) == EOF ||
	    fputs("signer = {\n", out) == EOF ||
	    kh_print_str(out, "  ", "key", kh_signer_key_name(p->signer.key)) != 0 ||
	    fputs("};\npolkit = {\n", out) == EOF ||
	    kh_print_str(out, "  ", "mode", kh_polkit_mode_name(p->polkit.mode)) != 0 ||
	    fputs("};\n", out) == EOF ||
	    kh_print_relay(out, p) != 0)
		return -1;
	return fflush(out) == EOF ? -1 : 0;
}
