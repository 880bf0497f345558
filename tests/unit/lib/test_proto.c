/*
 * test_proto — ExecCredential and external-signer codecs.
 *
 * Fixtures in tests/unit/lib/data/proto were captured from the real clients on
 * this machine (kubectl 1.27/1.30/1.33 with and without provideClusterInfo,
 * the Python kubernetes client). Malformed inputs are tables: every row is
 * its own TAP line.
 */
#include "config.h"

#include <regex.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/crypto.h>

#include "lib/kh_mem.h"
#include "lib/kh_base64.h"
#include "lib/kh_exec_proto.h"
#include "lib/kh_signer_proto.h"

#ifndef KH_TEST_DATADIR
#define KH_TEST_DATADIR "tests/unit/lib/data/proto"
#endif

/* ------------------------------------------------------------ helpers */

static char *
read_fixture(const char *name, size_t *len)
{
	char path[1024];
	FILE *f;
	char *buf;
	long n;

	assert_true((size_t)snprintf(path, sizeof(path), "%s/%s", KH_TEST_DATADIR, name) < sizeof(path));
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* A string of n copies of c, NUL-terminated. */
static char *
repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

static char *
fmt(const char *f, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, f);
	assert_true(vasprintf(&s, f, ap) >= 0);
	va_end(ap);
	return s;
}

static void
assert_matches(const char *s, const char *ere)
{
	regex_t re;

	assert_int_equal(regcomp(&re, ere, REG_EXTENDED | REG_NOSUB), 0);
	if (regexec(&re, s, 0, NULL, 0) != 0)
		fail_msg("'%s' does not match /%s/", s, ere);
	regfree(&re);
}

/* ---------------------------------------------- malformed-input tables */

struct bad_case {
	const char *name;
	const char *json;    /* NULL: built by `build` */
	size_t len;          /* 0: strlen(json) */
	enum kh_errcode code;
	const char *needle;  /* must appear in the message */
	char *(*build)(size_t *len);
};

#define V1 "\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\""
#define SA "\"apiVersion\":\"external-signer.authentication.k8s.io/v1alpha1\""
/* 32 zero bytes, canonical base64 */
#define D32 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
#define PSS5 "\"signerOptsType\":\"*rsa.PSSOptions\",\"signerOpts\":\"{\\\"SaltLength\\\":-1,\\\"Hash\\\":5}\""

static char *
build_deep(size_t *len)
{
	size_t depth = 5000, i;
	char *head = fmt("{" V1 ",\"spec\":{\"cluster\":{\"config\":");
	size_t hl = strlen(head);
	char *s = malloc(hl + 2 * depth + 8);

	assert_non_null(s);
	memcpy(s, head, hl);
	for (i = 0; i < depth; i++)
		s[hl + i] = '[';
	for (i = 0; i < depth; i++)
		s[hl + depth + i] = ']';
	strcpy(s + hl + 2 * depth, "}}}");
	free(head);
	*len = strlen(s);
	return s;
}

/* 8 MB of certificate-authority-data: refused by size, never parsed. */
static char *
build_huge_exec(size_t *len)
{
	size_t n = 8u * 1024 * 1024;
	char *ca = repeat('A', n);
	char *s = fmt("{" V1 ",\"spec\":{\"cluster\":{\"certificate-authority-data\":\"%s\"}}}", ca);

	free(ca);
	*len = strlen(s);
	return s;
}

static char *
build_huge_signer(size_t *len)
{
	char *pad = repeat('x', 70 * 1024);
	char *s = fmt("{" SA ",\"kind\":\"CertificateRequest\",\"configuration\":{\"x\":\"%s\"}}", pad);

	free(pad);
	*len = strlen(s);
	return s;
}

