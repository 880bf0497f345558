/*
 * kh_exec_proto — the client-go exec credential plugin protocol (KEP-541,
 * client.authentication.k8s.io v1 and v1beta1): decode
 * KUBERNETES_EXEC_INFO, encode the ExecCredential answer.
 *
 * Decoding is strict: jansson with duplicate keys rejected, no trailing
 * data, no NUL bytes in strings, valid UTF-8 only, bounded input, every
 * field's type checked.
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set; decoding failures are KH_ERR_INPUT with one line saying
 * what is wrong.
 */
#ifndef KH_EXEC_PROTO_H
#define KH_EXEC_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "lib/kh_error.h"

/*
 * Input cap.  Linux refuses a single argv or environment string longer
 * than MAX_ARG_STRLEN (128 KiB), so no real client can send more than that;
 * the cap leaves room for callers that read the request from elsewhere and
 * keeps multi-MB garbage from being parsed at all.
 */
#define KH_EXEC_INFO_MAX     (1024 * 1024)

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
 * kubehsm exec no longer calls this on its path (it serves the answer the
 * login rendered, below); it stays the reference the pre-rendered answer
 * must equal byte for byte (tests/unit).
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

/*
 * The pre-rendered answer (issue #24).  At login the writer renders the
 * ExecCredential once, with jansson, and keeps it in the session record;
 * `kubehsm exec` then serves it without building or escaping anything.
 * What is kept is the ExecCredential without its apiVersion, one compact
 * line:
 *
 *   {"kind":"ExecCredential","status":{"expirationTimestamp":"<RFC 3339>",
 *    "clientCertificateData":"<chain PEM>","clientKeyData":"<key PEM>"}}\n
 *
 * and the answer to either apiVersion is that line with
 * {"apiVersion":"<version>", in place of its first '{' — byte for byte
 * what kh_exec_response_encode writes for the same inputs.
 */

/* Render the answer for a session (jansson).  The PEM texts must be plain
 * PEM (kh_exec_answer_check's alphabet), which every certificate and key
 * OpenSSL writes is.  *out is a NUL-terminated buffer of *out_len bytes
 * holding the key: release with kh_secure_free(*out, *out_len + 1). */
int kh_exec_answer_render(time_t expiry, const char *cert_pem, const char *key_pem,
                          char **out, size_t *out_len, kh_error *err);

/*
 * Check that ans (len bytes, need not be NUL-terminated) is exactly what
 * kh_exec_answer_render writes for a session expiring at `expiry`: the
 * fixed text, the expiry's own timestamp, and two PEM texts of the alphabet
 * base64 and PEM armour are made of ([A-Za-z0-9+/=], '-', ' ' and the
 * escape \n) each starting "-----BEGIN ".  Not a JSON parser: the shape is
 * fixed, and a text that passes is a valid JSON document whatever else is
 * in the record, so it can be served as it is.  0, or -1 (KH_ERR_REFUSED).
 */
int kh_exec_answer_check(const char *ans, size_t len, time_t expiry, kh_error *err);

/* The bytes to write before ans + 1 to answer `api`: "{\"apiVersion\":...,"
 * (a static string; NULL for KH_EXEC_API_NONE). */
const char *kh_exec_answer_prefix(enum kh_exec_api api);

/* The certificate chain and the key out of an answer of the checked shape
 * (jansson, for the readers that need the PEM texts themselves).  Either
 * output may be NULL when not wanted; each text is decoded on its own.
 * *key_pem is secret: kh_secure_strfree.  0, or -1 with err. */
int kh_exec_answer_pems(const char *ans, size_t len, char **cert_pem, char **key_pem,
                        kh_error *err);

#endif
