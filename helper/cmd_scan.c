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

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "conf/kh_policy.h"
#include "helper/kh_cli.h"
#include "helper/kh_scan.h"
#include "lib/kh_base64.h"
#include "lib/kh_duration.h"
#include "lib/kh_exec_proto.h"
#include "lib/kh_mem.h"

#define KH_SCAN_EXIT_CLEAN 0
#define KH_SCAN_EXIT_FOUND 1
#define KH_SCAN_EXIT_ERROR 2

/* Without a policy file: the loader's default session.ttl. */
#define KH_SCAN_DEFAULT_TTL (8L * 3600)

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

/* ------------------------------------------------------------------ */
/* findings                                                             */

/* s with every byte outside printable ASCII as \xHH: names are the users',
 * and may carry newlines or escape sequences meant for the admin's terminal. */
static char *
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

static void
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
static void
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

static void
kh_scan_addf(struct kh_scan *s, const struct kh_file *f, const char *kind, const char *entry,
	     const char *fp, const time_t *expiry, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

static void
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
/* content                                                              */

/* A certificate: a finding when it is still valid for longer than the
 * session TTL. */
static void
kh_scan_cert(struct kh_scan *s, const struct kh_file *f, const char *entry, const char *how,
	     const char *pem, size_t len)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	X509 *cert = bio != NULL ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
	const ASN1_TIME *na;
	unsigned char *der = NULL;
	struct tm tm;
	time_t exp;
	char fp[17] = "";
	int derlen;

	BIO_free(bio);
	if (cert == NULL) {
		kh_scan_addf(s, f, "unparsable", entry, NULL, NULL, "%s: not a PEM certificate", how);
		return;
	}
	na = X509_get0_notAfter(cert);
	if (na == NULL || ASN1_TIME_to_tm(na, &tm) != 1) {
		kh_scan_addf(s, f, "unparsable", entry, NULL, NULL, "%s: no readable notAfter", how);
		X509_free(cert);
		return;
	}
	exp = timegm(&tm);
	/* A loose certificate file is a client's unless it is a CA's
	 * (~/.kube/ca.crt) or its extendedKeyUsage leaves out clientAuth (a
	 * server's, under a named /etc/kubernetes). */
	if (entry == NULL && (X509_check_ca(cert) != 0 ||
			      ((X509_get_extension_flags(cert) & EXFLAG_XKUSAGE) != 0 &&
			       (X509_get_extended_key_usage(cert) & XKU_SSL_CLIENT) == 0))) {
		X509_free(cert);
		return;
	}
	if (exp > s->now && exp - s->now > s->ttl) {
		derlen = i2d_X509(cert, &der);
		if (derlen > 0)
			kh_scan_fingerprint(der, (size_t)derlen, fp);
		OPENSSL_free(der);
		kh_scan_addf(s, f, "client-certificate", entry, fp, &exp,
			     "%s: valid for longer than session.ttl", how);
	}
	X509_free(cert);
}

static bool
kh_is_b64url(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_';
}

/* The payload of a JWT (three base64url parts), as a JSON object; NULL if
 * text is not one. */