static const struct bad_case exec_bad[] = {
	{ "exec: empty input", "", 0, KH_ERR_INPUT, "empty", NULL },
	{ "exec: not JSON", "hello", 0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "exec: truncated", "{\"apiVersion\":", 0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "exec: array", "[]", 0, KH_ERR_INPUT, "must be a JSON object", NULL },
	{ "exec: bare number", "5", 0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "exec: bare string", "\"x\"", 0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "exec: array of object", "[{" V1 "}]", 0, KH_ERR_INPUT, "must be a JSON object", NULL },
	{ "exec: empty object", "{}", 0, KH_ERR_INPUT, "apiVersion is missing", NULL },
	{ "exec: v1alpha1 refused",
	  "{\"apiVersion\":\"client.authentication.k8s.io/v1alpha1\",\"kind\":\"ExecCredential\",\"spec\":{}}",
	  0, KH_ERR_INPUT,
	  "unsupported apiVersion 'client.authentication.k8s.io/v1alpha1'; kubehsm speaks client.authentication.k8s.io/v1 and v1beta1",
	  NULL },
	{ "exec: apiVersion upper case", "{\"apiVersion\":\"client.authentication.k8s.io/V1\",\"kind\":\"ExecCredential\",\"spec\":{}}",
	  0, KH_ERR_INPUT, "unsupported apiVersion", NULL },
	{ "exec: apiVersion trailing space", "{\"apiVersion\":\"client.authentication.k8s.io/v1 \",\"kind\":\"ExecCredential\",\"spec\":{}}",
	  0, KH_ERR_INPUT, "unsupported apiVersion", NULL },
	{ "exec: apiVersion empty", "{\"apiVersion\":\"\",\"kind\":\"ExecCredential\",\"spec\":{}}",
	  0, KH_ERR_INPUT, "unsupported apiVersion ''", NULL },
	{ "exec: apiVersion number", "{\"apiVersion\":1,\"kind\":\"ExecCredential\",\"spec\":{}}",
	  0, KH_ERR_INPUT, "apiVersion must be a string", NULL },
	{ "exec: apiVersion null", "{\"apiVersion\":null,\"kind\":\"ExecCredential\",\"spec\":{}}",
	  0, KH_ERR_INPUT, "apiVersion must be a string, not null", NULL },
	{ "exec: kind missing", "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"spec\":{}}",
	  0, KH_ERR_INPUT, "kind is missing", NULL },
	{ "exec: wrong kind", "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"Config\",\"spec\":{}}",
	  0, KH_ERR_INPUT, "kind must be ExecCredential", NULL },
	{ "exec: kind is a number", "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":7,\"spec\":{}}",
	  0, KH_ERR_INPUT, "kind must be a string", NULL },
	{ "exec: spec missing", "{" V1 "}", 0, KH_ERR_INPUT, "spec is missing", NULL },
	{ "exec: spec array", "{" V1 ",\"spec\":[]}", 0, KH_ERR_INPUT, "spec must be an object", NULL },
	{ "exec: spec null", "{" V1 ",\"spec\":null}", 0, KH_ERR_INPUT, "spec must be an object", NULL },
	{ "exec: interactive as string", "{" V1 ",\"spec\":{\"interactive\":\"false\"}}",
	  0, KH_ERR_INPUT, "spec.interactive must be true or false", NULL },
	{ "exec: interactive null", "{" V1 ",\"spec\":{\"interactive\":null}}",
	  0, KH_ERR_INPUT, "spec.interactive must be true or false", NULL },
	{ "exec: interactive 0", "{" V1 ",\"spec\":{\"interactive\":0}}",
	  0, KH_ERR_INPUT, "spec.interactive", NULL },
	{ "exec: duplicate apiVersion",
	  "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"spec\":{}}",
	  0, KH_ERR_INPUT, "duplicate", NULL },
	{ "exec: duplicate key in spec", "{" V1 ",\"spec\":{\"interactive\":false,\"interactive\":true}}",
	  0, KH_ERR_INPUT, "duplicate", NULL },
	{ "exec: duplicate key in config",
	  "{" V1 ",\"spec\":{\"cluster\":{\"config\":{\"issuer\":\"a\",\"issuer\":\"b\"}}}}",
	  0, KH_ERR_INPUT, "duplicate", NULL },
	{ "exec: trailing garbage", "{" V1 ",\"spec\":{}} x", 0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "exec: two documents", "{" V1 ",\"spec\":{}}{}", 0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "exec: \\u0000 in kind", "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\\u0000\",\"spec\":{}}",
	  0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "exec: \\u0000 in apiVersion", "{\"apiVersion\":\"client.authentication.k8s.io/v1\\u0000x\",\"kind\":\"ExecCredential\",\"spec\":{}}",
	  0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "exec: raw NUL byte", "{" V1 ",\"spec\":{}}\0", sizeof("{" V1 ",\"spec\":{}}"), KH_ERR_INPUT, "not valid JSON", NULL },
	{ "exec: raw NUL inside string", "{\"apiVersion\":\"client.authentication.k8s.io/v1\0\",\"kind\":\"ExecCredential\",\"spec\":{}}",
	  sizeof("{\"apiVersion\":\"client.authentication.k8s.io/v1\0\",\"kind\":\"ExecCredential\",\"spec\":{}}") - 1,
	  KH_ERR_INPUT, "not valid JSON", NULL },
	{ "exec: invalid UTF-8", "{" V1 ",\"spec\":{\"cluster\":{\"server\":\"https://\xff\xfe\"}}}",
	  0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "exec: overlong UTF-8", "{" V1 ",\"spec\":{\"cluster\":{\"server\":\"\xc0\xaf\"}}}",
	  0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "exec: lone surrogate escape", "{" V1 ",\"spec\":{\"cluster\":{\"server\":\"\\ud800\"}}}",
	  0, KH_ERR_INPUT, "not valid JSON", NULL },
	{ "exec: deep nesting", NULL, 0, KH_ERR_INPUT, "not valid JSON", build_deep },
	{ "exec: 8 MB input", NULL, 0, KH_ERR_INPUT, "too large", build_huge_exec },
	{ "exec: cluster is a string", "{" V1 ",\"spec\":{\"cluster\":\"x\"}}",
	  0, KH_ERR_INPUT, "spec.cluster must be an object", NULL },
	{ "exec: server is a number", "{" V1 ",\"spec\":{\"cluster\":{\"server\":5}}}",
	  0, KH_ERR_INPUT, "spec.cluster.server must be a string", NULL },
	{ "exec: CA data is an array", "{" V1 ",\"spec\":{\"cluster\":{\"certificate-authority-data\":[]}}}",
	  0, KH_ERR_INPUT, "certificate-authority-data must be a string", NULL },
	{ "exec: insecure-skip-tls-verify as string", "{" V1 ",\"spec\":{\"cluster\":{\"insecure-skip-tls-verify\":\"true\"}}}",
	  0, KH_ERR_INPUT, "insecure-skip-tls-verify must be true or false", NULL },
	{ "exec: disable-compression as number", "{" V1 ",\"spec\":{\"cluster\":{\"disable-compression\":1}}}",
	  0, KH_ERR_INPUT, "disable-compression must be true or false", NULL },
	{ "exec: proxy-url object", "{" V1 ",\"spec\":{\"cluster\":{\"proxy-url\":{}}}}",
	  0, KH_ERR_INPUT, "proxy-url must be a string", NULL },
	{ "exec: tls-server-name bool", "{" V1 ",\"spec\":{\"cluster\":{\"tls-server-name\":true}}}",
	  0, KH_ERR_INPUT, "tls-server-name must be a string", NULL },
	{ "exec: config is a string", "{" V1 ",\"spec\":{\"cluster\":{\"config\":\"issuer=a\"}}}",
	  0, KH_ERR_INPUT, "must be a map", NULL },
	{ "exec: config is an array", "{" V1 ",\"spec\":{\"cluster\":{\"config\":[\"a\"]}}}",
	  0, KH_ERR_INPUT, "must be a map", NULL },
	{ "exec: issuer is a number", "{" V1 ",\"spec\":{\"cluster\":{\"config\":{\"issuer\":5}}}}",
	  0, KH_ERR_INPUT, "spec.cluster.config.issuer must be a string", NULL },
	{ "exec: issuer empty", "{" V1 ",\"spec\":{\"cluster\":{\"config\":{\"issuer\":\"\"}}}}",
	  0, KH_ERR_INPUT, "issuer in the kubeconfig extension", NULL },
	{ "exec: issuer with slash", "{" V1 ",\"spec\":{\"cluster\":{\"config\":{\"issuer\":\"../etc\"}}}}",
	  0, KH_ERR_INPUT, "1-32 characters", NULL },
	{ "exec: issuer with colon", "{" V1 ",\"spec\":{\"cluster\":{\"config\":{\"issuer\":\"a:b\"}}}}",
	  0, KH_ERR_INPUT, "1-32 characters", NULL },
	{ "exec: issuer non-ASCII", "{" V1 ",\"spec\":{\"cluster\":{\"config\":{\"issuer\":\"pr\xc3\xb6" "d\"}}}}",
	  0, KH_ERR_INPUT, "1-32 characters", NULL },
	{ "exec: issuer 33 characters", "{" V1 ",\"spec\":{\"cluster\":{\"config\":{\"issuer\":\"abcdefghijabcdefghijabcdefghijabc\"}}}}",
	  0, KH_ERR_INPUT, "1-32 characters", NULL },
	{ "exec: issuer null", "{" V1 ",\"spec\":{\"cluster\":{\"config\":{\"issuer\":null}}}}",
	  0, KH_ERR_INPUT, "issuer must be a string", NULL },
};

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

