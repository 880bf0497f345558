/*
 * Unit tests for the kubehsm-relayd control protocol (lib/kh_relay_proto.c):
 * every message round-trips, and the decoder refuses what a hostile or
 * confused peer could send (unknown fields, wrong types, out-of-range
 * values, a wrong version, oversized datagrams).
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

#include "lib/kh_json.h"
#include "lib/kh_mem.h"
#include "lib/kh_relay_proto.h"

#define CHAIN "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
#define KEY   "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n"

static struct kh_relay_session
sample(void)
{
	struct kh_relay_session s = {
		.uid = 1001, .user = "alice", .issuer = "prod-1", .expires = 1800000000,
		.chain_pem = CHAIN, .key_pem = KEY,
	};
	return s;
}

static void
test_session_round_trip(void **state)
{
	struct kh_relay_session s = sample(), d;
	char *out = NULL;
	size_t len = 0;
	kh_error err;

	(void)state;
	s.delivered = 1700000000;
	assert_int_equal(kh_relay_session_encode(&s, &out, &len, &err), 0);
	assert_int_equal(kh_relay_session_decode(out, len, &d, &err), 0);
	assert_int_equal(d.uid, 1001);
	assert_string_equal(d.user, "alice");
	assert_string_equal(d.issuer, "prod-1");
	assert_int_equal(d.expires, 1800000000);
	assert_int_equal(d.delivered, 1700000000);
	assert_string_equal(d.chain_pem, CHAIN);
	assert_string_equal(d.key_pem, KEY);
	kh_relay_session_clear(&d);
	assert_null(d.key_pem);
	kh_secure_free(out, len);
}

/* The login origin travels with the session, is optional member by member,
 * and is as strictly checked as the rest. */
static void
test_session_origin(void **state)
{
	struct kh_relay_session s = sample(), d;
	char *out = NULL;
	size_t len = 0;
	kh_error err;
	char bad[512];

	(void)state;
	s.origin.service = "sshd";
	s.origin.rhost = "203.0.113.7";
	assert_int_equal(kh_relay_session_encode(&s, &out, &len, &err), 0);
	assert_non_null(strstr(out, "\"origin\":{\"service\":\"sshd\",\"rhost\":\"203.0.113.7\"}"));
	assert_int_equal(kh_relay_session_decode(out, len, &d, &err), 0);
	assert_string_equal(d.origin.service, "sshd");
	assert_string_equal(d.origin.rhost, "203.0.113.7");
	assert_null(d.origin.tty);
	kh_relay_session_clear(&d);
	kh_secure_free(out, len);
	/* Without one: no member at all (what an older relay accepts). */
	s = sample();
	assert_int_equal(kh_relay_session_encode(&s, &out, &len, &err), 0);
	assert_null(strstr(out, "origin"));
	kh_secure_free(out, len);
	(void)snprintf(bad, sizeof(bad), "{\"uid\":1,\"user\":\"a\",\"issuer\":\"\",\"expires\":9,"
		       "\"chain\":\"%s\",\"key\":\"%s\",\"origin\":{\"tty\":\"a\\nb\"}}",
		       "-----BEGIN CERTIFICATE-----", "PRIVATE KEY-----");
	assert_int_equal(kh_relay_session_decode(bad, strlen(bad), &d, &err), -1);
	assert_non_null(strstr(err.msg, "control character"));
	(void)snprintf(bad, sizeof(bad), "{\"uid\":1,\"user\":\"a\",\"issuer\":\"\",\"expires\":9,"
		       "\"chain\":\"%s\",\"key\":\"%s\",\"origin\":{\"shell\":\"x\"}}",
		       "-----BEGIN CERTIFICATE-----", "PRIVATE KEY-----");
	assert_int_equal(kh_relay_session_decode(bad, strlen(bad), &d, &err), -1);
	assert_non_null(strstr(err.msg, "unknown field"));
}

