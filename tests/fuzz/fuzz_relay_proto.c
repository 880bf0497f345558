/* libFuzzer target: the kubehsm-relayd control protocol
 * (lib/kh_relay_proto.c).  Each input is decoded as a request, a reply
 * and a stored session.  What a decoder accepts, its encoder must print
 * (a re-encoding is never larger than the compact JSON it came from, so
 * it fits the same limit), and what it prints must decode to what prints
 * the same again: encode(decode(encode(decode(x)))) == encode(decode(x)).
 * Wiping jansson's blocks is on, as in kubehsm-relayd. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kh_json.h"
#include "lib/kh_mem.h"
#include "lib/kh_relay_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static void
fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_relay_proto: %s%s%s\n", what, detail != NULL ? ": " : "",
		detail != NULL ? detail : "");
	abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	kh_json_wipe_on_free(true);
	return 0;
}

/* A refusal is one line that says something. */
static void
check_refusal(const kh_error *err)
{
	if (err->msg[0] == '\0' || strchr(err->msg, '\n') != NULL)
		fail("a refusal without a one-line reason", err->msg);
}

/* The two encodings must be byte for byte the same. */
static void
check_same(const char *what, const char *a, size_t alen, const char *b, size_t blen)
{
	if (alen != blen || memcmp(a, b, alen) != 0)
		fail(what, "prints otherwise after a round trip");
}

static void
fuzz_request(const char *buf, size_t len)
{
	struct kh_relay_request req, again;
	char *out = NULL, *out2 = NULL;
	size_t olen = 0, olen2 = 0;
	kh_error err = { 0 };

	if (kh_relay_request_decode(buf, len, &req, &err) != 0) {
		check_refusal(&err);
		return;
	}
	if (req.op == KH_RELAY_OP_NONE || strcmp(kh_relay_op_name(req.op), "?") == 0 ||
	    strcmp(kh_relay_reason_name(req.reason), "?") == 0)
		fail("a request accepted with an operation or reason it cannot name", NULL);
	if (kh_relay_request_encode(&req, &out, &olen, &err) != 0)
		fail("a request accepted that cannot be printed", err.msg);
	if (olen > len)
		fail("a request prints larger than it came", out);
	if (kh_relay_request_decode(out, olen, &again, &err) != 0)
		fail("a printed request is refused", err.msg);
	if (again.op != req.op || again.has_uid != req.has_uid || again.uid != req.uid ||
	    again.reason != req.reason)
		fail("a printed request decodes to another", out);
	if (kh_relay_request_encode(&again, &out2, &olen2, &err) != 0)
		fail("a request decoded from its printing cannot be printed", err.msg);
	check_same("request", out, olen, out2, olen2);
	kh_secure_free(out, olen);
	kh_secure_free(out2, olen2);
	kh_relay_request_clear(&again);
	kh_relay_request_clear(&req);
}

static void
fuzz_reply(const char *buf, size_t len)
{
	struct kh_relay_reply rep, again;
	char *out = NULL, *out2 = NULL;
	size_t olen = 0, olen2 = 0;
	kh_error err = { 0 };

	if (kh_relay_reply_decode(buf, len, &rep, &err) != 0) {
		check_refusal(&err);
		return;
	}
	if ((!rep.ok && rep.error == NULL) || (!rep.has_list && rep.nlist != 0))
		fail("a reply accepted with a missing member", NULL);
	if (kh_relay_reply_encode(&rep, &out, &olen, &err) != 0)
		fail("a reply accepted that cannot be printed", err.msg);
	if (olen > len)
		fail("a reply prints larger than it came", out);
	if (kh_relay_reply_decode(out, olen, &again, &err) != 0)
		fail("a printed reply is refused", err.msg);
	if (again.ok != rep.ok || again.nlist != rep.nlist || again.has_list != rep.has_list ||
	    again.has_counts != rep.has_counts ||
	    (rep.has_counts && (again.sessions != rep.sessions ||
				again.connections != rep.connections)))
		fail("a printed reply decodes to another", out);
	if (kh_relay_reply_encode(&again, &out2, &olen2, &err) != 0)
		fail("a reply decoded from its printing cannot be printed", err.msg);
	check_same("reply", out, olen, out2, olen2);
	kh_secure_free(out, olen);
	kh_secure_free(out2, olen2);
	kh_relay_reply_clear(&again);
	kh_relay_reply_clear(&rep);
}

static void
fuzz_session(const char *buf, size_t len)
{
	struct kh_relay_session s, again;
	char *out = NULL, *out2 = NULL;
	size_t olen = 0, olen2 = 0;
	kh_error err = { 0 };

	if (kh_relay_session_decode(buf, len, &s, &err) != 0) {
		check_refusal(&err);
		return;
	}
	if (s.user == NULL || s.issuer == NULL || s.chain_pem == NULL || s.key_pem == NULL ||
	    s.expires <= 0)
		fail("a session accepted with a missing member", NULL);
	if (kh_relay_session_encode(&s, &out, &olen, &err) != 0)
		fail("a session accepted that cannot be printed", err.msg);
	if (olen > len)
		fail("a session prints larger than it came", NULL);
	if (kh_relay_session_decode(out, olen, &again, &err) != 0)
		fail("a printed session is refused", err.msg);
	if (again.uid != s.uid || again.expires != s.expires || again.delivered != s.delivered ||
	    strcmp(again.user, s.user) != 0 || strcmp(again.issuer, s.issuer) != 0 ||
	    strcmp(again.chain_pem, s.chain_pem) != 0 || strcmp(again.key_pem, s.key_pem) != 0)
		fail("a printed session decodes to another", NULL);
	if (kh_relay_session_encode(&again, &out2, &olen2, &err) != 0)
		fail("a session decoded from its printing cannot be printed", err.msg);
	check_same("session", out, olen, out2, olen2);
	kh_secure_free(out, olen);
	kh_secure_free(out2, olen2);
	kh_relay_session_clear(&again);
	kh_relay_session_clear(&s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;

	fuzz_request(buf, size);
	fuzz_reply(buf, size);
	fuzz_session(buf, size);
	return 0;
}