static void
run_bad(const struct bad_case *c, int (*parse)(const char *, size_t, kh_error *))
{
	kh_error err;
	char *built = NULL;
	const char *json = c->json;
	size_t len = c->len;

	if (c->build != NULL)
		json = built = c->build(&len);
	else if (len == 0)
		len = strlen(json);
	kh_error_clear(&err);
	assert_int_equal(parse(json, len, &err), -1);
	if (err.code != c->code)
		fail_msg("code %s, want %s (%s)", kh_errcode_name(err.code),
		         kh_errcode_name(c->code), err.msg);
	if (strstr(err.msg, c->needle) == NULL)
		fail_msg("message '%s' lacks '%s'", err.msg, c->needle);
	assert_null(strchr(err.msg, '\n'));
	free(built);
}

static int
parse_exec(const char *json, size_t len, kh_error *err)
{
	struct kh_exec_info info;
	int rc = kh_exec_info_parse(json, len, &info, err);

	/* A failed parse leaves nothing to free. */
	assert_null(info.cluster.server);
	assert_int_equal(info.api, KH_EXEC_API_NONE);
	kh_exec_info_free(&info);
	return rc;
}

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
t_exec_bad(void **state)
{
	run_bad(*state, parse_exec);
}

static void
t_signer_bad(void **state)
{
	run_bad(*state, parse_signer);
}

/* ------------------------------------------------------- exec: decoding */

static void
t_exec_kubectl_v1_cluster(void **state)
{
	struct kh_exec_info info;
	kh_error err;
	size_t len;
	char *json = read_fixture("kubectl-1.33-v1-cluster.json", &len);

	(void)state;
	assert_int_equal(kh_exec_info_parse(json, len, &info, &err), 0);
	assert_int_equal(info.api, KH_EXEC_API_V1);
	assert_false(info.interactive);
	assert_true(info.has_cluster);
	assert_string_equal(info.cluster.server, "https://127.0.0.1:1");
	assert_string_equal(info.cluster.tls_server_name, "api.example");
	assert_string_equal(info.cluster.proxy_url, "http://127.0.0.1:3128");
	assert_non_null(info.cluster.certificate_authority_data);
	assert_int_equal(strncmp(info.cluster.certificate_authority_data, "LS0tLS1CRUdJTi", 14), 0);
	assert_int_equal(info.cluster.certificate_authority_data_len,
	                 strlen(info.cluster.certificate_authority_data));
	assert_false(info.cluster.insecure_skip_tls_verify);
	assert_false(info.cluster.disable_compression);
	assert_string_equal(info.cluster.issuer, "prod");
	kh_exec_info_free(&info);
	assert_null(info.cluster.server);
	free(json);
}

static void
t_exec_kubectl_v1beta1_cluster(void **state)
{
	struct kh_exec_info info;
	kh_error err;
	size_t len;
	char *json = read_fixture("kubectl-1.27-v1beta1-cluster.json", &len);

	(void)state;
	assert_int_equal(kh_exec_info_parse(json, len, &info, &err), 0);
	assert_int_equal(info.api, KH_EXEC_API_V1BETA1);
	assert_true(info.has_cluster);
	assert_string_equal(info.cluster.issuer, "prod");
	kh_exec_info_free(&info);
	free(json);
}