static void
test_requests_round_trip(void **state)
{
	struct kh_relay_request req = { .op = KH_RELAY_OP_DELIVER, .session = sample() }, d;
	char *out = NULL;
	size_t len = 0;
	kh_error err;

	(void)state;
	assert_int_equal(kh_relay_request_encode(&req, &out, &len, &err), 0);
	assert_int_equal(kh_relay_request_decode(out, len, &d, &err), 0);
	assert_int_equal(d.op, KH_RELAY_OP_DELIVER);
	assert_string_equal(d.session.key_pem, KEY);
	assert_int_equal(d.session.delivered, 0);
	kh_relay_request_clear(&d);
	kh_secure_free(out, len);

	req = (struct kh_relay_request){ .op = KH_RELAY_OP_FORGET, .has_uid = true, .uid = 0,
					 .issuer = "x", .reason = KH_RELAY_LOGOUT };
	assert_int_equal(kh_relay_request_encode(&req, &out, &len, &err), 0);
	assert_int_equal(kh_relay_request_decode(out, len, &d, &err), 0);
	assert_int_equal(d.op, KH_RELAY_OP_FORGET);
	assert_true(d.has_uid);
	assert_int_equal(d.uid, 0);
	assert_string_equal(d.issuer, "x");
	assert_int_equal(d.reason, KH_RELAY_LOGOUT);
	kh_relay_request_clear(&d);
	kh_secure_free(out, len);

	/* user.sock's forget: no uid, no issuer, the default reason. */
	req = (struct kh_relay_request){ .op = KH_RELAY_OP_FORGET };
	assert_int_equal(kh_relay_request_encode(&req, &out, &len, &err), 0);
	assert_string_equal(out, "{\"v\":1,\"op\":\"forget\"}");
	assert_int_equal(kh_relay_request_decode(out, len, &d, &err), 0);
	assert_false(d.has_uid);
	assert_null(d.issuer);
	assert_int_equal(d.reason, KH_RELAY_REVOKED);
	kh_relay_request_clear(&d);
	kh_secure_free(out, len);
}

static void
test_reply_round_trip(void **state)
{
	struct kh_relay_listing l[2] = {
		{ .uid = 1, .user = "a", .issuer = "", .expires = 5, .connections = 3 },
		{ .uid = 2, .user = "b", .issuer = "i", .expires = 6, .connections = 0 },
	};
	struct kh_relay_reply rep = { .ok = true, .has_list = true, .list = l, .nlist = 2 }, d;
	char *out = NULL;
	size_t len = 0;
	kh_error err;

	(void)state;
	assert_int_equal(kh_relay_reply_encode(&rep, &out, &len, &err), 0);
	assert_int_equal(kh_relay_reply_decode(out, len, &d, &err), 0);
	assert_true(d.ok);
	assert_int_equal(d.nlist, 2);
	assert_string_equal(d.list[1].user, "b");
	assert_int_equal(d.list[0].connections, 3);
	kh_relay_reply_clear(&d);
	kh_secure_free(out, len);

	rep = (struct kh_relay_reply){ .ok = false, .error = "no relay cluster accepts it" };
	assert_int_equal(kh_relay_reply_encode(&rep, &out, &len, &err), 0);
	assert_int_equal(kh_relay_reply_decode(out, len, &d, &err), 0);
	assert_false(d.ok);
	assert_string_equal(d.error, "no relay cluster accepts it");
	kh_relay_reply_clear(&d);
	kh_secure_free(out, len);

	rep = (struct kh_relay_reply){ .ok = true, .has_counts = true, .sessions = 1,
				       .connections = 7 };
	assert_int_equal(kh_relay_reply_encode(&rep, &out, &len, &err), 0);
	assert_int_equal(kh_relay_reply_decode(out, len, &d, &err), 0);
	assert_int_equal(d.sessions, 1);
	assert_int_equal(d.connections, 7);
	kh_relay_reply_clear(&d);
	kh_secure_free(out, len);
}

static void
expect_bad_request(const char *text, const char *want)
{
	struct kh_relay_request d;
	kh_error err;

	kh_error_clear(&err);
	if (kh_relay_request_decode(text, strlen(text), &d, &err) == 0) {
		print_error("accepted: %s\n", text);
		fail();
	}
	if (strstr(err.msg, want) == NULL) {
		print_error("%s\n  error: %s\n  wanted: %s\n", text, err.msg, want);
		fail();
	}
	assert_null(d.session.key_pem);
}

#define S(extra) "{\"v\":1,\"op\":\"deliver\",\"session\":{\"uid\":5,\"user\":\"u\"," \
	"\"issuer\":\"\",\"expires\":9,\"chain\":\"" "-----BEGIN CERTIFICATE-----" "\"," \
	"\"key\":\"-----BEGIN PRIVATE KEY-----\"" extra "}}"

