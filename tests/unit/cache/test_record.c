/*
 * Unit tests for the keyring record codec: round trips, and every malformed
 * or forged form the decoder must refuse.
 */
#include "config.h"

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

#include "lib/kh_exec_proto.h"
#include "lib/kh_json.h"
#include "lib/kh_mem.h"
#include "cache/kh_record.h"

#define PEM_CERT "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n"
#define PEM_KEY  "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\n-----END PRIVATE KEY-----\n"

static char *groups_default[] = { "dev", "ops" };

static struct kh_record
sample(void)
{
	struct kh_record r = {
		.version = KH_RECORD_VERSION, .uid = 1001, .user = "alice",
		.issuer_id = "", .scope = KH_SCOPE_USER, .kube_user = "alice",
		.groups = groups_default, .ngroups = 2,
		.cert_chain_pem = PEM_CERT PEM_CERT, .key_pem = PEM_KEY,
		.token_cert_pem = PEM_CERT, .token_uri = "pkcs11:token=alice;object=kube",
		.created = 1700000000, .expires = 1700028800, .logins = 1,
	};
	return r;
}

static char *
encode(const struct kh_record *r, size_t *len)
{
	char *out = NULL;
	kh_error err;

	assert_int_equal(kh_record_encode(r, &out, len, &err), 0);
	return out;
}

static void
test_round_trip(void **state)
{
	struct kh_record r = sample(), *d = NULL;
	kh_error err;
	size_t len;
	char *buf = encode(&r, &len);

	(void)state;
	assert_int_equal(kh_record_decode(buf, len, &d, &err), 0);
	assert_int_equal(d->uid, 1001);
	assert_string_equal(d->user, "alice");
	assert_string_equal(d->issuer_id, "");
	assert_int_equal(d->scope, KH_SCOPE_USER);
	assert_string_equal(d->kube_user, "alice");
	assert_int_equal(d->ngroups, 2);
	assert_string_equal(d->groups[0], "dev");
	assert_string_equal(d->groups[1], "ops");
	assert_string_equal(d->cert_chain_pem, PEM_CERT PEM_CERT);
	assert_string_equal(d->key_pem, PEM_KEY);
	assert_string_equal(d->token_cert_pem, PEM_CERT);
	assert_string_equal(d->token_uri, "pkcs11:token=alice;object=kube");
	assert_int_equal(d->created, 1700000000);
	assert_int_equal(d->expires, 1700028800);
	assert_int_equal(d->logins, 1);
	kh_record_free(d);
	kh_secure_free(buf, len + 1);
}

static void
test_round_trip_issuer_session_scope(void **state)
{
	struct kh_record r = sample(), *d = NULL;
	kh_error err;
	size_t len;
	char *buf;

	(void)state;
	r.issuer_id = "prod-1";
	r.scope = KH_SCOPE_SESSION;
	r.ngroups = 0;
	r.logins = 7;
	buf = encode(&r, &len);
	assert_int_equal(kh_record_decode(buf, len, &d, &err), 0);
	assert_string_equal(d->issuer_id, "prod-1");
	assert_int_equal(d->scope, KH_SCOPE_SESSION);
	assert_int_equal(d->ngroups, 0);
	assert_int_equal(d->logins, 7);
	kh_record_free(d);
	kh_secure_free(buf, len + 1);
}

/* session.deliver = "relay": the record carries no key at all. */
static void
test_round_trip_without_key(void **state)
{
	struct kh_record r = sample(), *d = NULL;
	kh_error err;
	size_t len;
	char *buf;

	(void)state;
	r.key_pem = NULL;
	buf = encode(&r, &len);
	assert_null(strstr(buf, "PRIVATE KEY"));
	assert_non_null(strstr(buf, "\"exec\":0"));
	assert_null(strstr(buf, "ExecCredential"));
	assert_int_equal(kh_record_decode(buf, len, &d, &err), 0);
	assert_null(d->key_pem);
	assert_string_equal(d->cert_chain_pem, PEM_CERT PEM_CERT);
	assert_string_equal(d->token_cert_pem, PEM_CERT);
	kh_record_free(d);
	d = kh_record_dup(&r);
	assert_non_null(d);
	assert_null(d->key_pem);
	kh_record_free(d);
	kh_secure_free(buf, len + 1);
}

