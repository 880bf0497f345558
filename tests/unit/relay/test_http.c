/*
 * Unit tests for relay/kh_rhttp: the request heads kubehsm-relayd passes
 * on and the ones it answers with a 400 (never reaching the API server),
 * message boundaries for pipelining, and response framing.
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

#include "relay/kh_rhttp.h"

static char target[KH_RHTTP_TARGET_MAX + 1];

/* Feed a whole request; the events in order as letters (H head, D done,
 * B bad, M more) and the bytes each consumed. */
static enum kh_rhttp_ev
feed_all(struct kh_rhttp *h, const char *s, size_t len, char *trace, size_t *consumed)
{
	enum kh_rhttp_ev ev = KH_RHTTP_MORE;
	size_t off = 0, used, t = 0;

	while (off < len) {
		ev = kh_rhttp_feed(h, s + off, len - off, &used);
		off += used;
		trace[t++] = "MHDB"[ev];
		if (ev == KH_RHTTP_BAD || (ev == KH_RHTTP_MORE && used == 0))
			break;
		if (ev == KH_RHTTP_DONE && kh_rhttp_upgrade(h))
			break;
	}
	trace[t] = '\0';
	*consumed = off;
	return ev;
}

static void
req_all(struct kh_rhttp *h, const char *s, char *trace, size_t *used)
{
	(void)feed_all(h, s, strlen(s), trace, used);
}

static const char *
bad_reason(const char *req)
{
	struct kh_rhttp h;
	char trace[64];
	size_t used;

	kh_rhttp_init_request(&h, target);
	if (feed_all(&h, req, strlen(req), trace, &used) != KH_RHTTP_BAD)
		return NULL;
	return h.why;
}

static void
test_simple_get(void **state)
{
	static const char req[] = "GET /api/v1/namespaces/default/pods?limit=500 HTTP/1.1\r\n"
				  "Host: 127.0.0.1:644\r\nAccept: application/json\r\n\r\n";
	struct kh_rhttp h;
	char trace[64];
	size_t used;

	(void)state;
	kh_rhttp_init_request(&h, target);
	assert_int_equal(feed_all(&h, req, sizeof(req) - 1, trace, &used), KH_RHTTP_DONE);
	assert_string_equal(trace, "HD");
	assert_int_equal(used, sizeof(req) - 1);
	assert_string_equal(kh_rhttp_method(&h), "GET");
	assert_string_equal(h.target, "/api/v1/namespaces/default/pods?limit=500");
	assert_true(kh_rhttp_keep_alive(&h));
	assert_false(kh_rhttp_upgrade(&h));
	assert_false(kh_rhttp_is_watch(&h));
}

static void
test_head_then_body(void **state)
{
	static const char req[] = "POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n"
				  "Content-Length: 5\r\n\r\nhello";
	struct kh_rhttp h;
	size_t used, off;

	(void)state;
	kh_rhttp_init_request(&h, target);
	assert_int_equal(kh_rhttp_feed(&h, req, sizeof(req) - 1, &used), KH_RHTTP_HEAD);
	/* The head ends at its last LF; the body is parsed for framing only. */
	assert_true(used < sizeof(req) - 1 - 5);
	off = used;
	assert_int_equal(kh_rhttp_feed(&h, req + off, 3, &used), KH_RHTTP_MORE);
	off += used;
	assert_int_equal(kh_rhttp_feed(&h, req + off, sizeof(req) - 1 - off, &used),
			 KH_RHTTP_DONE);
	assert_int_equal(off + used, sizeof(req) - 1);
}