static void
t_exec_kubectl_plain(void **state)
{
	struct kh_exec_info info;
	kh_error err;
	size_t len;
	char *json = read_fixture("kubectl-1.30-v1-plain.json", &len);

	(void)state;
	/* client-go's value ends with a newline: trailing whitespace is fine. */
	assert_int_equal(json[len - 1], '\n');
	assert_int_equal(kh_exec_info_parse(json, len, &info, &err), 0);
	assert_int_equal(info.api, KH_EXEC_API_V1);
	assert_false(info.has_cluster);
	assert_null(info.cluster.issuer);
	kh_exec_info_free(&info);
	free(json);
}

static void
t_exec_python(void **state)
{
	struct kh_exec_info info;
	kh_error err;
	size_t len;
	char *json = read_fixture("python-v1beta1.json", &len);

	(void)state;
	assert_int_equal(kh_exec_info_parse(json, len, &info, &err), 0);
	assert_int_equal(info.api, KH_EXEC_API_V1BETA1);
	assert_false(info.interactive);
	assert_false(info.has_cluster);
	kh_exec_info_free(&info);
	free(json);
}

static void
t_exec_every_field(void **state)
{
	static const char json[] =
		"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
		"\"spec\":{\"interactive\":true,\"response\":{\"header\":{}},\"future\":[1],"
		"\"cluster\":{\"server\":\"https://k8s:6443\",\"certificate-authority-data\":\"QUJD\","
		"\"insecure-skip-tls-verify\":true,\"proxy-url\":\"socks5://p:1080\","
		"\"tls-server-name\":\"k8s.internal\",\"disable-compression\":true,\"newfield\":7,"
		"\"config\":{\"issuer\":\"Host_1.a-b\",\"other\":{\"deep\":[null]}}}},\"extra\":1}";
	struct kh_exec_info info;
	kh_error err;

	(void)state;
	assert_int_equal(kh_exec_info_parse(json, sizeof(json) - 1, &info, &err), 0);
	assert_int_equal(info.api, KH_EXEC_API_V1);
	assert_true(info.interactive);
	assert_string_equal(info.cluster.server, "https://k8s:6443");
	assert_string_equal(info.cluster.certificate_authority_data, "QUJD");
	assert_int_equal(info.cluster.certificate_authority_data_len, 4);
	assert_true(info.cluster.insecure_skip_tls_verify);
	assert_string_equal(info.cluster.proxy_url, "socks5://p:1080");
	assert_string_equal(info.cluster.tls_server_name, "k8s.internal");
	assert_true(info.cluster.disable_compression);
	assert_string_equal(info.cluster.issuer, "Host_1.a-b");
	kh_exec_info_free(&info);
}

static void
t_exec_v1beta1_no_interactive(void **state)
{
	static const char json[] =
		"{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"spec\":{}}";
	struct kh_exec_info info;
	kh_error err;

	(void)state;
	assert_int_equal(kh_exec_info_parse(json, sizeof(json) - 1, &info, &err), 0);
	assert_int_equal(info.api, KH_EXEC_API_V1BETA1);
	assert_false(info.interactive);
	kh_exec_info_free(&info);
}

static void
t_exec_config_without_issuer(void **state)
{
	static const char a[] = "{" V1 ",\"spec\":{\"cluster\":{\"config\":null}}}";
	static const char b[] = "{" V1 ",\"spec\":{\"cluster\":{\"config\":{\"someone-else\":5}}}}";
	static const char c[] = "{" V1 ",\"spec\":{\"cluster\":{\"config\":{\"issuer\":\"abcdefghijabcdefghijabcdefghijab\"}}}}";
	struct kh_exec_info info;
	kh_error err;

	(void)state;
	assert_int_equal(kh_exec_info_parse(a, sizeof(a) - 1, &info, &err), 0);
	assert_true(info.has_cluster);
	assert_null(info.cluster.issuer);
	kh_exec_info_free(&info);
	assert_int_equal(kh_exec_info_parse(b, sizeof(b) - 1, &info, &err), 0);
	assert_null(info.cluster.issuer);
	kh_exec_info_free(&info);
	/* 32 characters is the longest issuer id. */
	assert_int_equal(kh_exec_info_parse(c, sizeof(c) - 1, &info, &err), 0);
	assert_int_equal(strlen(info.cluster.issuer), 32);
	kh_exec_info_free(&info);
}

/* ~1 MB of CA data parses in linear time (a quadratic parser takes minutes). */
static void
t_exec_large_ca(void **state)
{
	size_t n = KH_EXEC_INFO_MAX - 200;
	char *ca = repeat('Q', n);
	char *json = fmt("{" V1 ",\"spec\":{\"cluster\":{\"certificate-authority-data\":\"%s\"}}}", ca);
	struct kh_exec_info info;
	kh_error err;
	clock_t t0 = clock();

	(void)state;
	assert_true(strlen(json) <= KH_EXEC_INFO_MAX);
	assert_int_equal(kh_exec_info_parse(json, strlen(json), &info, &err), 0);
	assert_int_equal(info.cluster.certificate_authority_data_len, n);
	assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 2.0);
	kh_exec_info_free(&info);
	free(json);
	free(ca);
}