static void
test_dup(void **state)
{
	struct kh_record r = sample(), *d;

	(void)state;
	d = kh_record_dup(&r);
	assert_non_null(d);
	assert_string_equal(d->key_pem, PEM_KEY);
	assert_string_equal(d->groups[1], "ops");
	assert_ptr_not_equal(d->key_pem, r.key_pem);
	kh_record_free(d);
}

static void
test_encode_refuses_bad_records(void **state)
{
	struct kh_record r;
	char *out = NULL, big[300];
	char *many[KH_RECORD_MAX_GROUPS + 1];
	size_t len, i;
	kh_error err;

	(void)state;
	r = sample(); r.cert_chain_pem = NULL;
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), -1);
	r = sample(); r.key_pem = "not PEM";   /* absent is fine (relay), bad is not */
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), -1);
	r = sample(); r.expires = r.created;
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), -1);
	r = sample(); r.logins = KH_LOGINS_MAX + 1;
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), -1);
	for (i = 0; i <= KH_RECORD_MAX_GROUPS; i++)
		many[i] = "g";
	r = sample(); r.groups = many; r.ngroups = KH_RECORD_MAX_GROUPS + 1;
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), -1);
	memset(big, 'A', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	r = sample(); r.groups = (char *[]){ big }; r.ngroups = 1;
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), -1);
	r = sample(); r.groups = (char *[]){ "tab\there" }; r.ngroups = 1;
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), -1);
	assert_null(out);
}

/* A header field the decoder would refuse is refused when written: a
 * token URI made from a long token.key_label, a control character in a
 * name.  Up to the bound it round-trips. */
static void
test_encode_refuses_what_decode_refuses(void **state)
{
	struct kh_record r, *d = NULL;
	char *out = NULL, uri[1026];
	size_t len;
	kh_error err;

	(void)state;
	memset(uri, 'u', sizeof(uri) - 1);
	uri[sizeof(uri) - 1] = '\0';            /* 1025 bytes: one past the bound */
	r = sample(); r.token_uri = uri;
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), -1);
	assert_non_null(strstr(err.msg, "token URI"));
	assert_null(out);
	r = sample(); r.kube_user = "bad\x01name";
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), -1);
	r = sample(); r.user = "";
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), -1);
	assert_null(out);

	uri[sizeof(uri) - 2] = '\0';            /* 1024 bytes: the bound */
	r = sample(); r.token_uri = uri;
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), 0);
	assert_int_equal(kh_record_decode(out, len, &d, &err), 0);
	assert_string_equal(d->token_uri, uri);
	kh_record_free(d);
	kh_secure_free(out, len + 1);
}

static void
test_encode_refuses_oversize(void **state)
{
	struct kh_record r = sample();
	char *chain, *out = NULL;
	size_t len;
	kh_error err;

	(void)state;
	chain = malloc(KH_RECORD_MAX);
	assert_non_null(chain);
	memset(chain, 'A', KH_RECORD_MAX - 1);
	chain[KH_RECORD_MAX - 1] = '\0';
	memcpy(chain, "-----BEGIN ", 11);
	r.cert_chain_pem = chain;
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	assert_non_null(strstr(err.msg, "limit"));
	free(chain);
}

