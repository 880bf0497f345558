/*
 * kh_proto — the JSON protocols kubehsm speaks to Kubernetes clients.
 *
 *  - Exec credential plugin (KEP-541, client.authentication.k8s.io v1 and
 *    v1beta1): decode KUBERNETES_EXEC_INFO, encode the ExecCredential answer.
 *  - External signer (external-signer.authentication.k8s.io/v1alpha1): decode
 *    CertificateRequest / SignRequest, encode CertificateResponse /
 *    SignResponse.
 *
 * Decoding is strict: jansson with duplicate keys rejected, no trailing data,
 * no NUL bytes in strings, valid UTF-8 only, bounded input, every field's type
 * checked. All failures are KH_ERR_INPUT (or KH_ERR_UNSUPPORTED for a valid
 * but unsupported hash) with one line saying what is wrong, unless noted.
 */
#ifndef KH_PROTO_H
#define KH_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "kh_error.h"
#include "kh_sign.h"

/*
 * Input caps. Linux refuses a single argv or environment string longer than
 * MAX_ARG_STRLEN (128 KiB), so no real client can send more than that; the
 * exec cap leaves room for callers that read the request from elsewhere and
 * keeps multi-MB garbage from being parsed at all.
 */
#define KH_EXEC_INFO_MAX     (1024 * 1024)
#define KH_SIGNER_REQUEST_MAX (64 * 1024)

/* ------------------------------------------------------------------ exec */

enum kh_exec_api {
	KH_EXEC_API_NONE = 0,
	KH_EXEC_API_V1BETA1,  /* client.authentication.k8s.io/v1beta1 */
	KH_EXEC_API_V1,       /* client.authentication.k8s.io/v1 */
};

/* spec.cluster, present when the kubeconfig sets provideClusterInfo: true. */
struct kh_exec_cluster {
	char *server;                  /* NULL when absent */
	char *certificate_authority_data; /* base64 as sent, not decoded; NULL when absent */
	size_t certificate_authority_data_len;
	bool insecure_skip_tls_verify;
	char *proxy_url;
	char *tls_server_name;
	bool disable_compression;
	/* From cluster.config (the client.authentication.k8s.io/exec extension). */
	char *issuer;                  /* [A-Za-z0-9._-]{1,32}; NULL when absent */
};

struct kh_exec_info {
	enum kh_exec_api api;
	bool interactive;      /* false when absent (v1beta1 may omit it) */
	bool has_cluster;
	struct kh_exec_cluster cluster;
};

/* "client.authentication.k8s.io/v1" etc.; NULL for KH_EXEC_API_NONE. */
const char *kh_exec_api_version(enum kh_exec_api api);

/* Map an apiVersion string to the enum; KH_EXEC_API_NONE if not spoken. */
enum kh_exec_api kh_exec_api_from_string(const char *s);

/*
 * Decode a KUBERNETES_EXEC_INFO document of `len` bytes (need not be
 * NUL-terminated). On failure *info is left empty (safe to free).
 */
int kh_exec_info_parse(const char *json, size_t len, struct kh_exec_info *info,
                       kh_error *err);

/*
 * Decode the value of KUBERNETES_EXEC_INFO as found in the environment,
 * given the apiVersion named on the command line (--api-version; NONE when
 * not given).  `value` NULL or "" means the variable is unset: client-go and
 * the Python client always set it, @kubernetes/client-node and
 * ruby-kubeclient never do.  Unset, `arg_api` answers for it: *info gets that
 * apiVersion, interactive = false and no cluster; with neither it is an
 * error.  Set, its apiVersion must equal `arg_api` when that is given (one
 * KH_ERR_INPUT line naming both otherwise).
 */
int kh_exec_info_from_env(const char *value, enum kh_exec_api arg_api,
                          struct kh_exec_info *info, kh_error *err);

void kh_exec_info_free(struct kh_exec_info *info);

/*
 * Format t as RFC 3339 UTC "YYYY-MM-DDTHH:MM:SSZ" into buf (size >= 21).
 * Years outside 0000-9999 are refused (KH_ERR_INPUT).
 */
int kh_format_rfc3339(time_t t, char *buf, size_t size, kh_error *err);

/*
 * Encode the ExecCredential answer: one compact JSON line plus '\n'.
 * cert_pem: session certificate then issuer chain; key_pem: the session key
 * (secret). On success *out is a NUL-terminated malloc'd buffer of *out_len
 * bytes (excluding the NUL); release it with kh_secure_strfree() — it holds
 * the key.
 *
 * No copy of key_pem is left behind in freed memory: the output is written by
 * json_dump_callback into one exactly sized buffer (a counting pass first, so
 * there is no realloc of growing buffers), and the one copy jansson makes of
 * the key string is wiped in place before its json_t is released. jansson's
 * global allocator is deliberately not replaced: this library is loaded into
 * PAM host processes that may use jansson themselves.
 */
