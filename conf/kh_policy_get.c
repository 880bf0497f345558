/*
 * kh_policy_get — from libconfig settings to checked, typed values.
 *
 * Every value the loader keeps goes through one of these getters, so every
 * one is checked the same way (type, control characters, UTF-8, range) and
 * every error names the file and the line libconfig read it from.  An
 * unknown key is an error with the nearest known key as a hint: a typo
 * must not silently leave a setting at its default.
 */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>

#include "lib/kh_error.h"
#include "conf/kh_policy.h"
#include "conf/kh_policy_int.h"
#include "lib/kh_duration.h"
#include "lib/kh_template.h"

#define KH_SUGGEST_DISTANCE      2

/* ------------------------------------------------------------------ */
/* error helpers                                                        */

/* "name:line: message"; the line is left out when libconfig has none (root). */
int
kh_pol_fail_at(const struct kh_loader *ld, const config_setting_t *s, const char *fmt, ...)
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

int
kh_pol_fail_oom(const struct kh_loader *ld)
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
int
kh_pol_check_keys(const struct kh_loader *ld, const config_setting_t *group,
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
			return kh_pol_fail_at(ld, s, "unknown section '%s'%s%s%s", name,
					      hint ? " (did you mean '" : "", hint ? hint : "",
					      hint ? "'?)" : "");
		return kh_pol_fail_at(ld, s, "unknown key '%s' in section '%s'%s%s%s", name, section,
				      hint ? " (did you mean '" : "", hint ? hint : "",
				      hint ? "'?)" : "");
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* typed getters                                                        */

bool
kh_pol_has_control_char(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return true;
	}
	return false;
}

/* A group (section) of the root, or NULL when absent and not required. */
int
kh_pol_get_section(const struct kh_loader *ld, const config_setting_t *root,
		   const char *name, bool required, const char *const *known,
		   config_setting_t **out)
{
	config_setting_t *s = config_setting_get_member(root, name);

	*out = NULL;
	if (s == NULL) {
		if (required)
			return kh_pol_fail_at(ld, NULL, "missing required section '%s' "
					      "(%s = { ... };)", name, name);
		return 0;
	}
	if (!config_setting_is_group(s))
		return kh_pol_fail_at(ld, s, "%s must be a group: %s = { ... };", name, name);
	if (kh_pol_check_keys(ld, s, name, known) != 0)
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

	if (kh_pol_has_control_char(v))
		return kh_pol_fail_at(ld, s, "%s.%s contains a control character", section, key);
	if (!kh_valid_utf8(v))
		return kh_pol_fail_at(ld, s, "%s.%s is not valid UTF-8", section, key);
	if ((flags & KH_STR_NONEMPTY) && v[0] == '\0')
		return kh_pol_fail_at(ld, s, "%s.%s must not be empty", section, key);
	if ((flags & KH_STR_ABSPATH) && v[0] != '\0' && v[0] != '/')
		return kh_pol_fail_at(ld, s, "%s.%s must be an absolute path, not \"%s\"",
				      section, key, v);
	if (flags & KH_STR_TEMPLATE) {
		bad = kh_template_check(v);
		if (bad != NULL && bad[1] == '\0')
			return kh_pol_fail_at(ld, s, "%s.%s: \"%s\" ends with a lone '%%'; write %%%% "
					      "for a literal %%", section, key, v);
		if (bad != NULL)
			return kh_pol_fail_at(ld, s, "%s.%s: \"%s\": '%%%c' is not a template escape; "
					      "only %%u (user name) and %%%% (a literal %%) are",
					      section, key, v, bad[1]);
	}
	if (flags & KH_STR_UID_TEMPLATE) {
		bad = kh_template_check_set(v, KH_UID_ESCAPES);
		if (bad != NULL && bad[1] == '\0')
			return kh_pol_fail_at(ld, s, "%s.%s: \"%s\" ends with a lone '%%'; write %%%% "
					      "for a literal %%", section, key, v);
		if (bad != NULL)
			return kh_pol_fail_at(ld, s, "%s.%s: \"%s\": '%%%c' is not a template escape; "
					      "%%h (host), %%u (user), %%U (uid), %%k (kube user), "
					      "%%s (certificate serial) and %%%% are",
					      section, key, v, bad[1]);
		if (strlen(v) > KH_KUBE_UID_MAX)
			return kh_pol_fail_at(ld, s, "%s.%s is longer than %d bytes", section, key,
					      KH_KUBE_UID_MAX);
	}
	return 0;
}

/*
 * A string member.  def == NULL means required.  `where` is the setting the
 * value came from (for later errors), or the group when defaulted.
 */
