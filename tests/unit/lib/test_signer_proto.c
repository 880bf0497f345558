/*
 * Unit tests for the external signer's codec (lib/kh_signer_proto): the
 * requests client-go's external signer sends (the KEP's own examples and
 * the prototype's variants), every malformed one refused without quoting
 * a PIN, and the responses kubehsm sign writes.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "lib/kh_base64.h"
#include "lib/kh_signer_proto.h"
#include "tests/unit/lib/proto_cases.h"

/* ---------------------------------------------- malformed-input tables */

#define SA "\"apiVersion\":\"external-signer.authentication.k8s.io/v1alpha1\""
/* 32 zero bytes, canonical base64 */
#define D32 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
#define PSS5 "\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":\"{\\\"SaltLength\\\":-1,\\\"Hash\\\":5}\""

static char *
build_huge_signer(size_t *len)
{
	char *pad = repeat('x', 70 * 1024);
	char *s = fmt("{" SA ",\"kind\":\"CertificateRequest\",\"configuration\":{\"x\":\"%s\"}}", pad);

	free(pad);
	*len = strlen(s);
	return s;
}

static const struct bad_case signer_bad[] = {
	{ "signer: empty", "", 0, KH_ERR_INPUT, "empty", NULL },
	{ "signer: not JSON", "sign please", 0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "signer: array", "[1]", 0, KH_ERR_INPUT, "must be a JSON object", NULL },
	{ "signer: array of object", "[{}]", 0, KH_ERR_INPUT, "must be a JSON object", NULL },
	{ "signer: apiVersion missing", "{\"kind\":\"SignRequest\"}", 0, KH_ERR_INPUT, "apiVersion is missing", NULL },
	{ "signer: wrong apiVersion", "{\"apiVersion\":\"external-signer.authentication.k8s.io/v1\",\"kind\":\"SignRequest\"}",
	  0, KH_ERR_INPUT, "unsupported apiVersion 'external-signer.authentication.k8s.io/v1'", NULL },
	{ "signer: exec apiVersion", "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\"}",
	  0, KH_ERR_INPUT, "unsupported apiVersion", NULL },
	{ "signer: kind missing", "{" SA "}", 0, KH_ERR_INPUT, "kind is missing", NULL },
	{ "signer: wrong kind", "{" SA ",\"kind\":\"ExecCredential\"}", 0, KH_ERR_INPUT, "kind must be CertificateRequest or SignRequest", NULL },
	{ "signer: a response is not a request", "{" SA ",\"kind\":\"SignResponse\",\"signature\":\"AA==\"}",
	  0, KH_ERR_INPUT, "kind must be", NULL },
	{ "signer: kind number", "{" SA ",\"kind\":1}", 0, KH_ERR_INPUT, "kind must be a string", NULL },
	{ "signer: configuration string", "{" SA ",\"kind\":\"CertificateRequest\",\"configuration\":\"pathLib=/x\"}",
	  0, KH_ERR_INPUT, "configuration must be an object", NULL },
	{ "signer: pathLib number", "{" SA ",\"kind\":\"CertificateRequest\",\"configuration\":{\"pathLib\":5}}",
	  0, KH_ERR_INPUT, "configuration.pathLib must be a string", NULL },
	{ "signer: slotId number", "{" SA ",\"kind\":\"CertificateRequest\",\"configuration\":{\"slotId\":0}}",
	  0, KH_ERR_INPUT, "configuration.slotId must be a string", NULL },
	{ "signer: pin number", "{" SA ",\"kind\":\"CertificateRequest\",\"configuration\":{\"pin\":1234}}",
	  0, KH_ERR_INPUT, "configuration.pin must be a string", NULL },
	{ "signer: duplicate configuration key", "{" SA ",\"kind\":\"CertificateRequest\",\"configuration\":{\"slotId\":\"0\",\"slotId\":\"1\"}}",
	  0, KH_ERR_INPUT, "duplicate", NULL },
	{ "signer: duplicate kind", "{" SA ",\"kind\":\"CertificateRequest\",\"kind\":\"SignRequest\"}",
	  0, KH_ERR_INPUT, "duplicate", NULL },
	{ "signer: digest missing", "{" SA ",\"kind\":\"SignRequest\"," PSS5 "}", 0, KH_ERR_INPUT, "digest is missing", NULL },
	{ "signer: digest number", "{" SA ",\"kind\":\"SignRequest\",\"digest\":5," PSS5 "}", 0, KH_ERR_INPUT, "digest must be a string", NULL },
	{ "signer: digest empty", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"\"," PSS5 "}", 0, KH_ERR_INPUT, "is 0 bytes but SHA-256 needs 32", NULL },
	{ "signer: digest garbage", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"!!!!\"," PSS5 "}", 0, KH_ERR_INPUT, "digest: invalid base64", NULL },
	{ "signer: digest with newline", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"AAAAAAAAAAAAAAAAAAAA\\nAAAAAAAAAAAAAAAAAAAAAAA=\"," PSS5 "}",
	  0, KH_ERR_INPUT, "invalid base64", NULL },
	{ "signer: digest with leading space", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"    AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"," PSS5 "}",
	  0, KH_ERR_INPUT, "invalid base64", NULL },
	{ "signer: digest URL alphabet", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"-_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"," PSS5 "}",
	  0, KH_ERR_INPUT, "unexpected character at offset 0", NULL },
	{ "signer: digest without padding", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"," PSS5 "}",
	  0, KH_ERR_INPUT, "not a multiple of 4", NULL },
	{ "signer: digest padding in the middle", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"AA==AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"," PSS5 "}",
	  0, KH_ERR_INPUT, "unexpected character", NULL },
	{ "signer: digest non-canonical", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB=\"," PSS5 "}",
	  0, KH_ERR_INPUT, "non-canonical", NULL },
	{ "signer: digest 31 bytes", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\"," PSS5 "}",
	  0, KH_ERR_INPUT, "the digest is 31 bytes but SHA-256 needs 32", NULL },
	{ "signer: digest 48 bytes for SHA-256", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"," PSS5 "}",
	  0, KH_ERR_INPUT, "the digest is 48 bytes but SHA-256 needs 32", NULL },
	{ "signer: digest 96 bytes", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"," PSS5 "}",
	  0, KH_ERR_INPUT, "more than 64", NULL },
	{ "signer: signerOptsType missing", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOpts\":\"5\"}",
	  0, KH_ERR_INPUT, "signerOptsType is missing", NULL },
	{ "signer: signerOptsType number", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":5,\"signerOpts\":\"5\"}",
	  0, KH_ERR_INPUT, "signerOptsType must be a string", NULL },
	{ "signer: unknown signerOptsType", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"*ecdsa.Options\",\"signerOpts\":\"5\"}",
	  0, KH_ERR_INPUT, "unsupported signerOptsType '*ecdsa.Options'", NULL },
	{ "signer: signerOpts missing", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"crypto.Hash\"}",
	  0, KH_ERR_INPUT, "signerOpts is missing", NULL },
	{ "signer: signerOpts string not JSON", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":\"{\"}",
	  0, KH_ERR_INPUT, "signerOpts is not valid JSON", NULL },
	{ "signerOpts string with trailing data", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":\"5 6\"}",
	  0, KH_ERR_INPUT, "signerOpts is not valid JSON", NULL },
	{ "signer: signerOpts array", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":[5]}",
	  0, KH_ERR_INPUT, "must be an object, not an array", NULL },
	{ "signer: PSS without Hash", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":\"{\\\"SaltLength\\\":-1}\"}",
	  0, KH_ERR_INPUT, "signerOpts.Hash is missing", NULL },
	{ "signer: PSS without SaltLength", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":{\"Hash\":5}}",
	  0, KH_ERR_INPUT, "SaltLength is missing", NULL },
	{ "signer: PSS salt -2", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":{\"SaltLength\":-2,\"Hash\":5}}",
	  0, KH_ERR_INPUT, "SaltLength -2 is out of range", NULL },
	{ "signer: PSS absurd salt", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":{\"SaltLength\":1000000,\"Hash\":5}}",
	  0, KH_ERR_INPUT, "out of range", NULL },
	{ "signer: PSS salt as string", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":{\"SaltLength\":\"32\",\"Hash\":5}}",
	  0, KH_ERR_INPUT, "SaltLength must be an integer", NULL },
	{ "signer: PSS salt real", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":{\"SaltLength\":32.0,\"Hash\":5}}",
	  0, KH_ERR_INPUT, "SaltLength must be an integer, not a number", NULL },
	{ "signer: PSS unknown field", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":{\"SaltLength\":-1,\"Hash\":5,\"MGF\":1}}",
	  0, KH_ERR_INPUT, "unknown field 'MGF'", NULL },
	{ "signer: PSS duplicate inside string", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":\"{\\\"SaltLength\\\":-1,\\\"Hash\\\":5,\\\"Hash\\\":7}\"}",
	  0, KH_ERR_INPUT, "signerOpts is not valid JSON", NULL },
	{ "signer: PSS with SHA-1", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":{\"SaltLength\":-1,\"Hash\":3}}",
	  0, KH_ERR_UNSUPPORTED, "unsupported hash SHA-1", NULL },
	{ "signer: unknown hash 99", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":\"99\"}",
	  0, KH_ERR_INPUT, "99 is not a Go crypto.Hash", NULL },
	{ "signer: hash -1", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":-1}",
	  0, KH_ERR_INPUT, "is not a Go crypto.Hash", NULL },
	{ "signer: hash 0 (Ed25519)", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":\"0\"}",
	  0, KH_ERR_UNSUPPORTED, "unsupported hash 0", NULL },
	{ "signer: SHA3-256", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":11}",
	  0, KH_ERR_UNSUPPORTED, "unsupported hash SHA3-256", NULL },
	{ "signer: hash object", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":{}}",
	  0, KH_ERR_INPUT, "must be a Go crypto.Hash number, not an object", NULL },
	{ "signer: hash real", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":5.0}",
	  0, KH_ERR_INPUT, "not a number", NULL },
	{ "signer: hash bigger than any integer", "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":100000000000000000000000}",
	  0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "signer: \\u0000 in kind", "{" SA ",\"kind\":\"SignRequest\\u0000\"}", 0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "signer: invalid UTF-8", "{" SA ",\"kind\":\"CertificateRequest\",\"configuration\":{\"pathLib\":\"/\xe2\x28\xa1\"}}",
	  0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "signer: trailing garbage", "{" SA ",\"kind\":\"CertificateRequest\"},", 0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "signer: oversized request", NULL, 0, KH_ERR_INPUT, "too large", build_huge_signer },
};