int kh_exec_response_encode(enum kh_exec_api api, time_t expiry,
                            const char *cert_pem, const char *key_pem,
                            char **out, size_t *out_len, kh_error *err);

/* ---------------------------------------------------------------- signer */

/*
 * What the external-signer protocol really looks like (it never merged):
 *
 *  - KEP text: kubernetes/enhancements PR #1749,
 *    keps/sig-auth/20200507-external-tls-certificate-authenticator/README.md.
 *    Kinds CertificateRequest / SignRequest / CertificateResponse /
 *    SignResponse; `configuration` is the auth-provider config as a
 *    map[string]string (pathExec, pathLib, slotId, objectId, pin — all
 *    strings, slotId "0"); `digest` is base64 StdEncoding; `signerOptsType`
 *    "*rsa.PSSOptions"; `signerOpts` is a JSON *string* holding JSON:
 *    "{\"SaltLength\":-1,\"Hash\":5}". The KEP passes the request in an
 *    environment variable.
 *  - Prototype client-go provider: elastisys/kubernetes,
 *    staging/src/k8s.io/client-go/plugin/pkg/client/auth/externalsigner/externalsigner.go.
 *    signerOptsType = reflect.TypeOf(opts).String() ("*rsa.PSSOptions" for
 *    TLS 1.3 RSA, "crypto.Hash" for ECDSA and TLS 1.2 PKCS#1 v1.5);
 *    signerOpts = string(json.Marshal(opts)), so "{\"SaltLength\":-1,\"Hash\":5}"
 *    or "5" (crypto.Hash has no JSON marshaller: a bare number). Its request
 *    kinds were "Certificate" and "Sign"; one revision passed the request as
 *    the single argv string (as DESIGN.md specifies for kubehsm), a later one
 *    in EXTERNAL_SIGNER_PLUGIN_CONFIG. It reads only `certificate` /
 *    `signature` from the answer.
 *
 * Accepted here: both kind spellings, signerOpts as a JSON string or the same
 * JSON embedded, "*rsa.PSSOptions" with or without the star. Answers use the
 * KEP kinds. A `pin` in configuration is never stored (pin_given tells the
 * caller to warn); jansson's copy in the decoded tree is wiped, but its
 * lexer's scratch buffer is freed unwiped — the PIN was on the command line
 * anyway, which is exactly why the caller warns.
 */

#define KH_SIGNER_API_VERSION "external-signer.authentication.k8s.io/v1alpha1"

enum kh_signer_kind {
	KH_SIGNER_NONE = 0,
	KH_SIGNER_CERTIFICATE,  /* CertificateRequest */
	KH_SIGNER_SIGN,         /* SignRequest */
};

/* The `configuration` map (string to string); unknown keys are ignored. */
struct kh_signer_config {
	char *path_lib;   /* pathLib; NULL when absent */
	char *slot_id;    /* slotId */
	char *object_id;  /* objectId */
	bool pin_given;   /* a "pin" was present: the caller warns, we never keep it */
};

struct kh_signer_request {
	enum kh_signer_kind kind;
	struct kh_signer_config config;
	/* SignRequest only: */
	unsigned char digest[KH_DIGEST_MAX];
	size_t digest_len;
	struct kh_sign_opts opts;
};

/* Decode one request (the JSON program argument) of `len` bytes. */
int kh_signer_request_parse(const char *json, size_t len,
                            struct kh_signer_request *req, kh_error *err);

void kh_signer_request_free(struct kh_signer_request *req);

/*
 * Encode a CertificateResponse (certificate = base64 of `der`) or a
 * SignResponse (signature = base64 of `sig`): one compact JSON line plus
 * '\n' in a NUL-terminated malloc'd *out (free with free()).
 */
int kh_signer_certificate_response(const unsigned char *der, size_t der_len,
                                   char **out, size_t *out_len, kh_error *err);
int kh_signer_sign_response(const unsigned char *sig, size_t sig_len,
                            char **out, size_t *out_len, kh_error *err);

/* ---------------------------------------------------------------- base64 */

/* Standard base64 with padding (Go's base64.StdEncoding); *out malloc'd, NUL-terminated. */
int kh_base64_encode(const unsigned char *in, size_t len, char **out,
                     size_t *out_len, kh_error *err);

/*
 * Strict decode of standard padded base64: no whitespace, no characters
 * outside the alphabet, padding only at the end, length a multiple of 4, and
 * canonical (unused trailing bits zero). Decodes at most `max` bytes: longer
 * input fails without decoding. *out malloc'd (free with free(); wipe first
 * if the data is secret).
 */
int kh_base64_decode(const char *in, size_t len, size_t max,
                     unsigned char **out, size_t *out_len, kh_error *err);

#endif
