#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "kh_mem.h"
#include "kh_proto.h"

#define KH_EXEC_GROUP "client.authentication.k8s.io"
#define KH_ISSUER_MAX 32
/* Larger than any RSA key's room for salt (RSA-16384 with SHA-256: 2014). */
#define KH_PSS_SALT_ABSURD 2048

/* ============================================================ JSON helpers */

/*
 * jansson's messages quote the offending token ("... near '1234'"). The
 * signer request may carry a PIN, and error lines end up in logs, so the
 * quoted part is dropped and only the position kept.
 */
static void
kh_json_error_text(const json_error_t *jerr, char *buf, size_t size)
{
	const char *near = strstr(jerr->text, " near ");
	int n = near != NULL ? (int)(near - jerr->text) : (int)strlen(jerr->text);

	(void)snprintf(buf, size, "%.*s", n, jerr->text);
}

/*
 * Parse a whole document that must be one JSON object: duplicate keys are
 * refused, nothing may follow it, NUL bytes in strings and invalid UTF-8 are
 * refused by jansson itself, and nesting is bounded by jansson's parser depth
 * limit (2048).
 */
static int
kh_json_load_object(const char *buf, size_t len, size_t max, const char *what,
                    json_t **out, kh_error *err)
{
	json_error_t jerr;
	char text[JSON_ERROR_TEXT_LENGTH];
	json_t *root;

	*out = NULL;
	if (buf == NULL || len == 0)
		return kh_fail(err, KH_ERR_INPUT, "%s is empty", what);
	if (len > max)
		return kh_fail(err, KH_ERR_INPUT,
		               "%s is too large (over %zu bytes)", what, max);
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		kh_json_error_text(&jerr, text, sizeof(text));
		return kh_fail(err, KH_ERR_INPUT,
		               "%s is not valid JSON (line %d, column %d): %s",
		               what, jerr.line, jerr.column, text);
	}
	if (!json_is_object(root)) {
		json_decref(root);
		return kh_fail(err, KH_ERR_INPUT, "%s must be a JSON object", what);
	}
	*out = root;
	return 0;
}

static const char *
kh_json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:  return "an object";
	case JSON_ARRAY:   return "an array";
	case JSON_STRING:  return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL:    return "a number";
	case JSON_TRUE:
	case JSON_FALSE:   return "a boolean";
	case JSON_NULL:    return "null";
	}
	return "unknown";
}

/* Fetch an optional string member: 1 present, 0 absent, -1 wrong type. */
static int
kh_json_string(json_t *obj, const char *key, const char *where,
               json_t **val, kh_error *err)
{
	json_t *v = json_object_get(obj, key);

	*val = NULL;
	if (v == NULL)
		return 0;
	if (!json_is_string(v))
		return kh_fail(err, KH_ERR_INPUT, "%s%s must be a string, not %s",
		               where, key, kh_json_type_name(v));
	*val = v;
	return 1;
}

/* A string member that must be there. */
static int
kh_json_required_string(json_t *obj, const char *key, const char *where,
                        json_t **val, kh_error *err)
{
	int rc = kh_json_string(obj, key, where, val, err);

	if (rc == 0)
		return kh_fail(err, KH_ERR_INPUT, "%s%s is missing", where, key);
	return rc;
}

/* Optional boolean member, false when absent. */
static int
kh_json_bool(json_t *obj, const char *key, const char *where, bool *val,
             kh_error *err)
{
	json_t *v = json_object_get(obj, key);

	*val = false;
	if (v == NULL)
		return 0;
	if (!json_is_boolean(v))
		return kh_fail(err, KH_ERR_INPUT, "%s%s must be true or false, not %s",
		               where, key, kh_json_type_name(v));
	*val = json_is_true(v);
	return 0;
}

