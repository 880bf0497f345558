/*
 * kh_exec_proto — the client.authentication.k8s.io ExecCredential codec.
 *
 * Part of the lean core: jansson and libc only, so that `kubehsm exec`, run
 * on every kubectl invocation, loads no crypto library.
 */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <time.h>

#include "lib/kh_mem.h"
#include "lib/kh_exec_proto.h"
#include "lib/kh_json_doc.h"
#include "lib/kh_words.h"

#define KH_EXEC_GROUP "client.authentication.k8s.io"

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
	if (!kh_issuer_id_valid(json_string_value(issuer), json_string_length(issuer)))
		return kh_fail(err, KH_ERR_INPUT,
		               "issuer in the kubeconfig extension client.authentication.k8s.io/exec must be 1-%d characters of A-Z a-z 0-9 . _ -",
		               KH_ISSUER_ID_MAX);
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

/*
 * The entry `kubehsm kubeconfig` prints names its apiVersion twice: as the
 * entry's apiVersion, which client-go and the Python client send in
 * KUBERNETES_EXEC_INFO, and as --api-version, for the clients that send
 * nothing (@kubernetes/client-node, ruby-kubeclient).  Two different values
 * mean the entry was edited by half; answering either would hide that until
 * a client that reads the other one breaks, so say it.
 */
static int
kh_exec_check_api(struct kh_exec_info *info, enum kh_exec_api arg_api, kh_error *err)
{
	enum kh_exec_api asked = info->api;

	if (arg_api == KH_EXEC_API_NONE || asked == arg_api)
		return 0;
	kh_exec_info_free(info);
	return kh_fail(err, KH_ERR_INPUT,
	               "KUBERNETES_EXEC_INFO asks for %s but kubehsm exec was given --api-version %s: "
	               "make the apiVersion of the kubeconfig exec entry and its --api-version argument the same",
	               kh_exec_api_version(asked), kh_exec_api_version(arg_api));
}

int
kh_exec_info_from_env(const char *value, enum kh_exec_api arg_api,
                      struct kh_exec_info *info, kh_error *err)
{
	if (info == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_exec_info_from_env: missing argument");
	memset(info, 0, sizeof(*info));
	if (value != NULL && value[0] != '\0') {
		/* strnlen: a value past the cap is refused without reading it all. */
		if (kh_exec_info_parse(value, strnlen(value, KH_EXEC_INFO_MAX + 1),
		                       info, err) != 0)
			return -1;
		return kh_exec_check_api(info, arg_api, err);
	}
	if (kh_exec_api_version(arg_api) == NULL)
		return kh_fail(err, KH_ERR_INPUT,
		               "KUBERNETES_EXEC_INFO is not set: run kubehsm exec from a kubeconfig exec entry "
		               "(kubectl sets it), or pass --api-version as the entry 'kubehsm kubeconfig' prints does");
	info->api = arg_api;
	return 0;
}

/*
 * Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's
 * civil_from_days, exact for every int64 day count used here).  Not
 * gmtime_r: glibc's gmtime_r loads /etc/localtime on first use (tzset),
 * seven system calls on the warm path for a conversion that needs no time
 * zone.  test_exec_proto checks it against gmtime_r over the whole range.
 */
static void
kh_civil_from_days(int64_t z, int64_t *year, unsigned *month, unsigned *day)
{
	int64_t era, y;
	unsigned doe, yoe, doy, mp;

	z += 719468;   /* shift the epoch to 0000-03-01 */
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);                           /* [0, 146096] */
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  /* [0, 399] */
	y = (int64_t)yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                /* [0, 365] */
	mp = (5 * doy + 2) / 153;                                     /* [0, 11] */
	*day = doy - (153 * mp + 2) / 5 + 1;
	*month = mp < 10 ? mp + 3 : mp - 9;
	*year = y + (*month <= 2);
}

/* RFC 3339 UTC with exactly four year digits: 0000-01-01 to 9999-12-31. */
#define KH_RFC3339_MIN (-62167219200LL)
#define KH_RFC3339_MAX 253402300799LL