static void
t_exec_env_unset(void **state)
{
	struct kh_exec_info info;
	kh_error err;

	(void)state;
	assert_int_equal(kh_exec_info_from_env(NULL, KH_EXEC_API_NONE, &info, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	assert_non_null(strstr(err.msg, "KUBERNETES_EXEC_INFO is not set"));
	assert_int_equal(kh_exec_info_from_env("", KH_EXEC_API_NONE, &info, &err), -1);
	assert_int_equal(kh_exec_info_from_env(NULL, KH_EXEC_API_V1BETA1, &info, &err), 0);
	assert_int_equal(info.api, KH_EXEC_API_V1BETA1);
	assert_false(info.interactive);
	assert_false(info.has_cluster);
	kh_exec_info_free(&info);
	assert_int_equal(kh_exec_info_from_env("", KH_EXEC_API_V1, &info, &err), 0);
	assert_int_equal(info.api, KH_EXEC_API_V1);
	kh_exec_info_free(&info);
}

static void
t_exec_env_set(void **state)
{
	struct kh_exec_info info;
	kh_error err;
	size_t len;
	char *json = read_fixture("kubectl-1.30-v1-plain.json", &len);
	char *huge;

	(void)state;
	/* A set variable is parsed strictly; --api-version, when given, must agree. */
	assert_int_equal(kh_exec_info_from_env(json, KH_EXEC_API_NONE, &info, &err), 0);
	assert_int_equal(info.api, KH_EXEC_API_V1);
	kh_exec_info_free(&info);
	assert_int_equal(kh_exec_info_from_env(json, KH_EXEC_API_V1, &info, &err), 0);
	assert_int_equal(info.api, KH_EXEC_API_V1);
	kh_exec_info_free(&info);
	assert_int_equal(kh_exec_info_from_env("{}", KH_EXEC_API_V1, &info, &err), -1);
	huge = repeat('{', 8u * 1024 * 1024);
	assert_int_equal(kh_exec_info_from_env(huge, KH_EXEC_API_NONE, &info, &err), -1);
	assert_non_null(strstr(err.msg, "too large"));
	free(huge);
	free(json);
}

/*
 * KUBERNETES_EXEC_INFO and --api-version naming different apiVersions (an
 * entry edited by half) is one error naming both, never a silent pick.
 */
static void
t_exec_env_api_disagree(void **state)
{
	static const char v1beta1[] =
		"{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
		"\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false,"
		"\"cluster\":{\"server\":\"https://127.0.0.1:6443\","
		"\"config\":{\"issuer\":\"prod\"}}}}";
	struct kh_exec_info info;
	kh_error err;
	size_t len;
	char *json = read_fixture("kubectl-1.30-v1-plain.json", &len);

	(void)state;
	assert_int_equal(kh_exec_info_from_env(json, KH_EXEC_API_V1BETA1, &info, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	assert_string_equal(err.msg,
		"KUBERNETES_EXEC_INFO asks for client.authentication.k8s.io/v1 but kubehsm exec "
		"was given --api-version client.authentication.k8s.io/v1beta1: make the apiVersion "
		"of the kubeconfig exec entry and its --api-version argument the same");
	assert_null(strchr(err.msg, '\n'));
	/* Refused with a parsed cluster: nothing is left to free or leak. */
	assert_int_equal(kh_exec_info_from_env(v1beta1, KH_EXEC_API_V1, &info, &err), -1);
	assert_non_null(strstr(err.msg, "asks for client.authentication.k8s.io/v1beta1 but"));
	assert_int_equal(info.api, KH_EXEC_API_NONE);
	assert_null(info.cluster.issuer);
	assert_null(info.cluster.server);
	assert_int_equal(kh_exec_info_from_env(v1beta1, KH_EXEC_API_V1BETA1, &info, &err), 0);
	assert_string_equal(info.cluster.issuer, "prod");
	kh_exec_info_free(&info);
	free(json);
}

static void
t_exec_api_names(void **state)
{
	(void)state;
	assert_string_equal(kh_exec_api_version(KH_EXEC_API_V1), "client.authentication.k8s.io/v1");
	assert_string_equal(kh_exec_api_version(KH_EXEC_API_V1BETA1), "client.authentication.k8s.io/v1beta1");
	assert_null(kh_exec_api_version(KH_EXEC_API_NONE));
	assert_int_equal(kh_exec_api_from_string("client.authentication.k8s.io/v1"), KH_EXEC_API_V1);
	assert_int_equal(kh_exec_api_from_string("client.authentication.k8s.io/v1beta1"), KH_EXEC_API_V1BETA1);
	assert_int_equal(kh_exec_api_from_string("client.authentication.k8s.io/v1alpha1"), KH_EXEC_API_NONE);
	assert_int_equal(kh_exec_api_from_string(NULL), KH_EXEC_API_NONE);
}

/* ------------------------------------------------------- exec: encoding */

static void
t_rfc3339(void **state)
{
	char buf[32];
	char small[20];
	kh_error err;

	(void)state;
	assert_int_equal(kh_format_rfc3339(0, buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
	assert_int_equal(kh_format_rfc3339(1795298811, buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "2026-11-21T22:06:51Z");
	assert_int_equal(kh_format_rfc3339(951782400, buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "2000-02-29T00:00:00Z");
	assert_int_equal(kh_format_rfc3339(253402300799, buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "9999-12-31T23:59:59Z");
	assert_int_equal(kh_format_rfc3339(253402300800, buf, sizeof(buf), &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	assert_int_equal(kh_format_rfc3339(-62167219201, buf, sizeof(buf), &err), -1);
	assert_int_equal(kh_format_rfc3339((time_t)INT64_MAX, buf, sizeof(buf), &err), -1);
	assert_int_equal(kh_format_rfc3339(0, small, sizeof(small), &err), -1);
	assert_int_equal(err.code, KH_ERR_INTERNAL);
}

/* The formatter's own calendar against glibc's gmtime_r: every day boundary
 * of leap and century years near the edges, and a stride through the whole
 * 0000-9999 range. */
static void
expect_like_gmtime(time_t t)
{
	char want[32], got[32];
	struct tm tm;
	kh_error err;

	assert_non_null(gmtime_r(&t, &tm));
	/* Not strftime: glibc's %Y does not pad years below 1000. */
	assert_int_equal(snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02dZ",
				  tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
				  tm.tm_hour, tm.tm_min, tm.tm_sec), 20);
	assert_int_equal(kh_format_rfc3339(t, got, sizeof(got), &err), 0);
	if (strcmp(want, got) != 0)
		fail_msg("time %lld: gmtime_r says %s, kh_format_rfc3339 %s",
			 (long long)t, want, got);
}

static void
t_rfc3339_calendar(void **state)
{
	static const long long edges[] = {
		-62167219200LL, 0, 68169600LL /* 1972-02-29 */, 951782399LL,
		951868800LL /* 2000-03-01 */, 4107542400LL /* 2100-03-01 */,
		-2203891200LL /* 1900-03-01 */, 253402300799LL,
	};
	long long t;
	size_t i;
	int d;

	(void)state;
	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		for (d = -3; d <= 3; d++) {
			t = edges[i] + d * 86400LL;
			if (t >= -62167219200LL && t <= 253402300799LL)
				expect_like_gmtime((time_t)t);
			if (t + 86399 >= -62167219200LL && t + 86399 <= 253402300799LL)
				expect_like_gmtime((time_t)(t + 86399));
		}
	for (t = -62167219200LL; t <= 253402300799LL; t += 86400LL * 37 + 3607)
		expect_like_gmtime((time_t)t);
}

static const char cert_pem[] =
	"-----BEGIN CERTIFICATE-----\nMIIBcert\n-----END CERTIFICATE-----\n"
	"-----BEGIN CERTIFICATE-----\nMIIBissuer\n-----END CERTIFICATE-----\n";
static const char key_pem[] =
	"-----BEGIN PRIVATE KEY-----\nKEYMATERIAL-SECRET-0123456789\n-----END PRIVATE KEY-----\n";

static void
check_exec_response(enum kh_exec_api api)
{
	char *out = NULL;
	size_t len = 0;
	kh_error err;
	json_t *root, *status;
	json_error_t jerr;

	assert_int_equal(kh_exec_response_encode(api, 1795298811, cert_pem, key_pem,
	                                         &out, &len, &err), 0);
	assert_int_equal(strlen(out), len);
	/* One compact line, newline-terminated. */
	assert_int_equal(out[len - 1], '\n');
	assert_ptr_equal(strchr(out, '\n'), out + len - 1);
	assert_null(strstr(out, ", "));
	assert_null(strstr(out, ": "));
	root = json_loadb(out, len, JSON_REJECT_DUPLICATES, &jerr);
	assert_non_null(root);
	assert_int_equal(json_object_size(root), 3);
	assert_string_equal(json_string_value(json_object_get(root, "apiVersion")),
	                    kh_exec_api_version(api));
	assert_string_equal(json_string_value(json_object_get(root, "kind")), "ExecCredential");
	status = json_object_get(root, "status");
	assert_true(json_is_object(status));
	assert_int_equal(json_object_size(status), 3);
	assert_string_equal(json_string_value(json_object_get(status, "clientCertificateData")), cert_pem);
	assert_string_equal(json_string_value(json_object_get(status, "clientKeyData")), key_pem);
	assert_matches(json_string_value(json_object_get(status, "expirationTimestamp")),
	               "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$");
	assert_string_equal(json_string_value(json_object_get(status, "expirationTimestamp")),
	                    "2026-11-21T22:06:51Z");
	/* apiVersion comes first, as client-go writes it. */
	assert_int_equal(strncmp(out, "{\"apiVersion\":", 14), 0);
	/* wipe jansson's copy of the key in this test's tree too */
	OPENSSL_cleanse((char *)json_string_value(json_object_get(status, "clientKeyData")),
	                strlen(key_pem));
	json_decref(root);
	kh_secure_strfree(out);
}

static void
t_exec_response_v1(void **state)
{
	(void)state;
	check_exec_response(KH_EXEC_API_V1);
}

static void
t_exec_response_v1beta1(void **state)
{
	(void)state;
	check_exec_response(KH_EXEC_API_V1BETA1);
}

/* Round trip: what we answer parses as what a client sent back would. */
static void
t_exec_roundtrip_version(void **state)
{
	struct kh_exec_info info;
	kh_error err;
	size_t len;
	char *json = read_fixture("python-v1beta1.json", &len);
	char *out;
	json_t *root;

	(void)state;
	assert_int_equal(kh_exec_info_parse(json, len, &info, &err), 0);
	assert_int_equal(kh_exec_response_encode(info.api, time(NULL) + 3600, cert_pem,
	                                         key_pem, &out, &len, &err), 0);
	root = json_loads(out, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(root, "apiVersion")),
	                    "client.authentication.k8s.io/v1beta1");
	OPENSSL_cleanse((char *)json_string_value(json_object_get(json_object_get(root, "status"),
	                "clientKeyData")), strlen(key_pem));
	json_decref(root);
	kh_secure_strfree(out);
	kh_exec_info_free(&info);
	free(json);
}

static void
t_exec_response_errors(void **state)
{
	char *out = (char *)"x";
	size_t len = 9;
	kh_error err;

	(void)state;
	assert_int_equal(kh_exec_response_encode(KH_EXEC_API_NONE, 0, cert_pem, key_pem, &out, &len, &err), -1);
	assert_null(out);
	assert_int_equal(len, 0);
	assert_int_equal(kh_exec_response_encode(KH_EXEC_API_V1, 0, NULL, key_pem, &out, &len, &err), -1);
	assert_int_equal(kh_exec_response_encode(KH_EXEC_API_V1, 0, cert_pem, "", &out, &len, &err), -1);
	assert_int_equal(kh_exec_response_encode(KH_EXEC_API_V1, 0, "\xff\xfe", key_pem, &out, &len, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	assert_int_equal(kh_exec_response_encode(KH_EXEC_API_V1, 0, cert_pem, "\xc3", &out, &len, &err), -1);
	assert_int_equal(kh_exec_response_encode(KH_EXEC_API_V1, 253402300800, cert_pem, key_pem, &out, &len, &err), -1);
	assert_null(out);
}

/*
 * Every block jansson frees while the answer is built is scanned for the
 * key: none may still hold it. (The test binary owns jansson's allocator;
 * the library never replaces it.)
 */
static size_t leaked_key_blocks;
static size_t jansson_frees;

static void *
scan_malloc(size_t n)
{
	/* zeroed so the scan in scan_free never reads uninitialised bytes */
	size_t *p = calloc(1, n + sizeof(size_t));

	if (p == NULL)
		return NULL;
	*p = n;
	return p + 1;
}

static void
scan_free(void *q)
{
	size_t *p;

	if (q == NULL)
		return;
	p = (size_t *)q - 1;
	jansson_frees++;
	if (memmem(q, *p, "KEYMATERIAL", 11) != NULL)
		leaked_key_blocks++;
	free(p);
}

static void
t_exec_response_no_key_residue(void **state)
{
	char *out;
	size_t len;
	kh_error err;

	(void)state;
	leaked_key_blocks = 0;
	jansson_frees = 0;
	assert_int_equal(kh_exec_response_encode(KH_EXEC_API_V1, 1795298811, cert_pem, key_pem,
	                                         &out, &len, &err), 0);
	assert_true(jansson_frees > 0);
	assert_int_equal(leaked_key_blocks, 0);
	assert_non_null(strstr(out, "KEYMATERIAL"));
	kh_secure_strfree(out);
}

/* The pre-rendered answer: served behind either apiVersion's prefix it is
 * exactly kh_exec_response_encode's output; rendering leaves no copy of the
 * key in memory jansson freed. */
static void
t_exec_answer_render(void **state)
{
	static const enum kh_exec_api apis[] = { KH_EXEC_API_V1, KH_EXEC_API_V1BETA1 };
	char *ans = NULL, *want = NULL, *cert = NULL, *key = NULL, served[1024];
	size_t len = 0, want_len, plen, i;
	kh_error err;

	(void)state;
	leaked_key_blocks = 0;
	assert_int_equal(kh_exec_answer_render(1795298811, cert_pem, key_pem, &ans, &len, &err), 0);
	assert_int_equal(leaked_key_blocks, 0);
	assert_int_equal(strlen(ans), len);
	assert_int_equal(kh_exec_answer_check(ans, len, 1795298811, &err), 0);
	for (i = 0; i < sizeof(apis) / sizeof(apis[0]); i++) {
		plen = strlen(kh_exec_answer_prefix(apis[i]));
		assert_true(plen + len < sizeof(served));
		memcpy(served, kh_exec_answer_prefix(apis[i]), plen);
		memcpy(served + plen, ans + 1, len - 1);
		assert_int_equal(kh_exec_response_encode(apis[i], 1795298811, cert_pem, key_pem,
		                                         &want, &want_len, &err), 0);
		assert_int_equal(plen + len - 1, want_len);
		assert_memory_equal(served, want, want_len);
		kh_secure_strfree(want);
	}
	/* Another expiry, a cut or a longer text: not this session's answer. */
	assert_int_equal(kh_exec_answer_check(ans, len, 1795298812, &err), -1);
	assert_int_equal(err.code, KH_ERR_REFUSED);
	assert_int_equal(kh_exec_answer_check(ans, len - 1, 1795298811, &err), -1);
	assert_int_equal(kh_exec_answer_check(ans, len + 1, 1795298811, &err), -1);
	assert_int_equal(kh_exec_answer_check(NULL, 0, 1795298811, &err), -1);
	assert_int_equal(kh_exec_answer_pems(ans, len, &cert, &key, &err), 0);
	assert_string_equal(cert, cert_pem);
	assert_string_equal(key, key_pem);
	free(cert);
	kh_secure_strfree(key);
	kh_secure_free(ans, len + 1);
}

/* What the reader would refuse is refused at login, with a reason. */
static void
t_exec_answer_render_refuses(void **state)
{
	char *ans = (char *)"x";
	size_t len = 7;
	kh_error err;

	(void)state;
	assert_int_equal(kh_exec_answer_render(0, "not PEM", key_pem, &ans, &len, &err), -1);
	assert_null(ans);
	assert_int_equal(len, 0);
	assert_int_equal(err.code, KH_ERR_INPUT);
	assert_non_null(strstr(err.msg, "PEM"));
	assert_int_equal(kh_exec_answer_render(0, cert_pem, "-----BEGIN X-----\r\nAB\r\n", &ans,
	                                       &len, &err), -1);
	assert_int_equal(kh_exec_answer_render(0, "-----BEGIN \"quoted\"", key_pem, &ans, &len,
	                                       &err), -1);
	assert_int_equal(kh_exec_answer_render(0, cert_pem, NULL, &ans, &len, &err), -1);
	assert_int_equal(kh_exec_answer_render(253402300800, cert_pem, key_pem, &ans, &len, &err), -1);
	assert_null(ans);
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

/* ---------------------------------------------------------------- base64 */

static void
t_base64_roundtrip(void **state)
{
	unsigned char in[64], *back;
	char *enc;
	size_t n, elen, blen;
	kh_error err;

	(void)state;
	for (n = 0; n < sizeof(in); n++)
		in[n] = (unsigned char)(n * 37 + 11);
	for (n = 0; n <= sizeof(in); n++) {
		assert_int_equal(kh_base64_encode(in, n, &enc, &elen, &err), 0);
		assert_int_equal(elen, (n + 2) / 3 * 4);
		assert_int_equal(strlen(enc), elen);
		assert_int_equal(kh_base64_decode(enc, elen, 64, &back, &blen, &err), 0);
		assert_int_equal(blen, n);
		if (n > 0)
			assert_memory_equal(back, in, n);
		free(back);
		free(enc);
	}
}

static void
t_base64_strict(void **state)
{
	static const char *const bad[] = {
		"=", "==", "===", "====", "A", "AA", "AAA", "A===", "QQ=A", "Q=Q=",
		"QQ==QQ==", "QR==", "QUI=QUI=", " QQ==", "QQ== ", "QQ==\n", "Q\tQ=",
		"QUJD\r\n", "QU\x80=", "QUJ.",
	};
	unsigned char *out;
	size_t i, n;
	kh_error err;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (kh_base64_decode(bad[i], strlen(bad[i]), 64, &out, &n, &err) != -1)
			fail_msg("'%s' was accepted", bad[i]);
		assert_int_equal(err.code, KH_ERR_INPUT);
		assert_null(out);
	}
	/* The cap applies before decoding. */
	assert_int_equal(kh_base64_decode("QUJD", 4, 2, &out, &n, &err), -1);
	assert_non_null(strstr(err.msg, "more than 2"));
	assert_int_equal(kh_base64_decode("QUJD", 4, 3, &out, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(out, "ABC", 3);
	free(out);
	assert_int_equal(kh_base64_decode("QQ==", 4, 3, &out, &n, &err), 0);
	assert_int_equal(n, 1);
	free(out);
	assert_int_equal(kh_base64_decode("QUI=", 4, 3, &out, &n, &err), 0);
	assert_int_equal(n, 2);
	free(out);
}

/* ------------------------------------------------------------------ main */

#define N_EXEC_BAD (sizeof(exec_bad) / sizeof(exec_bad[0]))
#define N_SIGNER_BAD (sizeof(signer_bad) / sizeof(signer_bad[0]))
#define N_SIGNER_OK (sizeof(signer_ok) / sizeof(signer_ok[0]))

int
main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(t_exec_kubectl_v1_cluster),
		cmocka_unit_test(t_exec_kubectl_v1beta1_cluster),
		cmocka_unit_test(t_exec_kubectl_plain),
		cmocka_unit_test(t_exec_python),
		cmocka_unit_test(t_exec_every_field),
		cmocka_unit_test(t_exec_v1beta1_no_interactive),
		cmocka_unit_test(t_exec_config_without_issuer),
		cmocka_unit_test(t_exec_large_ca),
		cmocka_unit_test(t_exec_env_unset),
		cmocka_unit_test(t_exec_env_set),
		cmocka_unit_test(t_exec_env_api_disagree),
		cmocka_unit_test(t_exec_api_names),
		cmocka_unit_test(t_rfc3339),
		cmocka_unit_test(t_rfc3339_calendar),
		cmocka_unit_test(t_exec_response_v1),
		cmocka_unit_test(t_exec_response_v1beta1),
		cmocka_unit_test(t_exec_roundtrip_version),
		cmocka_unit_test(t_exec_response_errors),
		cmocka_unit_test(t_exec_response_no_key_residue),
		cmocka_unit_test(t_exec_answer_render),
		cmocka_unit_test(t_exec_answer_render_refuses),
		cmocka_unit_test(t_signer_kep_certificate_request),
		cmocka_unit_test(t_signer_kep_sign_request),
		cmocka_unit_test(t_signer_error_hides_input),
		cmocka_unit_test(t_signer_certificate_response),
		cmocka_unit_test(t_signer_sign_response),
		cmocka_unit_test(t_base64_roundtrip),
		cmocka_unit_test(t_base64_strict),
	};
	const size_t nfixed = sizeof(fixed) / sizeof(fixed[0]);
	const size_t total = nfixed + N_EXEC_BAD + N_SIGNER_BAD + N_SIGNER_OK;
	struct CMUnitTest *tests = calloc(total, sizeof(*tests));
	size_t i, k = 0;
	int rc;

	/* Before jansson allocates anything: see t_exec_response_no_key_residue. */
	json_set_alloc_funcs(scan_malloc, scan_free);
	if (tests == NULL)
		return 1;
	for (i = 0; i < nfixed; i++)
		tests[k++] = fixed[i];
	for (i = 0; i < N_EXEC_BAD; i++)
		tests[k++] = (struct CMUnitTest){ exec_bad[i].name, t_exec_bad, NULL, NULL,
		                                  (void *)&exec_bad[i] };
	for (i = 0; i < N_SIGNER_BAD; i++)
		tests[k++] = (struct CMUnitTest){ signer_bad[i].name, t_signer_bad, NULL, NULL,
		                                  (void *)&signer_bad[i] };
	for (i = 0; i < N_SIGNER_OK; i++)
		tests[k++] = (struct CMUnitTest){ signer_ok[i].name, t_signer_ok, NULL, NULL,
		                                  (void *)&signer_ok[i] };
	rc = _cmocka_run_group_tests("proto", tests, total, NULL, NULL);
	free(tests);
	return rc;
}