/* Copy an optional string member into *dst (NULL when absent). */
static int
kh_json_dup_string(json_t *obj, const char *key, const char *where,
                   char **dst, size_t *dst_len, kh_error *err)
{
	json_t *v;
	int rc = kh_json_string(obj, key, where, &v, err);

	*dst = NULL;
	if (rc <= 0)
		return rc;
	/* jansson refuses \u0000, so the value has no embedded NUL. */
	*dst = strndup(json_string_value(v), json_string_length(v));
	if (*dst == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	if (dst_len != NULL)
		*dst_len = json_string_length(v);
	return 0;
}

/* Wipe a jansson string's own buffer in place, before the json_t goes away. */
static void
kh_json_wipe_string(json_t *s)
{
	if (s != NULL && json_is_string(s))
		OPENSSL_cleanse((char *)json_string_value(s), json_string_length(s));
}

/* ======================================================= output buffers */

struct kh_outbuf {
	char *buf;
	size_t cap;
	size_t used;
};

static int
kh_dump_count(const char *chunk, size_t size, void *data)
{
	size_t *n = data;

	(void)chunk;
	if (size > SIZE_MAX - *n)
		return -1;
	*n += size;
	return 0;
}

static int
kh_dump_write(const char *chunk, size_t size, void *data)
{
	struct kh_outbuf *o = data;

	if (size > o->cap - o->used)
		return -1;
	memcpy(o->buf + o->used, chunk, size);
	o->used += size;
	return 0;
}

/*
 * Serialise `root` compactly, plus '\n' and a NUL, into one buffer of exactly
 * the right size. Counting first means no growing buffer is ever reallocated,
 * so nothing that passed through the dump is left in freed memory (the
 * ExecCredential carries the session key).
 */
static int
kh_json_dump_line(json_t *root, char **out, size_t *out_len, kh_error *err)
{
	const size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER;
	struct kh_outbuf o = { NULL, 0, 0 };
	size_t n = 0;

	*out = NULL;
	*out_len = 0;
	if (json_dump_callback(root, kh_dump_count, &n, flags) != 0 || n == 0 ||
	    n > SIZE_MAX - 2)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot serialise the JSON answer");
	o.cap = n;
	o.buf = malloc(n + 2);
	if (o.buf == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	if (json_dump_callback(root, kh_dump_write, &o, flags) != 0 || o.used != n) {
		kh_secure_free(o.buf, n + 2);
		return kh_fail(err, KH_ERR_INTERNAL, "cannot serialise the JSON answer");
	}
	o.buf[n] = '\n';
	o.buf[n + 1] = '\0';
	*out = o.buf;
	*out_len = n + 1;
	return 0;
}

/* ================================================================ base64 */

int
kh_base64_encode(const unsigned char *in, size_t len, char **out,
                 size_t *out_len, kh_error *err)
{
	size_t cap;
	unsigned char *buf;
	int n;

	*out = NULL;
	if (out_len != NULL)
		*out_len = 0;
	if (in == NULL && len > 0)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_base64_encode: missing input");
	/* EVP_EncodeBlock takes an int length. */
	if (len > (size_t)INT_MAX / 4 * 3 - 3)
		return kh_fail(err, KH_ERR_INPUT, "%zu bytes is too much to encode", len);
	cap = (len + 2) / 3 * 4 + 1;
	buf = malloc(cap);
	if (buf == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	n = EVP_EncodeBlock(buf, in != NULL ? in : (const unsigned char *)"", (int)len);
	if (n < 0 || (size_t)n != cap - 1) {
		free(buf);
		return kh_fail_ssl(err, KH_ERR_INTERNAL, "base64 encoding failed");
	}
	buf[n] = '\0';
	*out = (char *)buf;
	if (out_len != NULL)
		*out_len = (size_t)n;
	return 0;
}

static bool
kh_base64_alphabet(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '+' || c == '/';
}

/*
 * EVP_DecodeBlock is lenient (skips surrounding whitespace, tolerates
 * non-zero trailing bits) and reports padded lengths; check the shape first
 * so only what Go's StdEncoding produces gets through.
 */
static int
kh_base64_check_shape(const char *in, size_t len, size_t *pad, kh_error *err)
{
	size_t i;

	*pad = 0;
	if (len % 4 != 0)
		return kh_fail(err, KH_ERR_INPUT,
		               "invalid base64: length %zu is not a multiple of 4", len);
	if (len >= 1 && in[len - 1] == '=')
		*pad = (len >= 2 && in[len - 2] == '=') ? 2 : 1;
	for (i = 0; i < len - *pad; i++) {
		if (!kh_base64_alphabet((unsigned char)in[i]))
			return kh_fail(err, KH_ERR_INPUT,
			               "invalid base64: unexpected character at offset %zu", i);
	}
	return 0;
}

int
kh_base64_decode(const char *in, size_t len, size_t max,
                 unsigned char **out, size_t *out_len, kh_error *err)
{
	unsigned char *buf = NULL;
	char *again = NULL;
	size_t pad, n, cap, again_len;
	int got;

	*out = NULL;
	*out_len = 0;
	if (in == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_base64_decode: missing input");
	if (kh_base64_check_shape(in, len, &pad, err) < 0)
		return -1;
	cap = len / 4 * 3;
	n = cap - pad;
	if (n > max)
		return kh_fail(err, KH_ERR_INPUT,
		               "base64 value decodes to %zu bytes, more than %zu", n, max);
	if (len > INT_MAX)
		return kh_fail(err, KH_ERR_INPUT, "base64 value too long");
	buf = malloc(cap + 1);
	if (buf == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	got = EVP_DecodeBlock(buf, (const unsigned char *)in, (int)len);
	if (got < 0 || (size_t)got != cap) {
		kh_secure_free(buf, cap + 1);
		return kh_fail_ssl(err, KH_ERR_INPUT, "invalid base64");
	}
	/* Canonical form only: encoding the result must give back the input. */
	if (kh_base64_encode(buf, n, &again, &again_len, err) < 0) {
		kh_secure_free(buf, cap + 1);
		return -1;
	}
	if (again_len != len || memcmp(again, in, len) != 0) {
		kh_secure_free(again, again_len);
		kh_secure_free(buf, cap + 1);
		return kh_fail(err, KH_ERR_INPUT,
		               "invalid base64: non-canonical encoding (stray bits in the last group)");
	}
	kh_secure_free(again, again_len);
	*out = buf;
	*out_len = n;
	return 0;
}

/* ================================================================== exec */

const char *
kh_exec_api_version(enum kh_exec_api api)
{
	switch (api) {
	case KH_EXEC_API_V1:      return KH_EXEC_GROUP "/v1";
	case KH_EXEC_API_V1BETA1: return KH_EXEC_GROUP "/v1beta1";
	case KH_EXEC_API_NONE:    break;
	}
	return NULL;
}

enum kh_exec_api
kh_exec_api_from_string(const char *s)
{
	if (s == NULL)
		return KH_EXEC_API_NONE;
	if (strcmp(s, KH_EXEC_GROUP "/v1") == 0)
		return KH_EXEC_API_V1;
	if (strcmp(s, KH_EXEC_GROUP "/v1beta1") == 0)
		return KH_EXEC_API_V1BETA1;
	return KH_EXEC_API_NONE;
}

void
kh_exec_info_free(struct kh_exec_info *info)
{
	struct kh_exec_cluster *c;

	if (info == NULL)
		return;
	c = &info->cluster;
	free(c->server);
	free(c->certificate_authority_data);
	free(c->proxy_url);
	free(c->tls_server_name);
	free(c->issuer);
	memset(info, 0, sizeof(*info));
}

static bool
kh_issuer_valid(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > KH_ISSUER_MAX)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/*
 * spec.cluster.config is the user's own kubeconfig extension: anything in it
 * but "issuer" is someone else's business, but "issuer" itself must be right.
 */
static int
kh_exec_parse_config(json_t *config, struct kh_exec_cluster *c, kh_error *err)
{
	json_t *issuer;
	int rc;

	if (config == NULL || json_is_null(config))
		return 0;
	if (!json_is_object(config))
		return kh_fail(err, KH_ERR_INPUT,
		               "the kubeconfig extension client.authentication.k8s.io/exec must be a map, not %s",
		               kh_json_type_name(config));
	rc = kh_json_string(config, "issuer", "spec.cluster.config.", &issuer, err);
	if (rc <= 0)
		return rc;
	if (!kh_issuer_valid(json_string_value(issuer), json_string_length(issuer)))
		return kh_fail(err, KH_ERR_INPUT,
		               "issuer in the kubeconfig extension client.authentication.k8s.io/exec must be 1-%d characters of A-Z a-z 0-9 . _ -",
		               KH_ISSUER_MAX);
	c->issuer = strdup(json_string_value(issuer));
	if (c->issuer == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	return 0;
}

static int
kh_exec_parse_cluster(json_t *cluster, struct kh_exec_cluster *c, kh_error *err)
{
	static const char where[] = "spec.cluster.";

	if (!json_is_object(cluster))
		return kh_fail(err, KH_ERR_INPUT, "spec.cluster must be an object, not %s",
		               kh_json_type_name(cluster));
	if (kh_json_dup_string(cluster, "server", where, &c->server, NULL, err) < 0 ||
	    kh_json_dup_string(cluster, "certificate-authority-data", where,
	                       &c->certificate_authority_data,
	                       &c->certificate_authority_data_len, err) < 0 ||
	    kh_json_bool(cluster, "insecure-skip-tls-verify", where,
	                 &c->insecure_skip_tls_verify, err) < 0 ||
	    kh_json_dup_string(cluster, "proxy-url", where, &c->proxy_url, NULL, err) < 0 ||
	    kh_json_dup_string(cluster, "tls-server-name", where, &c->tls_server_name,
	                       NULL, err) < 0 ||
	    kh_json_bool(cluster, "disable-compression", where,
	                 &c->disable_compression, err) < 0)
		return -1;
	return kh_exec_parse_config(json_object_get(cluster, "config"), c, err);
}

/*
 * Unknown members at the top level, in spec and in spec.cluster are ignored:
 * client-go grows these types over releases (disable-compression came in
 * 1.26; older clients and the Python client may send spec.response) and the
 * request is advisory. Known members must have the right type.
 */
static int
kh_exec_parse_root(json_t *root, struct kh_exec_info *info, kh_error *err)
{
	json_t *v, *spec, *cluster;

	if (kh_json_required_string(root, "apiVersion", "", &v, err) < 0)
		return -1;
	info->api = kh_exec_api_from_string(json_string_value(v));
	if (info->api == KH_EXEC_API_NONE)
		return kh_fail(err, KH_ERR_INPUT,
		               "unsupported apiVersion '%.64s'; kubehsm speaks %s/v1 and v1beta1",
		               json_string_value(v), KH_EXEC_GROUP);
	if (kh_json_required_string(root, "kind", "", &v, err) < 0)
		return -1;
	if (strcmp(json_string_value(v), "ExecCredential") != 0)
		return kh_fail(err, KH_ERR_INPUT,
		               "kind must be ExecCredential, not '%.64s'", json_string_value(v));
	spec = json_object_get(root, "spec");
	if (spec == NULL)
		return kh_fail(err, KH_ERR_INPUT, "spec is missing");
	if (!json_is_object(spec))
		return kh_fail(err, KH_ERR_INPUT, "spec must be an object, not %s",
		               kh_json_type_name(spec));
	/* v1 clients always send interactive; v1beta1 may not. We never prompt. */
	if (kh_json_bool(spec, "interactive", "spec.", &info->interactive, err) < 0)
		return -1;
	cluster = json_object_get(spec, "cluster");
	if (cluster == NULL)
		return 0;
	info->has_cluster = true;
	return kh_exec_parse_cluster(cluster, &info->cluster, err);
}

int
kh_exec_info_parse(const char *json, size_t len, struct kh_exec_info *info,
                   kh_error *err)
{
	json_t *root;
	int rc;

	if (info == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_exec_info_parse: missing argument");
	memset(info, 0, sizeof(*info));
	if (kh_json_load_object(json, len, KH_EXEC_INFO_MAX, "KUBERNETES_EXEC_INFO",
	                        &root, err) < 0)
		return -1;
	rc = kh_exec_parse_root(root, info, err);
	json_decref(root);
	if (rc < 0)
		kh_exec_info_free(info);
	return rc < 0 ? -1 : 0;
}

int
kh_exec_info_from_env(const char *value, enum kh_exec_api default_api,
                      struct kh_exec_info *info, kh_error *err)
{
	if (info == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_exec_info_from_env: missing argument");
	memset(info, 0, sizeof(*info));
	if (value != NULL && value[0] != '\0')
		/* strnlen: a value past the cap is refused without reading it all. */
		return kh_exec_info_parse(value, strnlen(value, KH_EXEC_INFO_MAX + 1),
		                          info, err);
	if (kh_exec_api_version(default_api) == NULL)
		return kh_fail(err, KH_ERR_INPUT,
		               "KUBERNETES_EXEC_INFO is not set: run kubehsm exec from kubectl (a kubeconfig exec entry), or name the apiVersion to answer with");
	info->api = default_api;
	return 0;
}

int
kh_format_rfc3339(time_t t, char *buf, size_t size, kh_error *err)
{
	struct tm tm;
	size_t n;

	if (buf == NULL || size < 21)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_format_rfc3339: buffer too small");
	buf[0] = '\0';
	if (gmtime_r(&t, &tm) == NULL)
		return kh_fail(err, KH_ERR_INPUT, "time %lld cannot be represented",
		               (long long)t);
	/* tm_year counts from 1900; RFC 3339 has exactly four year digits. */
	if (tm.tm_year < -1900 || tm.tm_year > 9999 - 1900)
		return kh_fail(err, KH_ERR_INPUT,
		               "time %lld is outside the years 0000-9999", (long long)t);
	n = strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (n != 20) {
		buf[0] = '\0';
		return kh_fail(err, KH_ERR_INTERNAL, "cannot format time %lld", (long long)t);
	}
	return 0;
}

/* Build {"expirationTimestamp", "clientCertificateData", "clientKeyData"}. */
static json_t *
kh_exec_status(const char *stamp, const char *cert_pem, json_t *key, kh_error *err)
{
	json_t *status = json_object();

	/* json_object_set_new releases the value even when it fails. */
	if (status == NULL ||
	    json_object_set_new(status, "expirationTimestamp", json_string(stamp)) != 0 ||
	    json_object_set_new(status, "clientCertificateData", json_string(cert_pem)) != 0 ||
	    json_object_set(status, "clientKeyData", key) != 0) {
		json_decref(status);
		kh_fail(err, KH_ERR_INPUT,
		        "cannot build the ExecCredential status (is the certificate PEM text?)");
		return NULL;
	}
	return status;
}

int
kh_exec_response_encode(enum kh_exec_api api, time_t expiry,
                        const char *cert_pem, const char *key_pem,
                        char **out, size_t *out_len, kh_error *err)
{
	const char *version = kh_exec_api_version(api);
	char stamp[32];
	json_t *root = NULL, *key = NULL, *status;
	int rc = -1;

	if (out == NULL || out_len == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_exec_response_encode: missing argument");
	*out = NULL;
	*out_len = 0;
	if (version == NULL)
		return kh_fail(err, KH_ERR_INPUT, "no apiVersion to answer with");
	if (cert_pem == NULL || cert_pem[0] == '\0' || key_pem == NULL || key_pem[0] == '\0')
		return kh_fail(err, KH_ERR_INPUT, "the session has no certificate or key");
	if (kh_format_rfc3339(expiry, stamp, sizeof(stamp), err) < 0)
		return -1;
	/*
	 * Our own reference to the key string outlives the tree, so its buffer
	 * (jansson's only copy of the key) can be wiped after the dump.
	 */
	key = json_string(key_pem);
	if (key == NULL)
		return kh_fail(err, KH_ERR_INPUT, "the session key is not valid text");
	status = kh_exec_status(stamp, cert_pem, key, err);
	if (status == NULL)
		goto out;
	root = json_object();
	if (root == NULL ||
	    json_object_set_new(root, "apiVersion", json_string(version)) != 0 ||
	    json_object_set_new(root, "kind", json_string("ExecCredential")) != 0 ||
	    json_object_set_new(root, "status", status) != 0) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	rc = kh_json_dump_line(root, out, out_len, err);
out:
	json_decref(root);
	kh_json_wipe_string(key);
	json_decref(key);
	return rc;
}

/* ================================================================ signer */

void
kh_signer_request_free(struct kh_signer_request *req)
{
	if (req == NULL)
		return;
	free(req->config.path_lib);
	free(req->config.slot_id);
	free(req->config.object_id);
	OPENSSL_cleanse(req, sizeof(*req));
}

/*
 * configuration is the kubeconfig auth-provider config passed through as a
 * map[string]string. Keys we do not use (pathExec, vendor extras) are left
 * alone whatever their type; the ones we read must be strings.
 */
static int
kh_signer_parse_config(json_t *config, struct kh_signer_config *c, kh_error *err)
{
	static const char where[] = "configuration.";
	json_t *pin;

	if (config == NULL)
		return 0;
	if (!json_is_object(config))
		return kh_fail(err, KH_ERR_INPUT, "configuration must be an object, not %s",
		               kh_json_type_name(config));
	if (kh_json_dup_string(config, "pathLib", where, &c->path_lib, NULL, err) < 0 ||
	    kh_json_dup_string(config, "slotId", where, &c->slot_id, NULL, err) < 0 ||
	    kh_json_dup_string(config, "objectId", where, &c->object_id, NULL, err) < 0)
		return -1;
	if (kh_json_string(config, "pin", where, &pin, err) < 0)
		return -1;
	if (pin != NULL) {
		/* Never kept; wipe jansson's copy so it does not linger in freed memory. */
		c->pin_given = true;
		kh_json_wipe_string(pin);
	}
	return 0;
}

/* Go's crypto.Hash names, for telling the user which hash they asked for. */
static const char *
kh_go_hash_any_name(json_int_t h)
{
	static const char *const names[] = {
		NULL, "MD4", "MD5", "SHA-1", "SHA-224", "SHA-256", "SHA-384",
		"SHA-512", "MD5+SHA1", "RIPEMD-160", "SHA3-224", "SHA3-256",
		"SHA3-384", "SHA3-512", "SHA-512/224", "SHA-512/256",
		"BLAKE2s-256", "BLAKE2b-256", "BLAKE2b-384", "BLAKE2b-512",
	};

	if (h <= 0 || h >= (json_int_t)(sizeof(names) / sizeof(names[0])))
		return NULL;
	return names[h];
}

static int
kh_signer_hash(json_t *v, const char *where, int *hash, kh_error *err)
{
	json_int_t h;
	const char *name;

	if (v == NULL)
		return kh_fail(err, KH_ERR_INPUT, "%s is missing", where);
	if (!json_is_integer(v))
		return kh_fail(err, KH_ERR_INPUT,
		               "%s must be a Go crypto.Hash number, not %s",
		               where, kh_json_type_name(v));
	h = json_integer_value(v);
	if (h >= KH_GO_SHA256 && h <= KH_GO_SHA512) {
		*hash = (int)h;
		return 0;
	}
	name = kh_go_hash_any_name(h);
	if (name != NULL)
		return kh_fail(err, KH_ERR_UNSUPPORTED,
		               "unsupported hash %s (Go crypto.Hash %lld); kubehsm signs SHA-256, SHA-384 and SHA-512",
		               name, (long long)h);
	if (h == 0)
		return kh_fail(err, KH_ERR_UNSUPPORTED,
		               "unsupported hash 0 (no pre-hash, as for Ed25519); kubehsm signs SHA-256, SHA-384 and SHA-512");
	return kh_fail(err, KH_ERR_INPUT, "%s %lld is not a Go crypto.Hash",
	               where, (long long)h);
}

/* {"SaltLength":n,"Hash":h}, exactly rsa.PSSOptions as encoding/json writes it. */
static int
kh_signer_pss_opts(json_t *v, struct kh_sign_opts *opts, kh_error *err)
{
	const char *key;
	json_t *val, *salt;
	json_int_t s;

	if (!json_is_object(v))
		return kh_fail(err, KH_ERR_INPUT,
		               "signerOpts for *rsa.PSSOptions must be an object, not %s",
		               kh_json_type_name(v));
	/* An option we do not understand could change what gets signed: refuse it. */
	json_object_foreach(v, key, val) {
		if (strcmp(key, "SaltLength") != 0 && strcmp(key, "Hash") != 0)
			return kh_fail(err, KH_ERR_INPUT,
			               "signerOpts has an unknown field '%.32s' (rsa.PSSOptions has SaltLength and Hash)",
			               key);
	}
	salt = json_object_get(v, "SaltLength");
	if (salt == NULL)
		return kh_fail(err, KH_ERR_INPUT, "signerOpts.SaltLength is missing");
	if (!json_is_integer(salt))
		return kh_fail(err, KH_ERR_INPUT, "signerOpts.SaltLength must be an integer, not %s",
		               kh_json_type_name(salt));
	s = json_integer_value(salt);
	if (s < KH_PSS_SALT_EQUALS_HASH || s > KH_PSS_SALT_ABSURD)
		return kh_fail(err, KH_ERR_INPUT,
		               "signerOpts.SaltLength %lld is out of range (0 = auto, -1 = hash size, or 1-%d)",
		               (long long)s, KH_PSS_SALT_ABSURD);
	opts->scheme = KH_SIGN_PSS;
	opts->salt_len = (int)s;
	return kh_signer_hash(json_object_get(v, "Hash"), "signerOpts.Hash", &opts->hash, err);
}

/*
 * signerOpts: the KEP text and the prototype client-go provider (see
 * kh_signer_parse_sign) send json.Marshal(opts) as a JSON *string*
 * ("{\"SaltLength\":-1,\"Hash\":5}" or "5"); we also take the same value
 * embedded directly ({"SaltLength":-1,"Hash":5} or 5), as the design notes
 * write it. The string form is decoded as strictly as the request itself.
 */
static int
kh_signer_opts(json_t *type, json_t *raw, struct kh_sign_opts *opts, kh_error *err)
{
	const char *t = json_string_value(type);
	json_t *v = raw, *owned = NULL;
	json_error_t jerr;
	char text[JSON_ERROR_TEXT_LENGTH];
	int rc;

	if (json_is_string(raw)) {
		owned = json_loadb(json_string_value(raw), json_string_length(raw),
		                   JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
		if (owned == NULL) {
			kh_json_error_text(&jerr, text, sizeof(text));
			return kh_fail(err, KH_ERR_INPUT, "signerOpts is not valid JSON: %s", text);
		}
		v = owned;
	}
	if (strcmp(t, "*rsa.PSSOptions") == 0 || strcmp(t, "rsa.PSSOptions") == 0) {
		rc = kh_signer_pss_opts(v, opts, err);
	} else if (strcmp(t, "crypto.Hash") == 0) {
		opts->scheme = KH_SIGN_HASH;
		opts->salt_len = 0;
		rc = kh_signer_hash(v, "signerOpts", &opts->hash, err);
	} else {
		rc = kh_fail(err, KH_ERR_INPUT,
		             "unsupported signerOptsType '%.64s' (kubehsm understands *rsa.PSSOptions and crypto.Hash)",
		             t);
	}
	json_decref(owned);
	return rc;
}

/*
 * SignRequest fields, after the KEP (kubernetes/enhancements
 * keps/sig-auth/20200507-external-tls-certificate-authenticator/README.md,
 * PR #1749) and its prototype (elastisys/kubernetes,
 * staging/src/k8s.io/client-go/plugin/pkg/client/auth/externalsigner/externalsigner.go):
 *   digest          base64.StdEncoding of the digest bytes
 *   signerOptsType  reflect.TypeOf(opts).String(): "*rsa.PSSOptions" or "crypto.Hash"
 *   signerOpts      string(json.Marshal(opts)): "{\"SaltLength\":-1,\"Hash\":5}" or "5"
 */
static int
kh_signer_parse_sign(json_t *root, struct kh_signer_request *req, kh_error *err)
{
	json_t *digest, *type, *raw;
	unsigned char *buf = NULL;
	size_t len = 0, want;

	if (kh_json_required_string(root, "digest", "", &digest, err) < 0 ||
	    kh_json_required_string(root, "signerOptsType", "", &type, err) < 0)
		return -1;
	raw = json_object_get(root, "signerOpts");
	if (raw == NULL)
		return kh_fail(err, KH_ERR_INPUT, "signerOpts is missing");
	if (kh_signer_opts(type, raw, &req->opts, err) < 0)
		return -1;
	if (kh_base64_decode(json_string_value(digest), json_string_length(digest),
	                     KH_DIGEST_MAX, &buf, &len, err) < 0) {
		char why[KH_ERROR_MAX];

		if (err == NULL)
			return -1;
		(void)snprintf(why, sizeof(why), "%s", err->msg);
		return kh_fail(err, err->code, "digest: %s", why);
	}
	want = kh_go_hash_size(req->opts.hash);
	if (len != want) {
		free(buf);
		return kh_fail(err, KH_ERR_INPUT, "the digest is %zu bytes but %s needs %zu",
		               len, kh_go_hash_name(req->opts.hash), want);
	}
	memcpy(req->digest, buf, len);
	req->digest_len = len;
	free(buf);
	return 0;
}

static int
kh_signer_parse_root(json_t *root, struct kh_signer_request *req, kh_error *err)
{
	json_t *v;
	const char *kind;

	if (kh_json_required_string(root, "apiVersion", "", &v, err) < 0)
		return -1;
	if (strcmp(json_string_value(v), KH_SIGNER_API_VERSION) != 0)
		return kh_fail(err, KH_ERR_INPUT,
		               "unsupported apiVersion '%.64s'; kubehsm sign speaks " KH_SIGNER_API_VERSION,
		               json_string_value(v));
	if (kh_json_required_string(root, "kind", "", &v, err) < 0)
		return -1;
	kind = json_string_value(v);
	/* "Certificate" and "Sign" are what the prototype client-go sent. */
	if (strcmp(kind, "CertificateRequest") == 0 || strcmp(kind, "Certificate") == 0)
		req->kind = KH_SIGNER_CERTIFICATE;
	else if (strcmp(kind, "SignRequest") == 0 || strcmp(kind, "Sign") == 0)
		req->kind = KH_SIGNER_SIGN;
	else
		return kh_fail(err, KH_ERR_INPUT,
		               "kind must be CertificateRequest or SignRequest, not '%.64s'", kind);
	if (kh_signer_parse_config(json_object_get(root, "configuration"), &req->config, err) < 0)
		return -1;
	if (req->kind == KH_SIGNER_SIGN)
		return kh_signer_parse_sign(root, req, err);
	return 0;
}

int
kh_signer_request_parse(const char *json, size_t len, struct kh_signer_request *req,
                        kh_error *err)
{
	json_t *root;
	int rc;

	if (req == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_signer_request_parse: missing argument");
	memset(req, 0, sizeof(*req));
	if (kh_json_load_object(json, len, KH_SIGNER_REQUEST_MAX, "the signer request",
	                        &root, err) < 0)
		return -1;
	rc = kh_signer_parse_root(root, req, err);
	json_decref(root);
	if (rc < 0)
		kh_signer_request_free(req);
	return rc < 0 ? -1 : 0;
}

/* {"apiVersion":…,"kind":kind,field:base64(data)} as one line. */
static int
kh_signer_response(const char *kind, const char *field, const unsigned char *data,
                   size_t len, char **out, size_t *out_len, kh_error *err)
{
	char *b64 = NULL;
	json_t *root;
	int rc;

	if (out == NULL || out_len == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "signer response: missing argument");
	*out = NULL;
	*out_len = 0;
	if (data == NULL || len == 0)
		return kh_fail(err, KH_ERR_INPUT, "nothing to send in the %s", kind);
	if (kh_base64_encode(data, len, &b64, NULL, err) < 0)
		return -1;
	root = json_object();
	if (root == NULL ||
	    json_object_set_new(root, "apiVersion", json_string(KH_SIGNER_API_VERSION)) != 0 ||
	    json_object_set_new(root, "kind", json_string(kind)) != 0 ||
	    json_object_set_new(root, field, json_string(b64)) != 0) {
		json_decref(root);
		free(b64);
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	}
	free(b64);
	rc = kh_json_dump_line(root, out, out_len, err);
	json_decref(root);
	return rc;
}

int
kh_signer_certificate_response(const unsigned char *der, size_t der_len,
                               char **out, size_t *out_len, kh_error *err)
{
	return kh_signer_response("CertificateResponse", "certificate", der, der_len,
	                          out, out_len, err);
}

int
kh_signer_sign_response(const unsigned char *sig, size_t sig_len,
                        char **out, size_t *out_len, kh_error *err)
{
	return kh_signer_response("SignResponse", "signature", sig, sig_len,
	                          out, out_len, err);
}