static json_t *
kh_scan_jwt_claims(const char *text, size_t len)
{
	const char *p = text, *end = text + len, *dot1, *dot2;
	unsigned char *raw = NULL;
	size_t rawlen = 0, n, i;
	char *b64;
	json_t *claims = NULL;

	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	while (p < end && isspace((unsigned char)*p))
		p++;
	for (dot1 = p; dot1 < end && kh_is_b64url(*dot1); dot1++)
		;
	if (dot1 == p || dot1 == end || *dot1 != '.')
		return NULL;
	for (dot2 = dot1 + 1; dot2 < end && kh_is_b64url(*dot2); dot2++)
		;
	if (dot2 == dot1 + 1 || dot2 == end || *dot2 != '.')
		return NULL;
	for (i = 1; dot2 + i < end && kh_is_b64url(dot2[i]); i++)
		;
	if (dot2 + i != end)
		return NULL;
	/* base64url without padding into standard base64 for the decoder. */
	n = (size_t)(dot2 - dot1 - 1);
	b64 = malloc(n + 4);
	if (b64 == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		b64[i] = dot1[1 + i] == '-' ? '+' : dot1[1 + i] == '_' ? '/' : dot1[1 + i];
	while (i % 4 != 0)
		b64[i++] = '=';
	if (kh_base64_decode(b64, i, KH_SCAN_MAX_FILE, &raw, &rawlen, NULL) == 0) {
		claims = json_loadb((const char *)raw, rawlen, JSON_REJECT_DUPLICATES, NULL);
		if (!json_is_object(claims)) {
			json_decref(claims);
			claims = NULL;
		}
		kh_secure_free(raw, rawlen);
	}
	kh_secure_free(b64, n + 4);
	return claims;
}

/* Whether JWT claims are a Kubernetes service account's: the legacy issuer,
 * or the "kubernetes.io" claim of bound tokens.  *exp gets "exp". */
static bool
kh_scan_jwt_is_kube(json_t *claims, time_t *exp, bool *has_exp)
{
	const char *iss = json_string_value(json_object_get(claims, "iss"));
	json_t *e = json_object_get(claims, "exp");

	*has_exp = json_is_integer(e);
	*exp = *has_exp ? (time_t)json_integer_value(e) : 0;
	return json_object_get(claims, "kubernetes.io") != NULL ||
	       (iss != NULL && strcmp(iss, "kubernetes/serviceaccount") == 0);
}

static bool
kh_str_ends(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

/* Join the kubeconfig's directory and a path it names, lexically ("." and
 * ".." resolved: the walk follows no link, so the names mean what they say),
 * relative to the root.  NULL when it leaves the root (or out of memory). */
static char *
kh_scan_resolve(const struct kh_file *f, const char *ref)
{
	const char *root = f->root->path;
	size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
	size_t cap = strlen(f->rel) + strlen(ref) + 2, o = 0;
	char *joined = malloc(cap), *out = malloc(cap), *tok, *save = NULL;
	const char *slash;

	if (joined == NULL || out == NULL)
		goto fail;
	if (ref[0] == '/') {
		if (strncmp(ref, root, rl) != 0 || (ref[rl] != '/' && ref[rl] != '\0'))
			goto fail;
		(void)snprintf(joined, cap, "%s", ref + rl);
	} else {
		slash = strrchr(f->rel, '/');
		(void)snprintf(joined, cap, "%.*s/%s", slash ? (int)(slash - f->rel) : 0, f->rel,
			       ref);
	}
	out[0] = '\0';
	for (tok = strtok_r(joined, "/", &save); tok != NULL; tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0) {
			char *last = strrchr(out, '/');

			if (o == 0)
				goto fail;      /* above the root */
			o = last != NULL ? (size_t)(last - out) : 0;
			out[o] = '\0';
			continue;
		}
		o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? "/" : "", tok);
	}
	free(joined);
	if (o == 0) {
		free(out);
		return NULL;
	}
	return out;
fail:
	free(joined);
	free(out);
	return NULL;
}

/* A file a kubeconfig names (client-key, client-certificate, tokenFile):
 * read when it is inside the root; otherwise *why says why not. */
static int
kh_scan_read_ref(const struct kh_file *f, const char *ref, char **buf, size_t *len,
		 char *why, size_t whysize)
{
	char *rel = kh_scan_resolve(f, ref);
	struct stat st;
	kh_error err;
	int rc;

	if (rel == NULL) {
		(void)snprintf(why, whysize, "outside %s, not read", f->root->path);
		return -1;
	}
	rc = kh_scan_read_rel(f->root->fd, rel, KH_SCAN_MAX_FILE, &st, buf, len, &err);
	free(rel);
	if (rc != 0)
		(void)snprintf(why, whysize, "%s", err.msg);
	return rc;
}

/* A *-data field: the decoded bytes' fingerprint. */
static int
kh_scan_data_fp(const char *b64, unsigned char **raw, size_t *rawlen, char fp[17])
{
	if (kh_base64_decode(b64, strlen(b64), KH_SCAN_MAX_FILE, raw, rawlen, NULL) != 0)
		return -1;
	kh_scan_fingerprint(*raw, *rawlen, fp);
	return 0;
}

static void
kh_scan_user_keys(struct kh_scan *s, const struct kh_file *f, const char *name, json_t *u)
{
	const char *v;
	unsigned char *raw;
	size_t rawlen;
	char *buf, fp[17], why[KH_ERROR_MAX + 64];

	if ((v = json_string_value(json_object_get(u, "client-key-data"))) != NULL && v[0]) {
		if (kh_scan_data_fp(v, &raw, &rawlen, fp) == 0) {
			kh_scan_add(s, f, "client-key", name, "embedded (client-key-data)", fp, NULL);
			kh_secure_free(raw, rawlen);
		} else {
			kh_scan_add(s, f, "client-key", name,
				    "embedded (client-key-data, not valid base64)", NULL, NULL);
		}
	}
	if ((v = json_string_value(json_object_get(u, "client-key"))) != NULL && v[0]) {
		if (kh_scan_read_ref(f, v, &buf, &rawlen, why, sizeof(why)) == 0) {
			kh_scan_fingerprint(buf, rawlen, fp);
			kh_secure_free(buf, rawlen + 1);
			kh_scan_addf(s, f, "client-key", name, fp, NULL, "client-key: %s", v);
		} else {
			kh_scan_addf(s, f, "client-key", name, NULL, NULL, "client-key: %s (%s)", v,
				     why);
		}
	}
	if ((v = json_string_value(json_object_get(u, "client-certificate-data"))) != NULL &&
	    v[0]) {
		if (kh_scan_data_fp(v, &raw, &rawlen, fp) == 0) {
			kh_scan_cert(s, f, name, "client-certificate-data", (const char *)raw,
				     rawlen);
			kh_secure_free(raw, rawlen);
		} else {
			kh_scan_add(s, f, "unparsable", name,
				    "client-certificate-data: not valid base64", NULL, NULL);
		}
	}
	if ((v = json_string_value(json_object_get(u, "client-certificate"))) != NULL && v[0]) {
		if (kh_scan_read_ref(f, v, &buf, &rawlen, why, sizeof(why)) == 0) {
			char how[300];

			(void)snprintf(how, sizeof(how), "client-certificate: %s", v);
			kh_scan_cert(s, f, name, how, buf, rawlen);
			kh_secure_free(buf, rawlen + 1);
		}
		/* An unreadable certificate is no secret: its key is reported. */
	}
}