static void
test_description(void **state)
{
	char buf[96];
	kh_error err;

	(void)state;
	assert_int_equal(kh_record_description("session", "", buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "kubehsm:session:v1");
	assert_int_equal(kh_record_description("session", NULL, buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "kubehsm:session:v1");
	assert_int_equal(kh_record_description("session", "prod", buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "kubehsm:session:v1:prod");
	assert_int_equal(kh_record_description("session", "a:b", buf, sizeof(buf), &err), -1);
	assert_int_equal(kh_record_description("session", "a b", buf, sizeof(buf), &err), -1);
	assert_int_equal(kh_record_description("session",
		"0123456789012345678901234567890123", buf, sizeof(buf), &err), -1);
	assert_int_equal(kh_record_description("session", "x", buf, 10, &err), -1);
}

static void
test_check(void **state)
{
	struct kh_record r = sample();
	kh_error err;

	(void)state;
	assert_int_equal(kh_record_check(&r, 1001, r.created + 10, &err), 0);
	assert_int_equal(kh_record_check(&r, 1002, r.created + 10, &err), -1);
	assert_int_equal(err.code, KH_ERR_REFUSED);
	assert_non_null(strstr(err.msg, "uid"));
	assert_int_equal(kh_record_check(&r, 1001, r.expires, &err), -1);
	assert_int_equal(err.code, KH_ERR_EXPIRED);
	assert_int_equal(kh_record_check(&r, 1001, r.expires + 999, &err), -1);
}

/* Decode `text` (a modification of a valid record) and expect refusal. */
static void
expect_refused_text(const char *text, size_t len, const char *why)
{
	struct kh_record *d = NULL;
	kh_error err;

	kh_error_clear(&err);
	if (kh_record_decode(text, len, &d, &err) == 0) {
		kh_record_free(d);
		fail_msg("decoder accepted a record that is %s", why);
	}
	assert_null(d);
	assert_true(err.code == KH_ERR_REFUSED);
	assert_true(err.msg[0] != '\0');
}

/* The valid sample split into its header (parsed) and the PEM texts after
 * it; *body is malloc'd. */
static json_t *
sample_header(char **body, size_t *body_len)
{
	struct kh_record r = sample();
	json_error_t jerr;
	size_t len, hlen;
	char *buf = encode(&r, &len);
	json_t *doc;

	hlen = strcspn(buf, "\n");
	assert_true(hlen < len);
	doc = json_loadb(buf, hlen, 0, &jerr);
	assert_non_null(doc);
	*body_len = len - hlen - 1;
	*body = malloc(*body_len + 1);
	assert_non_null(*body);
	memcpy(*body, buf + hlen + 1, *body_len + 1);
	kh_secure_free(buf, len + 1);
	return doc;
}

/* Reassemble header line + body and expect the decoder to refuse it. */
static void
expect_refused_parts(json_t *header, const char *body, size_t body_len, const char *why)
{
	char *line = json_dumps(header, JSON_COMPACT), *text;
	size_t hlen;

	assert_non_null(line);
	hlen = strlen(line);
	text = malloc(hlen + 1 + body_len + 1);
	assert_non_null(text);
	memcpy(text, line, hlen);
	text[hlen] = '\n';
	memcpy(text + hlen + 1, body, body_len);
	text[hlen + 1 + body_len] = '\0';
	expect_refused_text(text, hlen + 1 + body_len, why);
	free(text);
	free(line);
}

/* In the header (or its sub-object `within`), set field `name` to `value`
 * (NULL: delete) and expect a refusal. */
static void
expect_refused_set(const char *within, const char *name, json_t *value, const char *why)
{
	size_t body_len;
	char *body;
	json_t *doc = sample_header(&body, &body_len);
	json_t *obj = within != NULL ? json_object_get(doc, within) : doc;

	assert_non_null(obj);
	if (value == NULL)
		json_object_del(obj, name);
	else
		json_object_set_new(obj, name, value);
	expect_refused_parts(doc, body, body_len, why);
	json_decref(doc);
	kh_secure_free(body, body_len + 1);
}

static void
expect_refused_field(const char *name, json_t *value, const char *why)
{
	expect_refused_set(NULL, name, value, why);
}

/* The length of part `name` in the header's "parts" object. */
static void
expect_refused_part_length(const char *name, json_t *value, const char *why)
{
	expect_refused_set("parts", name, value, why);
}

/* Overwrite byte `at` of the PEM texts (or append `extra` bytes). */
static void
expect_refused_body(size_t at, char c, size_t extra, const char *why)
{
	size_t body_len;
	char *body;
	json_t *doc = sample_header(&body, &body_len);

	body = realloc(body, body_len + extra + 1);
	assert_non_null(body);
	if (extra == 0)
		body[at] = c;
	else
		memset(body + body_len, c, extra);
	expect_refused_parts(doc, body, body_len + extra, why);
	json_decref(doc);
	kh_secure_free(body, body_len + extra + 1);
}

static void
test_decode_refuses_malformed(void **state)
{
	static const char *const texts[] = {
		"", "{", "[]", "null", "\"x\"", "42", "{}",
		"{\"kind\":\"kubehsm-session\"}",
		"{\"kind\":\"kubehsm-session\",\"v\":1}",
		"{\"kind\":\"other\",\"v\":1}",
		"{\"kind\":\"kubehsm-session\",\"kind\":\"kubehsm-session\",\"v\":1}",
		"{\"kind\":\"kubehsm-session\",\"v\":1} trailing",
		"\n", "{}\n", "\n{\"kind\":\"kubehsm-session\",\"v\":1}",
		"{\"kind\":\"kubehsm-session\",\"v\":1}\n",
		"{\"kind\":\"kubehsm-session\",\"v\":1} x\n-----BEGIN CERTIFICATE-----\n",
	};
	struct kh_record r = sample();
	size_t i, len;
	char *buf;

	(void)state;
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		expect_refused_text(texts[i], strlen(texts[i]), texts[i]);

	/* Every proper prefix of a valid record is refused (truncation). */
	buf = encode(&r, &len);
	for (i = 0; i < len; i += 7)
		expect_refused_text(buf, i == 0 ? 1 : i, "truncated");
	/* An embedded NUL inside the payload. */
	buf[len / 2] = '\0';
	expect_refused_text(buf, len, "containing a NUL byte");
	kh_secure_free(buf, len + 1);

	/* Oversize input is refused before parsing. */
	buf = calloc(1, KH_RECORD_MAX + 2);
	assert_non_null(buf);
	memset(buf, ' ', KH_RECORD_MAX + 1);
	expect_refused_text(buf, KH_RECORD_MAX + 1, "oversize");
	free(buf);
}

static void
test_decode_refuses_forged_fields(void **state)
{
	(void)state;
	expect_refused_field("v", json_integer(3), "of a future version");
	expect_refused_field("v", json_integer(1), "of version 1 (before the pre-rendered answer)");
	expect_refused_field("v", json_integer(0), "of version 0");
	expect_refused_field("v", json_string("1"), "with a string version");
	expect_refused_field("kind", json_string("kubehsm-pin"), "of another kind");
	expect_refused_field("uid", json_integer(-1), "with a negative uid");
	expect_refused_field("uid", json_integer(4294967295LL), "with uid -1");
	expect_refused_field("uid", json_real(1001.0), "with a real uid");
	expect_refused_field("uid", NULL, "without a uid");
	expect_refused_field("user", json_string(""), "with an empty user");
	expect_refused_field("user", json_string("al\nice"), "with a newline in the user");
	expect_refused_field("user", json_integer(3), "with a numeric user");
	expect_refused_field("issuer", json_string("../x"), "with an issuer id outside the alphabet");
	expect_refused_field("scope", json_string("global"), "with an unknown scope");
	expect_refused_field("scope", NULL, "without a scope");
	expect_refused_field("kube_user", json_null(), "with a null kube user");
	expect_refused_field("groups", json_string("dev"), "with groups as a string");
	expect_refused_field("groups", json_pack("[i]", 1), "with a numeric group");
	expect_refused_field("groups", json_pack("[s]", ""), "with an empty group");
	expect_refused_field("created", json_integer(-5), "created before 1970");
	expect_refused_field("expires", json_integer(1600000000), "expiring before creation");
	expect_refused_field("expires", json_string("tomorrow"), "with a string expiry");
	expect_refused_field("logins", json_integer(-1), "with negative logins");
	expect_refused_field("logins", json_integer(1000000), "with absurd logins");
	expect_refused_field("pin", json_string("123456"), "carrying a PIN field");
	expect_refused_field("extra", json_integer(1), "with an unknown field");
	expect_refused_field("key", json_string(PEM_KEY), "with the key in the header");
	expect_refused_field("parts", NULL, "without part lengths");
	expect_refused_field("parts", json_pack("[iii]", 1, 1, 1), "with part lengths as an array");
	expect_refused_field("pem", json_pack("{s:i}", "chain", 1), "with version 1's PEM lengths");
}

/* The sample's exec part, as kubehsm renders it. */
static char *
sample_answer(size_t *len)
{
	struct kh_record r = sample();
	char *ans = NULL;
	kh_error err;

	assert_int_equal(kh_exec_answer_render((time_t)r.expires, r.cert_chain_pem, r.key_pem,
					       &ans, len, &err), 0);
	return ans;
}

static void
test_decode_refuses_forged_parts(void **state)
{
	size_t exec, token = strlen(PEM_CERT), body_len, at;
	char *ans = sample_answer(&exec), *body;
	json_t *doc;

	(void)state;
	expect_refused_part_length("exec", json_integer((json_int_t)exec + 1), "with an exec part too long");
	expect_refused_part_length("exec", json_integer((json_int_t)exec - 1), "with an exec part too short");
	expect_refused_part_length("exec", json_integer(0), "with neither exec part nor chain");
	expect_refused_part_length("exec", json_string("62"), "with a string part length");
	expect_refused_part_length("exec", json_integer(-1), "with a negative part length");
	expect_refused_part_length("exec", json_integer(KH_RECORD_MAX + 1), "with an absurd part length");
	expect_refused_part_length("chain", json_integer(5), "with an exec part and a chain");
	expect_refused_part_length("token_cert", NULL, "without a token certificate");
	expect_refused_part_length("token_cert", json_integer(0), "with an empty token certificate");
	expect_refused_part_length("key", json_integer(1), "with a fourth part");
	/* The lengths fit, the texts do not. */
	expect_refused_body(0, 'x', 0, "with an exec part not starting as rendered");
	expect_refused_body(exec - 2, ']', 0, "with an exec part not ending as rendered");
	expect_refused_body(exec - 1, ' ', 0, "with an exec part not ending in a newline");
	expect_refused_body(exec, 'x', 0, "with a non-PEM token certificate");
	expect_refused_body(exec + token / 2, '\0', 0, "with a NUL in the token certificate");
	expect_refused_body(exec + token / 2, '\x01', 0, "with a control byte in the token certificate");
	expect_refused_body(0, '\n', 1, "with a byte after the parts");
	/* Inside the rendered PEM texts: anything that is not the PEM alphabet
	 * or its \n escape would change what the JSON says (or break it). */
	at = (size_t)(strstr(ans, "MIIBszCC") - ans) + 3;
	expect_refused_body(at, '"', 0, "with a quote in the chain");
	expect_refused_body(at, '\\', 0, "with a lone backslash in the chain");
	expect_refused_body(at, '\x7f', 0, "with DEL in the chain");
	expect_refused_body(at, '\xc3', 0, "with a non-ASCII byte in the chain");
	at = (size_t)(strstr(ans, "MIGHAgEA") - ans) + 3;
	expect_refused_body(at, '"', 0, "with a quote in the key");
	expect_refused_body(at, '\n', 0, "with a raw newline in the key");
	at = (size_t)(strstr(ans, "\\n") - ans) + 1;
	expect_refused_body(at, 'u', 0, "with another escape than \\n");

	/* The exec part says when the session ends: it must be the header's
	 * expiry, or exec would serve a credential kubectl keeps past it. */
	doc = sample_header(&body, &body_len);
	json_object_set_new(doc, "expires", json_integer(1700028800 + 3600));
	expect_refused_parts(doc, body, body_len, "with an exec part for another expiry");
	json_decref(doc);
	kh_secure_free(body, body_len + 1);
	kh_secure_free(ans, exec + 1);
}

/* What exec serves from a record is, byte for byte, the answer the encoder
 * writes for the record's session, for either apiVersion. */
static void
test_answer_round_trip(void **state)
{
	static const enum kh_exec_api apis[] = { KH_EXEC_API_V1, KH_EXEC_API_V1BETA1 };
	struct kh_record r = sample(), *d = NULL, *full = NULL;
	char *buf, *want, served[8192];
	size_t len, want_len, plen, i;
	kh_error err;

	(void)state;
	buf = encode(&r, &len);
	assert_int_equal(kh_record_decode_answer(buf, len, &d, &err), 0);
	assert_non_null(d->exec_answer);
	assert_int_equal(strlen(d->exec_answer), d->exec_answer_len);
	assert_null(d->key_pem);
	assert_null(d->cert_chain_pem);
	assert_string_equal(d->user, "alice");
	assert_int_equal(d->expires, 1700028800);
	for (i = 0; i < sizeof(apis) / sizeof(apis[0]); i++) {
		const char *prefix = kh_exec_answer_prefix(apis[i]);

		assert_int_equal(kh_exec_response_encode(apis[i], (time_t)r.expires, r.cert_chain_pem,
							 r.key_pem, &want, &want_len, &err), 0);
		plen = strlen(prefix);
		assert_true(plen + d->exec_answer_len - 1 < sizeof(served));
		memcpy(served, prefix, plen);
		memcpy(served + plen, d->exec_answer + 1, d->exec_answer_len - 1);
		assert_int_equal(plen + d->exec_answer_len - 1, want_len);
		assert_memory_equal(served, want, want_len);
		kh_secure_strfree(want);
	}
	assert_null(kh_exec_answer_prefix(KH_EXEC_API_NONE));
	/* A signer's decode takes the key alone. */
	assert_int_equal(kh_record_decode_take(buf, len, KH_RECORD_TAKE_KEY, &full, &err), 0);
	assert_null(full->cert_chain_pem);
	assert_string_equal(full->key_pem, PEM_KEY);
	assert_string_equal(full->token_cert_pem, PEM_CERT);
	assert_null(full->exec_answer);
	kh_record_free(full);
	/* The full decoder takes the chain and the key back out of it. */
	assert_int_equal(kh_record_decode(buf, len, &full, &err), 0);
	assert_string_equal(full->cert_chain_pem, PEM_CERT PEM_CERT);
	assert_string_equal(full->key_pem, PEM_KEY);
	assert_null(full->exec_answer);
	kh_record_free(full);
	full = kh_record_dup(d);
	assert_non_null(full);
	assert_string_equal(full->exec_answer, d->exec_answer);
	kh_record_free(full);
	kh_record_free(d);
	/* Relay-held key: nothing to serve, the chain is there as it is. */
	r.key_pem = NULL;
	kh_secure_free(buf, len + 1);
	buf = encode(&r, &len);
	assert_int_equal(kh_record_decode_answer(buf, len, &d, &err), 0);
	assert_null(d->exec_answer);
	assert_string_equal(d->cert_chain_pem, PEM_CERT PEM_CERT);
	kh_record_free(d);
	kh_secure_free(buf, len + 1);
}

/* Both decoders accept exactly the same records: every byte of a valid
 * record replaced by each of a few telling bytes. */
static void
test_decoders_agree(void **state)
{
	static const char subst[] = { '"', '\\', 'n', 'x', '\n', '\0', '\x80', ' ', '9', '}' };
	struct kh_record r = sample(), *a = NULL, *b = NULL;
	size_t len, i, k, accepted = 0;
	char *buf = encode(&r, &len), saved;
	kh_error err;
	int ra, rb;

	(void)state;
	for (i = 0; i < len; i++) {
		saved = buf[i];
		for (k = 0; k < sizeof(subst); k++) {
			if (subst[k] == saved)
				continue;
			buf[i] = subst[k];
			ra = kh_record_decode(buf, len, &a, &err);
			rb = kh_record_decode_answer(buf, len, &b, &err);
			if (ra != rb)
				fail_msg("byte %zu set to 0x%02x: the full decoder says %d, "
					 "exec's decoder %d", i, (unsigned char)subst[k], ra, rb);
			kh_record_free(b);
			rb = kh_record_decode_take(buf, len, KH_RECORD_TAKE_KEY, &b, &err);
			if (ra != rb)
				fail_msg("byte %zu set to 0x%02x: the full decoder says %d, "
					 "the key-only decoder %d", i, (unsigned char)subst[k], ra, rb);
			if (ra == 0 && strcmp(a->key_pem, b->key_pem) != 0)
				fail_msg("byte %zu: the decoders disagree on the key", i);
			accepted += ra == 0;
			kh_record_free(a);
			kh_record_free(b);
			a = b = NULL;
		}
		buf[i] = saved;
	}
	assert_true(accepted > 0);   /* base64 letters may change: still a record */
	kh_secure_free(buf, len + 1);
}

/* The PAM module turns wiping on at entry and off at exit: off must put
 * back whatever allocators the host process had given jansson, not
 * malloc/free (#13). */
static size_t host_mallocs;

static void *
host_malloc(size_t n)
{
	host_mallocs++;
	return malloc(n);
}

static void
host_free(void *p)
{
	free(p);
}

static void
test_wipe_restores_host_allocators(void **state)
{
	json_malloc_t m = NULL;
	json_free_t f = NULL;
	json_t *v;

	(void)state;
	kh_json_wipe_on_free(false);             /* as main left it: on */
	json_set_alloc_funcs(host_malloc, host_free);
	kh_json_wipe_on_free(true);
	json_get_alloc_funcs(&m, &f);
	assert_true(m != host_malloc && f != host_free);
	kh_json_wipe_on_free(false);
	json_get_alloc_funcs(&m, &f);
	assert_ptr_equal(m, host_malloc);
	assert_ptr_equal(f, host_free);
	host_mallocs = 0;
	v = json_string("host");
	assert_non_null(v);
	json_decref(v);
	assert_true(host_mallocs > 0);
	/* Nested use (module entry inside a module entry) unwinds the same way. */
	kh_json_wipe_on_free(true);
	kh_json_wipe_on_free(true);
	kh_json_wipe_on_free(false);
	kh_json_wipe_on_free(false);
	json_get_alloc_funcs(&m, &f);
	assert_ptr_equal(m, host_malloc);
	assert_ptr_equal(f, host_free);
	json_set_alloc_funcs(malloc, free);
	kh_json_wipe_on_free(true);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wipe_restores_host_allocators),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_round_trip_issuer_session_scope),
		cmocka_unit_test(test_round_trip_without_key),
		cmocka_unit_test(test_dup),
		cmocka_unit_test(test_encode_refuses_bad_records),
		cmocka_unit_test(test_encode_refuses_what_decode_refuses),
		cmocka_unit_test(test_encode_refuses_oversize),
		cmocka_unit_test(test_description),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_decode_refuses_malformed),
		cmocka_unit_test(test_decode_refuses_forged_fields),
		cmocka_unit_test(test_decode_refuses_forged_parts),
		cmocka_unit_test(test_answer_round_trip),
		cmocka_unit_test(test_decoders_agree),
	};

	kh_json_wipe_on_free(true);
	return cmocka_run_group_tests_name("record", tests, NULL, NULL);
}
