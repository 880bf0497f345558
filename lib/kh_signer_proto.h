/*
 * kh_signer_proto — the external signer protocol
 * (external-signer.authentication.k8s.io/v1alpha1): decode
 * CertificateRequest / SignRequest, encode CertificateResponse /
 * SignResponse.
 *
 * Decoding is strict, as for kh_exec_proto.
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set; decoding failures are KH_ERR_INPUT (or KH_ERR_UNSUPPORTED
 * for a valid but unsupported hash) with one line saying what is wrong.
 */
#ifndef KH_SIGNER_PROTO_H
#define KH_SIGNER_PROTO_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/kh_error.h"
#include "lib/kh_sign.h"

/* Input cap: one argv string (at most 128 KiB on Linux) is far more. */
#define KH_SIGNER_REQUEST_MAX (64 * 1024)

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

#endif
