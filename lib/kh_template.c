/*
 * kh_template — check and expand kubehsm.conf's templates: "%u" (the user
 * name) in token.label and identity.username, "%U" (the uid) in
 * pkcs11.forward.socket.
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kh_error.h"
#include "lib/kh_template.h"

const char *
kh_template_check_escape(const char *tmpl, char escape)
{
	const char set[2] = { escape, '\0' };

	return kh_template_check_set(tmpl, set);
}

bool
kh_template_uses(const char *tmpl, char escape)
{
	const char *p;

	for (p = tmpl; *p != '\0'; p++) {
		if (*p != '%')
			continue;
		if (p[1] == escape)
			return true;
		if (p[1] == '\0')
			break;
		p++;   /* "%%" and any other pair: no escape of ours */
	}
	return false;
}

const char *
kh_template_check(const char *tmpl)
{
	return kh_template_check_escape(tmpl, 'u');
}

char *
kh_template_expand_escape(const char *tmpl, char escape, const char *value, kh_error *err)
{
	const struct kh_template_var var = { escape, value };

	if (tmpl == NULL)
		return kh_fail(err, KH_ERR_INPUT, "no template to expand"), NULL;
	/* Stricter than the general form, whose messages it keeps: a value
	 * is wanted even where the template does not use it. */
	if (value == NULL || value[0] == '\0')
		return kh_fail(err, KH_ERR_INPUT, "cannot expand \"%s\": no %s", tmpl,
			       escape == 'u' ? "user name" : "value for its escape"), NULL;
	if (kh_template_check_escape(tmpl, escape) != NULL)
		return kh_fail(err, KH_ERR_INPUT,
			       "template \"%s\": only %%%c and %%%% may follow '%%'", tmpl,
			       escape), NULL;
	return kh_template_expand_vars(tmpl, &var, 1, err);
}

char *
kh_template_expand(const char *tmpl, const char *user, kh_error *err)
{
	return kh_template_expand_escape(tmpl, 'u', user, err);
}

const char *
kh_template_check_set(const char *tmpl, const char *escapes)
{
	const char *p;

	for (p = tmpl; *p != '\0'; p++) {
		if (*p != '%')
			continue;
		if (p[1] == '\0' || (p[1] != '%' && strchr(escapes, p[1]) == NULL))
			return p;
		p++;
	}
	return NULL;
}

static const struct kh_template_var *
kh_template_var_of(const struct kh_template_var *vars, size_t n, char escape)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (vars[i].escape == escape)
			return &vars[i];
	return NULL;
}

char *
kh_template_expand_vars(const char *tmpl, const struct kh_template_var *vars, size_t n,
			kh_error *err)
{
	const struct kh_template_var *v;
	size_t len = 0, i, add;
	const char *p;
	char *out;

	if (tmpl == NULL)
		return kh_fail(err, KH_ERR_INPUT, "no template to expand"), NULL;
	/* First pass: every escape known and valued, and the size bounded. */
	for (p = tmpl; *p != '\0'; p++) {
		add = 1;
		if (p[0] == '%') {
			if (p[1] == '%') {
				add = 1;
			} else if ((v = kh_template_var_of(vars, n, p[1])) == NULL) {
				return kh_fail(err, KH_ERR_INPUT, "template \"%s\": '%%%c' is not "
					       "an escape here", tmpl, p[1] != '\0' ? p[1] : '?'), NULL;
			} else if (v->value == NULL || v->value[0] == '\0') {
				return kh_fail(err, KH_ERR_INPUT, "cannot expand \"%s\": no value "
					       "for %%%c", tmpl, p[1]), NULL;
			} else {
				add = strlen(v->value);
			}
			p++;
		}
		if (add > KH_TEMPLATE_MAX - len)
			return kh_fail(err, KH_ERR_INPUT, "expanding \"%s\" exceeds %d bytes", tmpl,
				       KH_TEMPLATE_MAX), NULL;
		len += add;
	}
	out = malloc(len + 1);
	if (out == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory"), NULL;
	for (p = tmpl, i = 0; *p != '\0'; p++) {
		if (p[0] != '%') {
			out[i++] = *p;
			continue;
		}
		p++;
		if (*p == '%') {
			out[i++] = '%';
			continue;
		}
		v = kh_template_var_of(vars, n, *p);
		add = strlen(v->value);
		memcpy(out + i, v->value, add);
		i += add;
	}
	out[i] = '\0';
	return out;
}