static void
test_bad_requests(void **state)
{
	static char big[KH_RELAY_MSG_MAX + 16];

	(void)state;
	/* The well-formed base the cases below break. */
	{
		struct kh_relay_request d;
		kh_error err;

		assert_int_equal(kh_relay_request_decode(S(""), strlen(S("")), &d, &err), 0);
		kh_relay_request_clear(&d);
	}
	expect_bad_request("", "empty");
	expect_bad_request("[]", "must be a JSON object");
	expect_bad_request("{\"v\":1,\"op\":\"list\",\"op\":\"list\"}", "not valid JSON");
	expect_bad_request("{\"v\":2,\"op\":\"list\"}", "version 2");
	expect_bad_request("{\"op\":\"list\"}", "v is missing");
	expect_bad_request("{\"v\":1}", "op is missing");
	expect_bad_request("{\"v\":1,\"op\":\"reboot\"}", "unknown relay operation");
	expect_bad_request("{\"v\":1,\"op\":\"list\",\"uid\":1}", "unknown field \"uid\"");
	expect_bad_request("{\"v\":1,\"op\":\"deliver\"}", "deliver without a session");
	expect_bad_request(S(",\"pin\":\"1234\""), "unknown field \"pin\"");
	expect_bad_request("{\"v\":1,\"op\":\"forget\",\"uid\":-1}", "uid is out of range");
	expect_bad_request("{\"v\":1,\"op\":\"forget\",\"uid\":4294967295}", "uid is out of range");
	expect_bad_request("{\"v\":1,\"op\":\"forget\",\"uid\":\"0\"}", "uid must be an integer");
	expect_bad_request("{\"v\":1,\"op\":\"forget\",\"issuer\":\"a/b\"}", "not an issuer id");
	expect_bad_request("{\"v\":1,\"op\":\"forget\",\"reason\":\"because\"}",
			   "reason must be \"logout\" or \"revoked\"");
	expect_bad_request("{\"v\":1,\"op\":\"deliver\",\"session\":{\"uid\":5,\"user\":\"\","
			   "\"issuer\":\"\",\"expires\":9,\"chain\":\"-----BEGIN CERTIFICATE-----\","
			   "\"key\":\"-----BEGIN PRIVATE KEY-----\"}}", "user has a bad length");
	expect_bad_request("{\"v\":1,\"op\":\"deliver\",\"session\":{\"uid\":5,\"user\":\"a\\nb\","
			   "\"issuer\":\"\",\"expires\":9,\"chain\":\"-----BEGIN CERTIFICATE-----\","
			   "\"key\":\"-----BEGIN PRIVATE KEY-----\"}}", "control character");
	expect_bad_request("{\"v\":1,\"op\":\"deliver\",\"session\":{\"uid\":5,\"user\":\"u\","
			   "\"issuer\":\"\",\"expires\":9,\"chain\":\"x\","
			   "\"key\":\"-----BEGIN PRIVATE KEY-----\"}}", "chain is not certificate PEM");
	expect_bad_request("{\"v\":1,\"op\":\"deliver\",\"session\":{\"uid\":5,\"user\":\"u\","
			   "\"issuer\":\"\",\"expires\":9,\"chain\":\"-----BEGIN CERTIFICATE-----\","
			   "\"key\":\"x\"}}", "key is not private key PEM");
	expect_bad_request("{\"v\":1,\"op\":\"deliver\",\"session\":{\"uid\":5,\"user\":\"u\","
			   "\"issuer\":\"\",\"expires\":0,\"chain\":\"-----BEGIN CERTIFICATE-----\","
			   "\"key\":\"-----BEGIN PRIVATE KEY-----\"}}", "expires is out of range");
	memset(big, ' ', sizeof(big) - 1);
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	expect_bad_request(big, "too large");
}

static void
test_bad_replies(void **state)
{
	struct kh_relay_reply d;
	kh_error err;

	(void)state;
	static const char *no_error = "{\"v\":1,\"ok\":false}";
	static const char *bad_ok = "{\"v\":1,\"ok\":1}";
	static const char *short_list = "{\"v\":1,\"ok\":true,\"list\":[{\"uid\":1}]}";

	assert_int_equal(kh_relay_reply_decode(no_error, strlen(no_error), &d, &err), -1);
	assert_non_null(strstr(err.msg, "error is missing"));
	assert_int_equal(kh_relay_reply_decode(bad_ok, strlen(bad_ok), &d, &err), -1);
	assert_non_null(strstr(err.msg, "ok must be true or false"));
	assert_int_equal(kh_relay_reply_decode(short_list, strlen(short_list), &d, &err), -1);
	assert_non_null(strstr(err.msg, "missing"));
	assert_null(d.list);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_round_trip),
		cmocka_unit_test(test_session_origin),
		cmocka_unit_test(test_requests_round_trip),
		cmocka_unit_test(test_reply_round_trip),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_bad_replies),
	};

	kh_json_wipe_on_free(true);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
