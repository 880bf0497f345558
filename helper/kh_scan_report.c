/*
 * kh_scan_report — `kubehsm admin scan`'s findings and its report.
 *
 * Nothing a user controls reaches the admin's terminal or JSON raw: file
 * names, kubeconfig entries and details are escaped (\xHH) when recorded;
 * a secret is never recorded, only its fingerprint.
 */
#include "config.h"

#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "helper/kh_scan.h"
#include "lib/kh_exec_proto.h"

/* ------------------------------------------------------------------ */
/* findings                                                             */

/* s with every byte outside printable ASCII as \xHH: names are the users',
 * and may carry newlines or escape sequences meant for the admin's terminal. */
char *
kh_scan_escape(const char *s)
{
	size_t n = strlen(s), i, o = 0;
	char *out = malloc(n * 4 + 1);

	if (out == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, 5, "\\x%02x", c);
	}
	out[o] = '\0';
	return out;
}

void
kh_scan_fingerprint(const void *secret, size_t len, char out[17])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0, i;

	out[0] = '\0';
	if (EVP_Digest(secret, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen < 8)
		return;
	for (i = 0; i < 8; i++)
		(void)snprintf(out + 2 * i, 3, "%02x", md[i]);
	explicit_bzero(md, sizeof(md));
}

static char *
kh_scan_abspath(const struct kh_file *f)
{
	const char *base = f->root->path;
	size_t n = strlen(base) + strlen(f->rel) + 2;
	char *p = malloc(n), *e;

	if (p == NULL)
		return NULL;
	(void)snprintf(p, n, "%s%s%s", base, strcmp(base, "/") == 0 || f->rel[0] == '\0' ? "" : "/",
		       f->rel);
	e = kh_scan_escape(p);
	free(p);
	return e;
}

static const char *
kh_scan_owner(const struct kh_file *f, char *buf, size_t size)
{
	struct passwd *pw;

	if (f->root->owner != NULL)
		return f->root->owner;
	pw = getpwuid(f->st->st_uid);
	if (pw != NULL)
		return pw->pw_name;
	(void)snprintf(buf, size, "%u", (unsigned)f->st->st_uid);
	return buf;
}

/* Record one finding.  detail and entry are plain text (escaped here);
 * fp may be NULL. */
void
kh_scan_add(struct kh_scan *s, const struct kh_file *f, const char *kind, const char *entry,
	    const char *detail, const char *fp, const time_t *expiry)
{
	struct kh_finding *x;
	char uidbuf[16];

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct kh_finding *nf = realloc(s->f, cap * sizeof(*nf));

		if (nf == NULL) {
			s->failed = true;
			return;
		}
		s->f = nf;
		s->cap = cap;
	}
	x = &s->f[s->n];
	memset(x, 0, sizeof(*x));
	x->kind = kind;
	x->owner = strdup(kh_scan_owner(f, uidbuf, sizeof(uidbuf)));
	x->file = kh_scan_abspath(f);
	x->entry = entry != NULL ? kh_scan_escape(entry) : NULL;
	x->detail = detail != NULL ? kh_scan_escape(detail) : NULL;
	if (fp != NULL)
		(void)snprintf(x->fp, sizeof(x->fp), "%s", fp);
	x->has_expiry = expiry != NULL;
	x->expiry = expiry != NULL ? *expiry : 0;
	x->mtime = f->st->st_mtime;
	if (x->owner == NULL || x->file == NULL || (entry != NULL && x->entry == NULL) ||
	    (detail != NULL && x->detail == NULL)) {
		free(x->owner);
		free(x->file);
		free(x->entry);
		free(x->detail);
		s->failed = true;
		return;
	}
	s->n++;
}

void
kh_scan_addf(struct kh_scan *s, const struct kh_file *f, const char *kind, const char *entry,
	     const char *fp, const time_t *expiry, const char *fmt, ...)
{
	char detail[600];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	kh_scan_add(s, f, kind, entry, detail, fp, expiry);
}

/* ------------------------------------------------------------------ */
/* the report                                                           */

static void
kh_scan_when(const struct kh_finding *x, char *buf, size_t size)
{
	char t[32];

	if (x->has_expiry) {
		if (kh_format_rfc3339(x->expiry, t, sizeof(t), NULL) != 0)
			(void)snprintf(t, sizeof(t), "?");
		(void)snprintf(buf, size, "expires %s", t);
	} else {
		(void)snprintf(buf, size, "age %lldd",
			       (long long)((time(NULL) - x->mtime) / 86400));
	}
}

int
kh_scan_print_text(const struct kh_scan *s)
{
	char when[48];
	size_t i;

	if (s->n == 0) {
		printf("No long-lived kube credentials found.\n");
		return 0;
	}
	printf("%-14s %-20s %-30s %-16s %s\n", "OWNER", "KIND", "EXPIRES/AGE", "FINGERPRINT",
	       "FILE  [USER] DETAIL");
	for (i = 0; i < s->n; i++) {
		const struct kh_finding *x = &s->f[i];

		kh_scan_when(x, when, sizeof(when));
		printf("%-14s %-20s %-30s %-16s %s%s%s%s %s\n", x->owner, x->kind, when,
		       x->fp[0] ? x->fp : "-", x->file, x->entry ? "  [" : "",
		       x->entry ? x->entry : "", x->entry ? "]" : "", x->detail ? x->detail : "");
	}
	return 0;
}

int
kh_scan_print_json(const struct kh_scan *s)
{
	json_t *arr = json_array();
	char t[32];
	size_t i;
	int rc;

	if (arr == NULL)
		return -1;
	for (i = 0; i < s->n; i++) {
		const struct kh_finding *x = &s->f[i];
		json_t *o = json_object();

		if (o == NULL || json_array_append_new(arr, o) != 0) {
			json_decref(arr);
			return -1;
		}
		json_object_set_new(o, "owner", json_string(x->owner));
		json_object_set_new(o, "file", json_string(x->file));
		json_object_set_new(o, "kind", json_string(x->kind));
		if (x->entry != NULL)
			json_object_set_new(o, "user", json_string(x->entry));
		if (x->detail != NULL)
			json_object_set_new(o, "detail", json_string(x->detail));
		if (x->fp[0])
			json_object_set_new(o, "fingerprint", json_string(x->fp));
		if (x->has_expiry && kh_format_rfc3339(x->expiry, t, sizeof(t), NULL) == 0)
			json_object_set_new(o, "expires", json_string(t));
		if (kh_format_rfc3339(x->mtime, t, sizeof(t), NULL) == 0)
			json_object_set_new(o, "modified", json_string(t));
		json_object_set_new(o, "ageDays",
				    json_integer((json_int_t)((time(NULL) - x->mtime) / 86400)));
	}
	rc = json_dumpf(arr, stdout, JSON_INDENT(2));
	putchar('\n');
	json_decref(arr);
	return rc;
}

void
kh_scan_free(struct kh_scan *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->f[i].owner);
		free(s->f[i].file);
		free(s->f[i].entry);
		free(s->f[i].detail);
	}
	free(s->f);
}