static int
parse_signer(const char *json, size_t len, kh_error *err)
{
	struct kh_signer_request req;
	int rc = kh_signer_request_parse(json, len, &req, err);

	assert_int_equal(req.kind, KH_SIGNER_NONE);
	kh_signer_request_free(&req);
	return rc;
}

static void
t_signer_bad(void **state)
{
	run_bad(*state, parse_signer);
}

/* ------------------------------------------------------ signer: decoding */

/* The KEP's own examples, verbatim. */
static void
t_signer_kep_certificate_request(void **state)
{
	static const char json[] =
		"{\n  \"apiVersion\":\"external-signer.authentication.k8s.io/v1alpha1\",\n"
		"  \"kind\":\"CertificateRequest\",\n  \"configuration\":{\n    \"objectId\":\"2\",\n"
		"    \"pathExec\":\"/path/to/externalSigner\",\n    \"pathLib\":\"/path/to/library.so\",\n"
		"    \"pin\":\"123456\",\n    \"slotId\":\"0\"\n  }\n}\n";
	struct kh_signer_request req;
	kh_error err;

	(void)state;
	assert_int_equal(kh_signer_request_parse(json, sizeof(json) - 1, &req, &err), 0);
	assert_int_equal(req.kind, KH_SIGNER_CERTIFICATE);
	assert_string_equal(req.config.path_lib, "/path/to/library.so");
	assert_string_equal(req.config.slot_id, "0");
	assert_string_equal(req.config.object_id, "2");
	assert_true(req.config.pin_given);
	assert_int_equal(req.digest_len, 0);
	kh_signer_request_free(&req);
}