static void
test_pipelined_in_order(void **state)
{
	static const char req[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
				  "POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
				  "3\r\nabc\r\n0\r\n\r\n"
				  "GET /c HTTP/1.1\r\nHost: x\r\n\r\n";
	const char *want[] = { "/a", "/b", "/c" };
	struct kh_rhttp h;
	size_t off = 0, used, n = 0;
	enum kh_rhttp_ev ev;

	(void)state;
	kh_rhttp_init_request(&h, target);
	while (off < sizeof(req) - 1) {
		ev = kh_rhttp_feed(&h, req + off, sizeof(req) - 1 - off, &used);
		off += used;
		assert_int_not_equal(ev, KH_RHTTP_BAD);
		if (ev == KH_RHTTP_HEAD) {
			assert_true(n < 3);
			assert_string_equal(h.target, want[n]);
			n++;
		}
	}
	assert_int_equal(n, 3);
	assert_int_equal(h.ev, KH_RHTTP_DONE);
}

/* The heads after the first on a connection are held to the same rules
 * (tests/fuzz/fuzz_rhttp found them read unchecked when they started in
 * the feed after the previous message's end). */
static void
test_pipelined_heads_checked(void **state)
{
	(void)state;
	assert_string_equal(bad_reason("GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
				       "GET /b HTTP/1.1\r\nHost: x\nX: y\r\n\r\n"),
			    "a line ends in a bare LF");
	assert_string_equal(bad_reason("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nz"
				       "GET /b HTTP/1.1\r\nHost: x\r\nX: y\r\n z\r\n\r\n"),
			    "a header line is folded (obs-fold)");
}

/* An Upgrade request with a body ends with its body, however the body
 * arrives (tests/fuzz/fuzz_rhttp found the relay ending it, and so
 * tunnelling the rest unread, at the end of the first read after the
 * head). */
static void
test_upgrade_body_in_pieces(void **state)
{
	static const char head[] = "GET /api/v1/namespaces/d/pods/p/exec HTTP/1.1\r\nHost: x\r\n"
				   "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n";
	struct kh_rhttp h;
	size_t used, off = 0;

	(void)state;
	kh_rhttp_init_request(&h, target);
	assert_int_equal(kh_rhttp_feed(&h, head, sizeof(head) - 1, &used), KH_RHTTP_HEAD);
	off = used;
	assert_int_equal(kh_rhttp_feed(&h, head + off, sizeof(head) - 1 - off, &used), KH_RHTTP_MORE);
	assert_int_equal(kh_rhttp_feed(&h, "3\r\nabc\r\n", 8, &used), KH_RHTTP_MORE);
	assert_int_equal(used, 8);
	assert_int_equal(kh_rhttp_feed(&h, "0\r\n\r\nSPDY", 9, &used), KH_RHTTP_DONE);
	assert_int_equal(used, 5);
	assert_true(kh_rhttp_upgrade(&h));
}

static void
test_byte_at_a_time(void **state)
{
	static const char req[] = "GET /version HTTP/1.1\r\nHost: x\r\nUser-Agent: k\r\n\r\n";
	struct kh_rhttp h;
	size_t i, used;
	int heads = 0, dones = 0;

	(void)state;
	kh_rhttp_init_request(&h, target);
	for (i = 0; i < sizeof(req) - 1;) {
		enum kh_rhttp_ev ev = kh_rhttp_feed(&h, req + i, 1, &used);

		assert_int_not_equal(ev, KH_RHTTP_BAD);
		heads += ev == KH_RHTTP_HEAD;
		dones += ev == KH_RHTTP_DONE;
		i += used;
	}
	assert_int_equal(heads, 1);
	assert_int_equal(dones, 1);
	assert_string_equal(h.target, "/version");
}

static void
test_smuggling_refused(void **state)
{
	(void)state;
	/* Both framings: the API server might pick the other one. */
	assert_non_null(bad_reason("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
	assert_non_null(bad_reason("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
				   "Content-Length: 4\r\n\r\n0\r\n\r\n"));
	/* An empty header before: still counted as what it is. */
	assert_non_null(bad_reason("POST / HTTP/1.1\r\nX-Empty:\r\nTransfer-Encoding: chunked\r\n"
				   "Content-Length: 4\r\n\r\n0\r\n\r\n"));
	assert_non_null(bad_reason("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
				   "Content-Length: 5\r\n\r\nabcde"));
	assert_non_null(bad_reason("POST / HTTP/1.1\r\nHost: x\r\n"
				   "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"));
	assert_non_null(bad_reason("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
	assert_non_null(bad_reason("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n"
				   "\r\n"));
	/* The one chunked form passes. */
	assert_null(bad_reason("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n"
			       "0\r\n\r\n"));
}

static void
test_obs_fold_and_bare_lf_refused(void **state)
{
	(void)state;
	assert_string_equal(bad_reason("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n"),
			    "a header line is folded (obs-fold)");
	assert_string_equal(bad_reason("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\tb\r\n\r\n"),
			    "a header line is folded (obs-fold)");
	assert_string_equal(bad_reason("GET / HTTP/1.1\nHost: x\r\n\r\n"),
			    "a line ends in a bare LF");
	assert_string_equal(bad_reason("GET / HTTP/1.1\r\nHost: x\n\n"), "a line ends in a bare LF");
}

static void
test_oversized_and_odd_heads_refused(void **state)
{
	char *big = malloc(KH_RHTTP_HEAD_MAX + 200);
	size_t n;

	(void)state;
	assert_non_null(big);
	n = (size_t)snprintf(big, 64, "GET / HTTP/1.1\r\nX-Big: ");
	memset(big + n, 'a', KH_RHTTP_HEAD_MAX);
	n += KH_RHTTP_HEAD_MAX;
	memcpy(big + n, "\r\n\r\n", 5);
	assert_string_equal(bad_reason(big), "the request head is too large");
	/* Even when it never ends. */
	big[n] = '\0';
	assert_string_equal(bad_reason(big), "the request head is too large");
	free(big);
	assert_non_null(bad_reason("CONNECT 10.0.0.1:443 HTTP/1.1\r\nHost: x\r\n\r\n"));
	assert_non_null(bad_reason("GET http://evil/ HTTP/1.1\r\nHost: x\r\n\r\n"));
	assert_non_null(bad_reason("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"));
	assert_non_null(bad_reason("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
	assert_non_null(bad_reason("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"));
	assert_non_null(bad_reason("GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n"));
	assert_non_null(bad_reason("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n"
				   "Content-Length: 3\r\n\r\nabc"));
	assert_non_null(bad_reason("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"));
}

static void
test_upgrade_and_watch(void **state)
{
	static const char req[] = "GET /api/v1/namespaces/default/pods/p/exec?command=cat HTTP/1.1\r\n"
				  "Host: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n"
				  "tunnel bytes";
	struct kh_rhttp h;
	char trace[64];
	size_t used;

	(void)state;
	kh_rhttp_init_request(&h, target);
	assert_int_equal(feed_all(&h, req, sizeof(req) - 1, trace, &used), KH_RHTTP_DONE);
	assert_true(kh_rhttp_upgrade(&h));
	assert_int_equal(used, sizeof(req) - 1 - strlen("tunnel bytes"));
	kh_rhttp_init_request(&h, target);
	req_all(&h, "GET /api/v1/namespaces?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n",
		       trace, &used);
	assert_true(kh_rhttp_is_watch(&h));
	kh_rhttp_init_request(&h, target);
	req_all(&h, "GET /api/v1/pods?a=b&watch=true HTTP/1.1\r\nHost: x\r\n\r\n",
		       trace, &used);
	assert_true(kh_rhttp_is_watch(&h));
	kh_rhttp_init_request(&h, target);
	req_all(&h, "GET /api/v1/pods?nowatch=1 HTTP/1.1\r\nHost: x\r\n\r\n",
		       trace, &used);
	assert_false(kh_rhttp_is_watch(&h));
}

static void
test_http10_not_kept_alive(void **state)
{
	struct kh_rhttp h;
	char trace[64];
	size_t used;

	(void)state;
	kh_rhttp_init_request(&h, target);
	req_all(&h, "GET / HTTP/1.0\r\nHost: x\r\n\r\n", trace, &used);
	assert_false(kh_rhttp_keep_alive(&h));
	kh_rhttp_init_request(&h, target);
	req_all(&h, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", trace, &used);
	assert_int_equal(h.ev, KH_RHTTP_DONE);
	assert_false(kh_rhttp_keep_alive(&h));
}

/* What Go's net/http (kube-apiserver) reads otherwise than http-parser. */
static void
test_go_differences_refused(void **state)
{
	(void)state;
	/* Go ignores Transfer-Encoding on 1.0: the "body" would be requests. */
	assert_string_equal(bad_reason("POST / HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n"
				       "Transfer-Encoding: chunked\r\n\r\n"
				       "3c\r\nGET /api/v1/namespaces/kube-system/secrets HTTP/1.1\r\n"
				       "Host: x\r\n\r\n\r\n0\r\n\r\n"),
			    "Transfer-Encoding on an HTTP/1.0 request");
	assert_string_equal(bad_reason("POST / HTTP/1.0\r\nTransfer-Encoding: gzip\r\n\r\n"),
			    "Transfer-Encoding on an HTTP/1.0 request");
	assert_string_equal(bad_reason("GET /e HTTP/1.0\r\nConnection: Upgrade\r\n"
				       "Upgrade: websocket\r\n\r\n"),
			    "an Upgrade on an HTTP/1.0 request");
	assert_non_null(bad_reason("GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n"));
	assert_non_null(bad_reason("GET / HTTP/1.1\r\nHost: x\r\n\rX: b\r\n\r\n"));
	assert_non_null(bad_reason("GET / HTTP/1.1\r\nHost: x\r\n\r\r\n"));
	assert_non_null(bad_reason("GET / HTTP/1.1\r\nHost: x\r\nX: a\x01\r\n\r\n"));
	assert_non_null(bad_reason("GET / HTTP/1.1\r\nHost: x\r\nX: a\x7f\r\n\r\n"));
	assert_non_null(bad_reason("GET / HTTP/1.1\r\nHost: x\r\nX: a\x0c\r\n\r\n"));
	assert_string_equal(bad_reason("\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"),
			    "an empty line before the request line");
	assert_string_equal(bad_reason("GET  / HTTP/1.1\r\nHost: x\r\n\r\n"),
			    "a request line other than METHOD SP PATH SP HTTP/1.x");
	assert_non_null(bad_reason("GET / HTTP/1.01\r\nHost: x\r\n\r\n"));
	assert_non_null(bad_reason("GET / HTTP/1.2\r\nHost: x\r\n\r\n"));
	assert_non_null(bad_reason("GET /\x80 HTTP/1.1\r\nHost: x\r\n\r\n"));
	assert_string_equal(bad_reason("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"),
			    "an HTTP/1.1 request needs exactly one Host header");
	assert_non_null(bad_reason("GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n"));
	assert_non_null(bad_reason("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\nabc"));
	assert_non_null(bad_reason("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n"));
	assert_non_null(bad_reason("POST / HTTP/1.1\r\nHost: x\r\n"
				   "Content-Length: 9223372036854775808\r\n\r\n"));
	/* Trailers: Go reads them by rules of its own. */
	assert_string_equal(bad_reason("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
				       "\r\n1\r\na\r\n0\r\nX: y\r\n\r\n"),
			    "trailer fields after a chunked body");
	/* What clients send passes: 1.0 without a Host, OWS around values. */
	assert_null(bad_reason("GET / HTTP/1.0\r\n\r\n"));
	assert_null(bad_reason("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:  3 \r\n\r\nabc"));
	assert_null(bad_reason("GET /a?b=%20c HTTP/1.1\r\nHost: x\r\nUser-Agent: k\xc3\xa9\r\n\r\n"));
}

static void
test_responses(void **state)
{
	static const char r1[] = "HTTP/1.1 100 Continue\r\n\r\n"
				 "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
	static const char r2[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				 "5\r\nhello\r\n0\r\n\r\n";
	static const char r3[] = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
				 "Upgrade: websocket\r\n\r\n\x81\x05hello";
	static const char r4[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
	struct kh_rhttp h;
	char trace[64];
	size_t used;

	(void)state;
	kh_rhttp_init_response(&h, false);
	assert_int_equal(feed_all(&h, r1, sizeof(r1) - 1, trace, &used), KH_RHTTP_DONE);
	assert_int_equal(kh_rhttp_status(&h), 200);
	assert_int_equal(used, sizeof(r1) - 1);
	kh_rhttp_init_response(&h, false);
	assert_int_equal(feed_all(&h, r2, sizeof(r2) - 1, trace, &used), KH_RHTTP_DONE);
	assert_int_equal(used, sizeof(r2) - 1);
	kh_rhttp_init_response(&h, false);
	assert_int_equal(feed_all(&h, r3, sizeof(r3) - 1, trace, &used), KH_RHTTP_DONE);
	assert_true(kh_rhttp_upgrade(&h));
	assert_int_equal(kh_rhttp_status(&h), 101);
	assert_int_equal(used, sizeof(r3) - 1 - 7);
	/* A HEAD's answer carries a length but no body. */
	kh_rhttp_init_response(&h, true);
	assert_int_equal(feed_all(&h, r4, sizeof(r4) - 1, trace, &used), KH_RHTTP_DONE);
	/* No length, not chunked: the body ends with the connection. */
	kh_rhttp_init_response(&h, false);
	assert_int_equal(feed_all(&h, "HTTP/1.1 200 OK\r\n\r\nsome", 23, trace, &used),
			 KH_RHTTP_MORE);
	assert_true(kh_rhttp_until_eof(&h));
	assert_int_equal(kh_rhttp_eof(&h), KH_RHTTP_DONE);
	/* Cut short: not a complete answer. */
	kh_rhttp_init_response(&h, false);
	req_all(&h, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", trace, &used);
	assert_int_equal(kh_rhttp_eof(&h), KH_RHTTP_BAD);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple_get),
		cmocka_unit_test(test_head_then_body),
		cmocka_unit_test(test_pipelined_in_order),
		cmocka_unit_test(test_pipelined_heads_checked),
		cmocka_unit_test(test_upgrade_body_in_pieces),
		cmocka_unit_test(test_byte_at_a_time),
		cmocka_unit_test(test_smuggling_refused),
		cmocka_unit_test(test_obs_fold_and_bare_lf_refused),
		cmocka_unit_test(test_oversized_and_odd_heads_refused),
		cmocka_unit_test(test_upgrade_and_watch),
		cmocka_unit_test(test_http10_not_kept_alive),
		cmocka_unit_test(test_go_differences_refused),
		cmocka_unit_test(test_responses),
	};

	return cmocka_run_group_tests_name("relay/kh_rhttp", tests, NULL, NULL);
}