int
kh_pol_get_string(const struct kh_loader *ld, const config_setting_t *group,
		  const char *section, const char *key, const char *def,
		  unsigned int flags, char **out, const config_setting_t **where)
{
	const config_setting_t *s = group != NULL ? config_setting_get_member(group, key) : NULL;
	const char *v;

	if (where != NULL)
		*where = s != NULL ? s : group;
	if (s == NULL) {
		if (def == NULL)
			return kh_pol_fail_at(ld, group, "%s.%s is required", section, key);
		v = def;
	} else {
		if (config_setting_type(s) != CONFIG_TYPE_STRING)
			return kh_pol_fail_at(ld, s, "%s.%s must be a string (\"...\")", section, key);
		v = config_setting_get_string(s);
		if (v == NULL)
			return kh_pol_fail_at(ld, s, "%s.%s: unreadable string", section, key);
		if (kh_check_string_value(ld, s, section, key, v, flags) != 0)
			return -1;
	}
	*out = strdup(v);
	if (*out == NULL)
		return kh_pol_fail_oom(ld);
	return 0;
}

/*
 * A list of strings (array or list syntax), at most KH_POLICY_LIST_MAX,
 * each checked like kh_pol_get_string's values (flags).  Absent: a copy of
 * `def` (NULL-terminated; NULL for none).  `where` as for kh_pol_get_string.
 */
int
kh_pol_get_string_list(const struct kh_loader *ld, const config_setting_t *group,
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
		return kh_pol_fail_at(ld, s, "%s.%s must be a list of strings, e.g. [ \"...\" ]",
				      section, key);
	if (s != NULL)
		count = (size_t)config_setting_length(s);
	else
		while (def != NULL && def[count] != NULL)
			count++;
	if (count > KH_POLICY_LIST_MAX)
		return kh_pol_fail_at(ld, s, "%s.%s has %zu entries; at most %d", section, key,
				      count, KH_POLICY_LIST_MAX);
	if (count == 0)
		return 0;
	*out = calloc(count, sizeof(**out));
	if (*out == NULL)
		return kh_pol_fail_oom(ld);
	for (i = 0; i < count; i++) {
		const config_setting_t *e = s != NULL ? config_setting_get_elem(s, (unsigned int)i) : NULL;

		if (s == NULL) {
			v = def[i];
		} else if (e == NULL || config_setting_type(e) != CONFIG_TYPE_STRING ||
			   (v = config_setting_get_string(e)) == NULL) {
			return kh_pol_fail_at(ld, e != NULL ? e : s, "%s.%s entries must be strings",
					      section, key);
		} else if (kh_check_string_value(ld, e, section, key, v, flags) != 0) {
			return -1;
		}
		if (((*out)[i] = strdup(v)) == NULL)
			return kh_pol_fail_oom(ld);
		(*n)++;
	}
	return 0;
}

void
kh_pol_strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int
kh_pol_get_bool(const struct kh_loader *ld, const config_setting_t *group,
		const char *section, const char *key, bool def, bool *out)
{
	const config_setting_t *s = group != NULL ? config_setting_get_member(group, key) : NULL;

	if (s == NULL) {
		*out = def;
		return 0;
	}
	if (config_setting_type(s) != CONFIG_TYPE_BOOL)
		return kh_pol_fail_at(ld, s, "%s.%s must be a boolean (true/false)", section, key);
	*out = config_setting_get_bool(s) != 0;
	return 0;
}

int
kh_pol_get_enum(const struct kh_loader *ld, const config_setting_t *group,
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
		return kh_pol_fail_at(ld, s, "%s.%s must be a string, one of: %s", section, key, valid);
	v = config_setting_get_string(s);
	for (w = words; v != NULL && w->word != NULL; w++) {
		if (strcmp(v, w->word) == 0) {
			*out = w->value;
			return 0;
		}
	}
	return kh_pol_fail_at(ld, s, "%s.%s: unknown value \"%s\"; valid: %s", section, key,
			      v != NULL ? v : "", valid);
}

int
kh_pol_get_duration(const struct kh_loader *ld, const config_setting_t *group,
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
		return kh_pol_fail_at(ld, s, "%s.%s must be a duration string such as \"8h\" or "
				      "\"1h30m\"", section, key);
	else
		v = config_setting_get_string(s);
	if (kh_duration_parse(v, &secs, &derr) != 0)
		return kh_pol_fail_at(ld, s, "%s.%s: %s", section, key, derr.msg);
	if (secs < min || secs > max) {
		if (kh_duration_format(min, lo, sizeof(lo)) != 0 ||
		    kh_duration_format(max, hi, sizeof(hi)) != 0)
			return kh_fail(ld->err, KH_ERR_INTERNAL, "duration bounds unprintable");
		return kh_pol_fail_at(ld, s, "%s.%s = \"%s\" is out of range (%s to %s)",
				      section, key, v, lo, hi);
	}
	*out = secs;
	return 0;
}

/* An integer member in [min, max]; def when absent. */
int
kh_pol_get_long(const struct kh_loader *ld, const config_setting_t *group, const char *section,
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
		return kh_pol_fail_at(ld, s, "%s.%s must be an integer", section, key);
	v = config_setting_get_int64(s);
	if (v < min || v > max)
		return kh_pol_fail_at(ld, s, "%s.%s = %lld is out of range (%ld to %ld)",
				      section, key, v, min, max);
	*out = (long)v;
	return 0;
}