static void
kh_scan_user_tokens(struct kh_scan *s, const struct kh_file *f, const char *name, json_t *u)
{
	const char *v;
	size_t len;
	char *buf, fp[17], why[KH_ERROR_MAX + 64];
	json_t *ap, *cfg;

	if ((v = json_string_value(json_object_get(u, "token"))) != NULL && v[0]) {
		kh_scan_fingerprint(v, strlen(v), fp);
		kh_scan_add(s, f, "token", name, "bearer token (token)", fp, NULL);
	}
	if ((v = json_string_value(json_object_get(u, "tokenFile"))) != NULL && v[0]) {
		if (kh_scan_read_ref(f, v, &buf, &len, why, sizeof(why)) == 0) {
			kh_scan_fingerprint(buf, len, fp);
			kh_secure_free(buf, len + 1);
			kh_scan_addf(s, f, "token", name, fp, NULL, "tokenFile: %s", v);
		} else {
			kh_scan_addf(s, f, "token", name, NULL, NULL, "tokenFile: %s (%s)", v, why);
		}
	}
	if ((v = json_string_value(json_object_get(u, "password"))) != NULL && v[0]) {
		kh_scan_fingerprint(v, strlen(v), fp);
		kh_scan_add(s, f, "basic-auth", name, "username and password", fp, NULL);
	}
	ap = json_object_get(u, "auth-provider");
	cfg = json_object_get(ap, "config");
	if (json_is_object(cfg)) {
		static const char *const keys[] = { "refresh-token", "id-token", "client-secret" };
		const char *pname = json_string_value(json_object_get(ap, "name"));
		size_t i;

		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			v = json_string_value(json_object_get(cfg, keys[i]));
			if (v == NULL || v[0] == '\0')
				continue;
			kh_scan_fingerprint(v, strlen(v), fp);
			kh_scan_addf(s, f, "auth-provider", name, fp, NULL, "auth-provider %s: %s",
				     pname != NULL ? pname : "(unnamed)", keys[i]);
			break;
		}
	}
}

/* An exec plugin is kubehsm's when its command is "kubehsm" or a path
 * ending in "/kubehsm". */
static void
kh_scan_user_exec(struct kh_scan *s, const struct kh_file *f, const char *name, json_t *u)
{
	const char *cmd = json_string_value(json_object_get(json_object_get(u, "exec"),
							    "command"));
	const char *base;

	if (cmd == NULL)
		return;
	base = strrchr(cmd, '/');
	base = base != NULL ? base + 1 : cmd;
	if (strcmp(base, "kubehsm") == 0)
		return;
	/* The command only: its arguments may carry a secret. */
	kh_scan_addf(s, f, "exec-plugin", name, NULL, NULL, "exec command %s", cmd);
}

static bool
kh_scan_is_kubeconfig(json_t *doc)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));

	return json_is_object(doc) &&
	       ((kind != NULL && strcmp(kind, "Config") == 0) ||
		json_is_array(json_object_get(doc, "users")) ||
		json_is_array(json_object_get(doc, "clusters")) ||
		json_is_array(json_object_get(doc, "contexts")));
}

static void
kh_scan_kubeconfig(struct kh_scan *s, const struct kh_file *f, json_t *doc)
{
	json_t *users = json_object_get(doc, "users"), *e, *u;
	size_t i;

	json_array_foreach(users, i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));

		u = json_object_get(e, "user");
		if (!json_is_object(u))
			continue;
		if (name == NULL)
			name = "(unnamed)";
		kh_scan_user_keys(s, f, name, u);
		kh_scan_user_tokens(s, f, name, u);
		kh_scan_user_exec(s, f, name, u);
	}
}

/* A JWT file: a service-account token when its claims say so, or when it
 * sits where Kubernetes mounts one (…/serviceaccount/token). */
