/*
 * kh_signer_proto — decode external-signer requests, encode the answers.
 */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "lib/kh_base64.h"
#include "lib/kh_json_doc.h"
#include "lib/kh_mem.h"
#include "lib/kh_signer_proto.h"

/* Larger than any RSA key's room for salt (RSA-16384 with SHA-256: 2014). */
#define KH_PSS_SALT_ABSURD 2048

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
