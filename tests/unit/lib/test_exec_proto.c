/*
 * Unit tests for the ExecCredential codec (lib/kh_exec_proto): what
 * kubectl and other clients send in KUBERNETES_EXEC_INFO, and the answer
 * kubehsm exec writes, which must leave no copy of the key behind.
 *
 * Fixtures in tests/unit/lib/data/exec_proto were captured from the real
 * clients on this machine (kubectl 1.27/1.30/1.33 with and without
 * provideClusterInfo, the Python kubernetes client).
 */
#include "config.h"

#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/crypto.h>

#include "lib/kh_exec_proto.h"
#include "lib/kh_mem.h"
#include "tests/unit/lib/proto_cases.h"
#include "tests/unit/unit_file.h"

#ifndef KH_TEST_DATADIR
#define KH_TEST_DATADIR "tests/unit/lib/data/exec_proto"
#endif

/* ------------------------------------------------------------ helpers */

static char *
read_fixture(const char *name, size_t *len)
{
	char path[1024];

	assert_true((size_t)snprintf(path, sizeof(path), "%s/%s", KH_TEST_DATADIR, name) < sizeof(path));
	return unit_read_file(path, len);
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

#define V1 "\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\""

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

static void
t_exec_bad(void **state)
{
	run_bad(*state, parse_exec);
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
	};
	static const struct row_table tables[] = {
		{ exec_bad, sizeof(exec_bad) / sizeof(exec_bad[0]), sizeof(exec_bad[0]), t_exec_bad },
	};

	/* Before jansson allocates anything: see t_exec_response_no_key_residue. */
	json_set_alloc_funcs(scan_malloc, scan_free);
	return run_tables("exec_proto", fixed, sizeof(fixed) / sizeof(fixed[0]),
			  tables, sizeof(tables) / sizeof(tables[0]));
}