static bool
kh_scan_jwt_file(struct kh_scan *s, const struct kh_file *f, const char *text, size_t len)
{
	json_t *claims = kh_scan_jwt_claims(text, len);
	bool kube, has_exp;
	time_t exp;
	char fp[17];
	const char *p = text, *end = text + len;

	if (claims == NULL)
		return false;
	kube = kh_scan_jwt_is_kube(claims, &exp, &has_exp);
	kh_scan_json_wipe_free(claims);
	if (!kube && !kh_str_ends(f->rel, "serviceaccount/token"))
		return false;
	while (p < end && isspace((unsigned char)*p))
		p++;
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	kh_scan_fingerprint(p, (size_t)(end - p), fp);
	kh_scan_add(s, f, "serviceaccount-token", NULL,
		    kube ? "a Kubernetes service-account JWT" : "a JWT where a service-account "
		    "token is mounted", fp, has_exp ? &exp : NULL);
	return true;
}

static void
kh_scan_pem_file(struct kh_scan *s, const struct kh_file *f, const char *text, size_t len)
{
	char fp[17];

	if (strstr(text, "PRIVATE KEY-----") != NULL) {
		kh_scan_fingerprint(text, len, fp);
		kh_scan_add(s, f, "client-key", NULL, "a private key file", fp, NULL);
	} else if (strstr(text, "-----BEGIN CERTIFICATE-----") != NULL) {
		kh_scan_cert(s, f, NULL, "a certificate file", text, len);
	}
}

/* What a candidate file holds. */
static void
kh_scan_content(struct kh_scan *s, const struct kh_file *f, enum kh_cand cand,
		const char *text, size_t len)
{
	const char *p = text;
	json_t *doc = NULL;
	kh_error err;

	if (len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
		p += 3;
	while (*p != '\0' && isspace((unsigned char)*p))
		p++;
	if (strncmp(p, "-----BEGIN ", 11) == 0) {
		kh_scan_pem_file(s, f, text, len);
		return;
	}
	if (kh_scan_jwt_file(s, f, text, len))
		return;
	if (kh_str_ends(f->rel, "serviceaccount/token")) {
		kh_scan_add(s, f, "unparsable", NULL, "not a JWT", NULL, NULL);
		return;
	}
	if (memchr(text, '\0', len) != NULL) {
		if (cand == KH_CAND_STRONG)
			kh_scan_add(s, f, "unparsable", NULL, "binary content", NULL, NULL);
		return;
	}
	if (kh_scan_yaml_load(text, len, &doc, &err) != 0) {
		if (err.code == KH_ERR_INTERNAL)
			s->failed = true;
		else if (cand == KH_CAND_STRONG)
			kh_scan_add(s, f, "unparsable", NULL, err.msg, NULL, NULL);
		return;
	}
	if (kh_scan_is_kubeconfig(doc))
		kh_scan_kubeconfig(s, f, doc);
	else if (cand == KH_CAND_STRONG && !json_is_object(doc) && !json_is_null(doc))
		kh_scan_add(s, f, "unparsable", NULL, "not a kubeconfig (not a mapping)", NULL,
			    NULL);
	kh_scan_json_wipe_free(doc);
}

/* ------------------------------------------------------------------ */
/* the walk                                                             */

/*
 * Which files are looked at.  In a home: every file under ~/.kube (but its
 * cache/ and http-cache/), any file whose name contains "kubeconfig", and
 * token files (".../serviceaccount/token", "token", "*.token", "*.jwt").
 * Under a path the admin named: every file.
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
					      strcmp(name, "http-cache") == 0))
			return;
		sub = kh_scan_opendir_at(dirfd, name, &st, &err);
		if (sub < 0) {
			/* What it cannot look into is not known to be clean. */
			if (err.code != KH_ERR_NOTFOUND)
				kh_scan_addf(s, &f, "skipped", NULL, NULL, NULL,
					     "a directory, %s", err.msg);
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
kh_scan_home(struct kh_scan *s, const struct passwd *pw, dev_t *seen_dev, ino_t *seen_ino,
	     size_t *nseen, size_t maxseen)
{
	struct kh_root r = { .fd = -1 };
	struct stat st;
	size_t i;
	int fd;

	if (pw->pw_dir == NULL || pw->pw_dir[0] != '/')
		return;
	fd = open(pw->pw_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		kh_scan_home_unopened(s, pw, errno);
		return;
	}
	if (fstat(fd, &st) != 0 || st.st_uid != pw->pw_uid) {
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
			kh_scan_home(s, pw, dev, ino, &nseen, KH_SCAN_MAX_HOMES);
		}
	} else {
		setpwent();
		while ((pw = getpwent()) != NULL)
			kh_scan_home(s, pw, dev, ino, &nseen, KH_SCAN_MAX_HOMES);
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

static int
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

static int
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

static void
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