static void
t_signer_kep_sign_request(void **state)
{
	static const char json[] =
		"{\n  \"apiVersion\":\"external-signer.authentication.k8s.io/v1alpha1\",\n"
		"  \"kind\":\"SignRequest\",\n  \"digest\":\"TqRUvJjLvlp3g9B3elpfzfgrSbukXBP5txkBLIkCSs4=\",\n"
		"  \"configuration\":{\n    \"objectId\":\"2\",\n    \"pathExec\":\"/path/to/externalSigner\",\n"
		"    \"pathLib\":\"/path/to/library.so\",\n    \"pin\":\"123456\",\n    \"slotId\":\"0\"\n    },\n"
		"  \"signerOptsType\":\"*rsa.PSSOptions\",\n"
		"  \"signerOpts\":\"{\\\"SaltLength\\\":-1,\\\"Hash\\\":5}\"\n}\n";
	static const unsigned char want[] = {
		0x4e, 0xa4, 0x54, 0xbc, 0x98, 0xcb, 0xbe, 0x5a, 0x77, 0x83, 0xd0, 0x77,
		0x7a, 0x5a, 0x5f, 0xcd, 0xf8, 0x2b, 0x49, 0xbb, 0xa4, 0x5c, 0x13, 0xf9,
		0xb7, 0x19, 0x01, 0x2c, 0x89, 0x02, 0x4a, 0xce,
	};
	struct kh_signer_request req;
	kh_error err;

	(void)state;
	assert_int_equal(kh_signer_request_parse(json, sizeof(json) - 1, &req, &err), 0);
	assert_int_equal(req.kind, KH_SIGNER_SIGN);
	assert_int_equal(req.digest_len, 32);
	assert_memory_equal(req.digest, want, 32);
	assert_int_equal(req.opts.scheme, KH_SIGN_PSS);
	assert_int_equal(req.opts.hash, KH_GO_SHA256);
	assert_int_equal(req.opts.salt_len, KH_PSS_SALT_EQUALS_HASH);
	assert_true(req.config.pin_given);
	kh_signer_request_free(&req);
}

