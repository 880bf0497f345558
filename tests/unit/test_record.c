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

#include <cmocka.h>
#include <jansson.h>

#include "kh_json.h"
#include "kh_mem.h"
#include "kh_record.h"

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
	r = sample(); r.key_pem = NULL;
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), -1);
	r = sample(); r.expires = r.created;
	assert_int_equal(kh_record_encode(&r, &out, &len, &err), -1);
	r = sample(); r.logins = 0;
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

/* Take the valid sample as JSON, set field `name` to `value` (NULL: delete). */
static void
expect_refused_field(const char *name, json_t *value, const char *why)
{
	struct kh_record r = sample();
	json_error_t jerr;
	size_t len;
	char *buf = encode(&r, &len), *text;
	json_t *doc = json_loadb(buf, len, 0, &jerr);

	assert_non_null(doc);
	if (value == NULL)
		json_object_del(doc, name);
	else
		json_object_set_new(doc, name, value);
	text = json_dumps(doc, JSON_COMPACT);
	assert_non_null(text);
	expect_refused_text(text, strlen(text), why);
	free(text);
	json_decref(doc);
	kh_secure_free(buf, len + 1);
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
	expect_refused_field("v", json_integer(2), "of a future version");
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
	expect_refused_field("logins", json_integer(0), "with zero logins");
	expect_refused_field("logins", json_integer(1000000), "with absurd logins");
	expect_refused_field("chain", json_string("not pem"), "with a non-PEM chain");
	expect_refused_field("key", json_string(""), "with an empty key");
	expect_refused_field("key", NULL, "without a key");
	expect_refused_field("token_cert", json_true(), "with a boolean token cert");
	expect_refused_field("pin", json_string("123456"), "carrying a PIN field");
	expect_refused_field("extra", json_integer(1), "with an unknown field");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_round_trip_issuer_session_scope),
		cmocka_unit_test(test_dup),
		cmocka_unit_test(test_encode_refuses_bad_records),
		cmocka_unit_test(test_encode_refuses_oversize),
		cmocka_unit_test(test_description),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_decode_refuses_malformed),
		cmocka_unit_test(test_decode_refuses_forged_fields),
	};

	kh_json_wipe_on_free(true);
	return cmocka_run_group_tests_name("record", tests, NULL, NULL);
}
