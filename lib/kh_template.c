/*
 * kh_template — check and expand kubehsm.conf's %u templates.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "lib/kh_error.h"
#include "lib/kh_template.h"

const char *
kh_template_check(const char *tmpl)
{
	const char *p;

	for (p = tmpl; *p != '\0'; p++) {
		if (*p != '%')
			continue;
		if (p[1] != 'u' && p[1] != '%')
			return p;
		p++;
	}
	return NULL;
}

char *
kh_template_expand(const char *tmpl, const char *user, kh_error *err)
{
	size_t ulen, len = 0, i;
	const char *p;
	char *out;

	if (tmpl == NULL)
		return kh_fail(err, KH_ERR_INPUT, "no template to expand"), NULL;
	if (user == NULL || user[0] == '\0')
		return kh_fail(err, KH_ERR_INPUT, "cannot expand \"%s\": no user name", tmpl), NULL;
	if (kh_template_check(tmpl) != NULL)
		return kh_fail(err, KH_ERR_INPUT,
			       "template \"%s\": only %%u and %%%% may follow '%%'", tmpl), NULL;
	ulen = strlen(user);
	/* First pass sizes the result, so the bound is checked before writing. */
	for (p = tmpl; *p != '\0'; p++) {
		size_t add = 1;

		if (p[0] == '%') {
			add = p[1] == 'u' ? ulen : 1;
			p++;
		}
		if (add > KH_TEMPLATE_MAX - len)
			return kh_fail(err, KH_ERR_INPUT,
				       "expanding \"%s\" for this user exceeds %d bytes",
				       tmpl, KH_TEMPLATE_MAX), NULL;
		len += add;
	}
	out = malloc(len + 1);
	if (out == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory"), NULL;
	for (p = tmpl, i = 0; *p != '\0'; p++) {
		if (p[0] == '%' && p[1] == 'u') {
			memcpy(out + i, user, ulen);
			i += ulen;
			p++;
		} else if (p[0] == '%') {
			out[i++] = '%';
			p++;
		} else {
			out[i++] = *p;
		}
	}
	out[i] = '\0';
	return out;
}