struct sign_ok {
	const char *name;
	const char *json;
	enum kh_signer_kind kind;
	enum kh_sign_scheme scheme;
	int hash;
	int salt;
	size_t digest_len;
};

#define D48 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define D64 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="

static const struct sign_ok signer_ok[] = {
	{ "signer ok: crypto.Hash as string (prototype client-go)",
	  "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D48 "\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":\"6\"}",
	  KH_SIGNER_SIGN, KH_SIGN_HASH, KH_GO_SHA384, 0, 48 },
	{ "signer ok: crypto.Hash embedded",
	  "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D64 "\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":7}",
	  KH_SIGNER_SIGN, KH_SIGN_HASH, KH_GO_SHA512, 0, 64 },
	{ "signer ok: PSS embedded object, auto salt",
	  "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D32 "\",\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":{\"SaltLength\":0,\"Hash\":5}}",
	  KH_SIGNER_SIGN, KH_SIGN_PSS, KH_GO_SHA256, 0, 32 },
	{ "signer ok: PSS explicit salt 32, type without star",
	  "{" SA ",\"kind\":\"SignRequest\",\"digest\":\"" D64 "\",\"signerOptsType\":\"rsa.PSSOptions\",\"signerOpts\":\"{\\\"Hash\\\":7,\\\"SaltLength\\\":32}\"}",
	  KH_SIGNER_SIGN, KH_SIGN_PSS, KH_GO_SHA512, 32, 64 },
	{ "signer ok: prototype kind Sign, no configuration",
	  "{" SA ",\"kind\":\"Sign\",\"digest\":\"" D32 "\",\"signerOptsType\":\"crypto.Hash\",\"signerOpts\":\"5\"}",
	  KH_SIGNER_SIGN, KH_SIGN_HASH, KH_GO_SHA256, 0, 32 },
	{ "signer ok: prototype kind Certificate",
	  "{" SA ",\"kind\":\"Certificate\",\"configuration\":{\"pathExec\":\"/x\"}}",
	  KH_SIGNER_CERTIFICATE, 0, 0, 0, 0 },
	{ "signer ok: unknown configuration keys of any type",
	  "{" SA ",\"kind\":\"CertificateRequest\",\"configuration\":{\"vendor\":{\"a\":[1]},\"n\":5,\"pathExec\":null},\"future\":true}",
	  KH_SIGNER_CERTIFICATE, 0, 0, 0, 0 },
	{ "signer ok: CertificateRequest ignores a digest",
	  "{" SA ",\"kind\":\"CertificateRequest\",\"digest\":5}",
	  KH_SIGNER_CERTIFICATE, 0, 0, 0, 0 },
};

static void
t_signer_ok(void **state)
{
	const struct sign_ok *c = *state;
	struct kh_signer_request req;
	kh_error err;

	kh_error_clear(&err);
	if (kh_signer_request_parse(c->json, strlen(c->json), &req, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(req.kind, c->kind);
	assert_false(req.config.pin_given);
	if (c->kind == KH_SIGNER_SIGN) {
		assert_int_equal(req.opts.scheme, c->scheme);
		assert_int_equal(req.opts.hash, c->hash);
		assert_int_equal(req.opts.salt_len, c->salt);
		assert_int_equal(req.digest_len, c->digest_len);
	}
	kh_signer_request_free(&req);
}

/* jansson quotes the offending token; a PIN must never reach the message. */
static void
t_signer_error_hides_input(void **state)
{
	static const char json[] =
		"{" SA ",\"kind\":\"CertificateRequest\",\"configuration\":{\"pin\":4242secret}}";
	struct kh_signer_request req;
	kh_error err;

	(void)state;
	assert_int_equal(kh_signer_request_parse(json, sizeof(json) - 1, &req, &err), -1);
	assert_null(strstr(err.msg, "secret"));
	assert_null(strstr(err.msg, "4242"));
	assert_non_null(strstr(err.msg, "line 1"));
}

/* ------------------------------------------------------ signer: encoding */

static void
check_signer_response(const char *kind, const char *field,
                      int (*enc)(const unsigned char *, size_t, char **, size_t *, kh_error *))
{
	static const unsigned char data[] = { 0x30, 0x82, 0x00, 0xff, 0xfe, 0x01, 0x02 };
	char *out;
	size_t len, n;
	kh_error err;
	json_t *root;
	unsigned char *back;

	assert_int_equal(enc(data, sizeof(data), &out, &len, &err), 0);
	assert_int_equal(out[len - 1], '\n');
	assert_ptr_equal(strchr(out, '\n'), out + len - 1);
	root = json_loadb(out, len, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(root);
	assert_int_equal(json_object_size(root), 3);
	assert_string_equal(json_string_value(json_object_get(root, "apiVersion")),
	                    "external-signer.authentication.k8s.io/v1alpha1");
	assert_string_equal(json_string_value(json_object_get(root, "kind")), kind);
	assert_string_equal(json_string_value(json_object_get(root, field)), "MIIA//4BAg==");
	assert_int_equal(kh_base64_decode(json_string_value(json_object_get(root, field)),
	                                  json_string_length(json_object_get(root, field)),
	                                  64, &back, &n, &err), 0);
	assert_int_equal(n, sizeof(data));
	assert_memory_equal(back, data, n);
	free(back);
	json_decref(root);
	free(out);
	assert_int_equal(enc(NULL, 0, &out, &len, &err), -1);
	assert_null(out);
}

static void
t_signer_certificate_response(void **state)
{
	(void)state;
	check_signer_response("CertificateResponse", "certificate", kh_signer_certificate_response);
}

static void
t_signer_sign_response(void **state)
{
	(void)state;
	check_signer_response("SignResponse", "signature", kh_signer_sign_response);
}

int
main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(t_signer_kep_certificate_request),
		cmocka_unit_test(t_signer_kep_sign_request),
		cmocka_unit_test(t_signer_error_hides_input),
		cmocka_unit_test(t_signer_certificate_response),
		cmocka_unit_test(t_signer_sign_response),
	};
	static const struct row_table tables[] = {
		{ signer_bad, sizeof(signer_bad) / sizeof(signer_bad[0]), sizeof(signer_bad[0]), t_signer_bad },
		{ signer_ok, sizeof(signer_ok) / sizeof(signer_ok[0]), sizeof(signer_ok[0]), t_signer_ok },
	};

	return run_tables("signer_proto", fixed, sizeof(fixed) / sizeof(fixed[0]),
			  tables, sizeof(tables) / sizeof(tables[0]));
}