int
kh_format_rfc3339(time_t t, char *buf, size_t size, kh_error *err)
{
	int64_t days, secs, year;
	unsigned month, day;
	int n;

	if (buf == NULL || size < 21)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_format_rfc3339: buffer too small");
	buf[0] = '\0';
	if ((long long)t < KH_RFC3339_MIN || (long long)t > KH_RFC3339_MAX)
		return kh_fail(err, KH_ERR_INPUT,
		               "time %lld is outside the years 0000-9999", (long long)t);
	days = (int64_t)t / 86400;
	secs = (int64_t)t % 86400;
	if (secs < 0) {
		secs += 86400;
		days--;
	}
	kh_civil_from_days(days, &year, &month, &day);
	n = snprintf(buf, size, "%04lld-%02u-%02uT%02u:%02u:%02uZ", (long long)year,
	             month, day, (unsigned)(secs / 3600), (unsigned)(secs / 60 % 60),
	             (unsigned)(secs % 60));
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

/*
 * The ExecCredential for a session as one compact JSON line, with an
 * apiVersion member first when version is not NULL (the pre-rendered
 * answer has none: the reader puts its own prefix in front).
 */
static int
kh_exec_credential_dump(const char *version, time_t expiry, const char *cert_pem,
                        const char *key_pem, char **out, size_t *out_len, kh_error *err)
{
	char stamp[32];
	json_t *root = NULL, *key = NULL, *status;
	int rc = -1;

	*out = NULL;
	*out_len = 0;
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
	    (version != NULL &&
	     json_object_set_new(root, "apiVersion", json_string(version)) != 0) ||
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

int
kh_exec_response_encode(enum kh_exec_api api, time_t expiry,
                        const char *cert_pem, const char *key_pem,
                        char **out, size_t *out_len, kh_error *err)
{
	const char *version = kh_exec_api_version(api);

	if (out == NULL || out_len == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_exec_response_encode: missing argument");
	*out = NULL;
	*out_len = 0;
	if (version == NULL)
		return kh_fail(err, KH_ERR_INPUT, "no apiVersion to answer with");
	return kh_exec_credential_dump(version, expiry, cert_pem, key_pem, out, out_len, err);
}

/* ================================================== the pre-rendered answer */

static const char kh_answer_head[] =
	"{\"kind\":\"ExecCredential\",\"status\":{\"expirationTimestamp\":\"";
static const char kh_answer_cert[] = "\",\"clientCertificateData\":\"";
static const char kh_answer_key[] = "\",\"clientKeyData\":\"";
static const char kh_answer_tail[] = "\"}}\n";

#define KH_LIT_LEN(s) (sizeof(s) - 1)

const char *
kh_exec_answer_prefix(enum kh_exec_api api)
{
	switch (api) {
	case KH_EXEC_API_V1:      return "{\"apiVersion\":\"" KH_EXEC_GROUP "/v1\",";
	case KH_EXEC_API_V1BETA1: return "{\"apiVersion\":\"" KH_EXEC_GROUP "/v1beta1\",";
	case KH_EXEC_API_NONE:    break;
	}
	return NULL;
}

/* The bytes of PEM text that need no JSON escape: base64, the armour's
 * dashes and spaces.  The newline is the one escaped byte (\n).  A table:
 * exec scans 2 KB of it per kube request. */
static const unsigned char kh_pem_plain[256] = {
	['A' ... 'Z'] = 1, ['a' ... 'z'] = 1, ['0' ... '9'] = 1,
	['+'] = 1, ['/'] = 1, ['='] = 1, ['-'] = 1, [' '] = 1,
};

/*
 * One escaped PEM text from *p up to its closing quote (excluded), which
 * must come before end.  Advances *p to the quote.  false if a byte outside
 * the alphabet (a quote included) or an escape other than \n comes first.
 */
static bool
kh_skip_pem_text(const char **p, const char *end)
{
	const unsigned char *s = (const unsigned char *)*p, *e = (const unsigned char *)end;

	if (e - s < 11 || memcmp(s, "-----BEGIN ", 11) != 0)
		return false;
	for (;;) {
		while (s < e && kh_pem_plain[*s])
			s++;
		if (s == e)
			return false;
		if (*s == '"') {
			*p = (const char *)s;
			return true;
		}
		if (*s != '\\' || e - s < 2 || s[1] != 'n')
			return false;
		s += 2;
	}
}

/* Match a literal at *p and advance past it. */
static bool
kh_skip_lit(const char **p, const char *end, const char *lit, size_t n)
{
	if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
		return false;
	*p += n;
	return true;
}

/*
 * The fixed shape, and where its two PEM texts are: *cert and *key point
 * at the opening quote of each JSON string, *cert_len and *key_len count
 * both quotes.  The timestamp is left for the caller.  0, or -1.
 */
static int
kh_answer_shape(const char *ans, size_t len, const char **stamp, const char **cert,
		size_t *cert_len, const char **key, size_t *key_len)
{
	const char *p = ans, *end = ans + len;

	if (ans == NULL || !kh_skip_lit(&p, end, kh_answer_head, KH_LIT_LEN(kh_answer_head)))
		return -1;
	*stamp = p;
	if ((size_t)(end - p) < 20)
		return -1;
	p += 20;
	*cert = p + KH_LIT_LEN(kh_answer_cert) - 1;   /* the text's opening quote */
	if (!kh_skip_lit(&p, end, kh_answer_cert, KH_LIT_LEN(kh_answer_cert)) ||
	    !kh_skip_pem_text(&p, end))
		return -1;
	*cert_len = (size_t)(p - *cert) + 1;
	*key = p + KH_LIT_LEN(kh_answer_key) - 1;
	if (!kh_skip_lit(&p, end, kh_answer_key, KH_LIT_LEN(kh_answer_key)) ||
	    !kh_skip_pem_text(&p, end))
		return -1;
	*key_len = (size_t)(p - *key) + 1;
	if (!kh_skip_lit(&p, end, kh_answer_tail, KH_LIT_LEN(kh_answer_tail)) || p != end)
		return -1;
	return 0;
}

int
kh_exec_answer_check(const char *ans, size_t len, time_t expiry, kh_error *err)
{
	const char *stamp_at, *cert, *key;
	size_t cert_len, key_len;
	char stamp[32];

	if (kh_format_rfc3339(expiry, stamp, sizeof(stamp), NULL) != 0 ||
	    kh_answer_shape(ans, len, &stamp_at, &cert, &cert_len, &key, &key_len) != 0 ||
	    memcmp(stamp_at, stamp, 20) != 0)
		return kh_fail(err, KH_ERR_REFUSED,
		               "the pre-rendered ExecCredential is not what kubehsm writes for this session");
	return 0;
}

int
kh_exec_answer_render(time_t expiry, const char *cert_pem, const char *key_pem,
                      char **out, size_t *out_len, kh_error *err)
{
	int rc;

	if (out == NULL || out_len == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "kh_exec_answer_render: missing argument");
	rc = kh_exec_credential_dump(NULL, expiry, cert_pem, key_pem, out, out_len, err);
	/* The reader serves only this exact shape: a chain or key that is not
	 * plain PEM fails here, at login, and not on every kubectl run. */
	if (rc == 0 && kh_exec_answer_check(*out, *out_len, expiry, NULL) != 0) {
		kh_secure_free(*out, *out_len + 1);
		*out = NULL;
		*out_len = 0;
		rc = kh_fail(err, KH_ERR_INPUT, "the session certificate chain or key is not "
		             "plain PEM text");
	}
	return rc;
}

/* One JSON string literal (quotes included) of the answer, decoded by
 * jansson into a copy; the copy jansson made is wiped.  NULL on failure. */
static char *
kh_answer_string(const char *lit, size_t len)
{
	json_error_t jerr;
	json_t *v = json_loadb(lit, len, JSON_DECODE_ANY, &jerr);
	char *out = json_is_string(v) ? strndup(json_string_value(v), json_string_length(v))
				      : NULL;

	kh_json_wipe_string(v);
	json_decref(v);
	return out;
}

int
kh_exec_answer_pems(const char *ans, size_t len, char **cert_pem, char **key_pem,
                    kh_error *err)
{
	const char *stamp, *cert, *key;
	size_t cert_len, key_len;

	if (cert_pem != NULL)
		*cert_pem = NULL;
	if (key_pem != NULL)
		*key_pem = NULL;
	if (kh_answer_shape(ans, len, &stamp, &cert, &cert_len, &key, &key_len) != 0)
		return kh_fail(err, KH_ERR_REFUSED, "the pre-rendered ExecCredential is malformed");
	/* Each text is one JSON string, decoded on its own: a reader that
	 * wants only the key does not pay for the chain. */
	if ((cert_pem != NULL && (*cert_pem = kh_answer_string(cert, cert_len)) == NULL) ||
	    (key_pem != NULL && (*key_pem = kh_answer_string(key, key_len)) == NULL)) {
		if (cert_pem != NULL) {
			free(*cert_pem);
			*cert_pem = NULL;
		}
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	}
	return 0;
}
