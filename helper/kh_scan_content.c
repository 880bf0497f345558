/*
 * kh_scan_content — what in a file's content `kubehsm admin scan` counts
 * as a long-lived kube credential: a kubeconfig user's keys, tokens,
 * passwords, auth-provider tokens and foreign exec plugins, the files it
 * names, service-account JWTs, PEM keys and client certificates.  What is
 * decoded to be looked at is wiped before it is freed.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "helper/kh_scan.h"
#include "lib/kh_base64.h"
#include "lib/kh_mem.h"

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

bool
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

/* An OIDC exec plugin's token cache (kubelogin keeps one JSON object per
 * provider in ~/.kube/cache/oidc-login/): its refresh token outlives any
 * session. */
static void
kh_scan_token_cache(struct kh_scan *s, const struct kh_file *f, json_t *doc)
{
	const char *v = json_string_value(json_object_get(doc, "refresh_token"));
	char fp[17];

	if (v == NULL || v[0] == '\0')
		return;
	kh_scan_fingerprint(v, strlen(v), fp);
	kh_scan_add(s, f, "token-cache", NULL, "an OIDC plugin's cached refresh_token", fp, NULL);
}

/* What a candidate file holds. */
void
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
	else if (json_is_object(doc))
		kh_scan_token_cache(s, f, doc);
	else if (cand == KH_CAND_STRONG && !json_is_object(doc) && !json_is_null(doc))
		kh_scan_add(s, f, "unparsable", NULL, "not a kubeconfig (not a mapping)", NULL,
			    NULL);
	kh_scan_json_wipe_free(doc);
}
