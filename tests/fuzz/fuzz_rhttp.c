/* libFuzzer target: what kubehsm-relayd reads of HTTP (relay/kh_rhttp.c).
 *
 * The input is a byte stream.  Read as a kube client's requests, the way
 * relay/kh_rconn.c reads them (feed, act on the event, feed the rest),
 * twice: whole, and as it arrives in pieces of 1 to 16 bytes (where a
 * read ends is TCP's choice, and an attacker's).  Both readings must see
 * the same events, heads, methods and targets.  Every head the
 * relay passes on must also read the same to Go's net/http, which
 * kube-apiserver parses with: its bytes are read here the plain way Go
 * does (lines end in CRLF, the request line splits at its two spaces,
 * framing from Content-Length or Transfer-Encoding) and must give the
 * method and target the relay audits and no framing the two could read
 * differently.  Then the same bytes are read as an API server's answer,
 * with and without a body, whole and in pieces, the way the relay does
 * (up to the end of the first final answer, or the connection's).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "relay/kh_rhttp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char target[KH_RHTTP_TARGET_MAX + 1];
/* KH_FUZZ_VERBOSE set: each reading's events on stderr (to read a crash). */
static int verbose = -1;

static void
fail(const char *what)
{
	fprintf(stderr, "fuzz_rhttp: %s\n", what);
	abort();
}

/* What one reading saw: a hash of its events but KH_RHTTP_MORE (how many
 * of those there are depends on the pieces). */
struct seen {
	uint64_t hash;
	size_t events;
};

static void
mix(struct seen *s, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		s->hash ^= b[i];
		s->hash *= 0x100000001b3ULL;
	}
}

static void
mix_str(struct seen *s, const char *str)
{
	mix(s, str, strlen(str) + 1);
}

/* Where the stream is cut: a generator seeded from the input itself, so
 * that a crash reproduces from the input alone. */
static uint64_t
seed_of(const uint8_t *d, size_t n)
{
	struct seen s = { 0xcbf29ce484222325ULL, 0 };

	mix(&s, d, n);
	return s.hash | 1;
}

static size_t
next_piece(uint64_t *rng)
{
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return 1 + (size_t)(*rng % 16);
}

/* ---- Go's reading of a head the relay passed on ---- */

static bool
is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* [s, s+n) without the spaces and tabs around it. */
static const char *
trim(const char *s, size_t *n)
{
	while (*n > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		(*n)--;
	}
	while (*n > 0 && (s[*n - 1] == ' ' || s[*n - 1] == '\t'))
		(*n)--;
	return s;
}

static bool
equals_ci(const char *s, size_t n, const char *word)
{
	return n == strlen(word) && strncasecmp(s, word, n) == 0;
}

/* The request line: METHOD SP TARGET SP PROTO, split where Go splits it
 * (at the first space, then the next); *http11 from PROTO. */
static void
check_request_line(const struct kh_rhttp *h, const char *line, size_t n, bool *http11)
{
	const char *sp1 = memchr(line, ' ', n), *sp2, *proto;
	size_t tlen, plen;

	if (sp1 == NULL)
		fail("a head passed on without a space in its request line");
	sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - line));
	if (sp2 == NULL)
		fail("a head passed on without a protocol in its request line");
	if ((size_t)(sp1 - line) != strlen(kh_rhttp_method(h)) ||
	    memcmp(line, kh_rhttp_method(h), (size_t)(sp1 - line)) != 0)
		fail("the method audited is not the request line's");
	tlen = (size_t)(sp2 - sp1 - 1);
	if (tlen <= KH_RHTTP_TARGET_MAX &&
	    (tlen != h->target_len || memcmp(sp1 + 1, h->target, tlen) != 0))
		fail("the target audited is not the request line's");
	proto = sp2 + 1;
	plen = n - (size_t)(proto - line);
	*http11 = plen == 8 && memcmp(proto, "HTTP/1.1", 8) == 0;
	if (!*http11 && !(plen == 8 && memcmp(proto, "HTTP/1.0", 8) == 0))
		fail("a head passed on whose protocol Go reads as another than HTTP/1.0 or 1.1");
}

/*
 * head: from the first byte of the message to the end of its empty line.
 * Go reads each header line to its CRLF, the name up to the colon, and
 * takes the body's length from Content-Length or Transfer-Encoding:
 * chunked, the latter only from HTTP/1.1 on.
 */
static void
check_head(const struct kh_rhttp *h, const char *head, size_t n)
{
	const char *line = head, *end = head + n;
	size_t ncl = 0, nte = 0, lineno = 0;
	bool http11 = false, chunked = false;

	if (n < 4 || memcmp(end - 4, "\r\n\r\n", 4) != 0)
		fail("a head passed on that does not end in CRLF CRLF");
	for (size_t i = 0; i < n; i++) {
		if (head[i] == '\r' && (i + 1 == n || head[i + 1] != '\n'))
			fail("a head passed on with a CR not followed by LF");
		if (head[i] == '\n' && (i == 0 || head[i - 1] != '\r'))
			fail("a head passed on with a bare LF");
	}
	for (; line < end - 2; lineno++) {
		const char *eol = memchr(line, '\r', (size_t)(end - line));
		size_t len = (size_t)(eol - line);
		const char *colon, *v;
		size_t vlen;

		if (lineno == 0) {
			check_request_line(h, line, len, &http11);
			line = eol + 2;
			continue;
		}
		if (len == 0)
			fail("a head passed on with an empty line inside");
		if (line[0] == ' ' || line[0] == '\t')
			fail("a head passed on with a folded line");
		colon = memchr(line, ':', len);
		if (colon == NULL || colon == line)
			fail("a head passed on with a header line without a name");
		for (const char *c = line; c < colon; c++)
			if (!is_tchar((unsigned char)*c))
				fail("a head passed on with a header name that is not a token");
		vlen = len - (size_t)(colon + 1 - line);
		v = trim(colon + 1, &vlen);
		if (equals_ci(line, (size_t)(colon - line), "content-length")) {
			ncl++;
			for (size_t i = 0; i < vlen; i++)
				if (v[i] < '0' || v[i] > '9')
					fail("a head passed on with a Content-Length not all digits");
			if (vlen == 0)
				fail("a head passed on with an empty Content-Length");
		} else if (equals_ci(line, (size_t)(colon - line), "transfer-encoding")) {
			nte++;
			chunked = equals_ci(v, vlen, "chunked");
		}
		line = eol + 2;
	}
	if (ncl > 1 || nte > 1 || (ncl > 0 && nte > 0))
		fail("a head passed on with more than one framing header");
	if (nte > 0 && !chunked)
		fail("a head passed on with a Transfer-Encoding other than chunked");
	if (nte > 0 && !http11)
		fail("a head passed on with a Transfer-Encoding Go ignores (HTTP/1.0)");
}

/* ---- the readings ---- */

static void
seen_head(struct seen *s, const struct kh_rhttp *h)
{
	unsigned char flags[3] = { kh_rhttp_upgrade(h), kh_rhttp_keep_alive(h),
				   kh_rhttp_is_watch(h) };

	if (h->response) {
		unsigned status = kh_rhttp_status(h);

		mix(s, &status, sizeof(status));
	} else {
		if (strcmp(kh_rhttp_method(h), "CONNECT") == 0)
			fail("a CONNECT passed on");
		if (h->target_len > KH_RHTTP_TARGET_MAX || strlen(h->target) != h->target_len ||
		    h->target[0] != '/')
			fail("a target audited that is not a path of its length");
		mix_str(s, kh_rhttp_method(h));
		mix_str(s, h->target);
	}
	mix(s, flags, sizeof(flags));
}

/*
 * Read d[0, n) through h; pieces: as it arrives in pieces, else all at
 * once.  Requests: every message, to the end, a refusal or an Upgrade.
 * Answers: to the first final one (the relay reads one per request).
 */
static void
read_stream(struct kh_rhttp *h, const uint8_t *d, size_t n, bool pieces, struct seen *s)
{
	const char *buf = (const char *)d;
	uint64_t rng = seed_of(d, n);
	size_t pos = 0, avail = pieces ? 0 : n, msg = 0, steps = 0;
	enum kh_rhttp_ev ev;

	for (;;) {
		size_t used;

		if (pos == avail) {
			if (avail == n)
				break;
			avail += next_piece(&rng);
			if (avail > n)
				avail = n;
		}
		if (++steps > 4 * n + 16)
			fail("no progress");
		ev = kh_rhttp_feed(h, buf + pos, avail - pos, &used);
		if (used > avail - pos)
			fail("consumed more than it was given");
		pos += used;
		if (ev == KH_RHTTP_MORE) {
			if (pos != avail)
				fail("stopped without an event before the end of what it was given");
			continue;
		}
		mix(s, &ev, sizeof(ev));
		s->events++;
		if (verbose)
			fprintf(stderr, "%s %s at %zu: %c %s %s\n", h->response ? "answer" : "request",
				pieces ? "in pieces" : "whole", pos, "MHDB"[ev],
				ev == KH_RHTTP_BAD ? h->why : "",
				ev == KH_RHTTP_HEAD && !h->response ? h->target : "");
		if (ev == KH_RHTTP_BAD) {
			/* (Not which reason: that depends on which check meets
			 * the byte first, the parser's or the relay's.) */
			if (h->why == NULL || h->why[0] == '\0')
				fail("refused without a reason");
			return;
		}
		if (ev == KH_RHTTP_HEAD) {
			seen_head(s, h);
			/* The parser stops on the head's last byte and reads it again. */
			if (!h->response && !pieces && pos < n)
				check_head(h, buf + msg, pos + 1 - msg);
			continue;
		}
		/* KH_RHTTP_DONE */
		if (kh_rhttp_upgrade(h) || h->response)
			return;
		msg = pos;
	}
	if (h->response) {
		ev = kh_rhttp_eof(h);
		mix(s, &ev, sizeof(ev));
	}
}

static void
read_twice(bool response, bool skip_body, const uint8_t *d, size_t n)
{
	struct seen whole = { 0xcbf29ce484222325ULL, 0 }, pieces = whole;
	struct kh_rhttp h;

	if (response)
		kh_rhttp_init_response(&h, skip_body);
	else
		kh_rhttp_init_request(&h, target);
	read_stream(&h, d, n, false, &whole);
	if (response)
		kh_rhttp_init_response(&h, skip_body);
	else
		kh_rhttp_init_request(&h, target);
	read_stream(&h, d, n, true, &pieces);
	if (whole.hash != pieces.hash || whole.events != pieces.events)
		fail(response ? "an answer reads otherwise when it arrives in pieces"
			      : "a request stream reads otherwise when it arrives in pieces");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (verbose < 0)
		verbose = getenv("KH_FUZZ_VERBOSE") != NULL;
	read_twice(false, false, data, size);
	read_twice(true, false, data, size);
	read_twice(true, true, data, size);
	return 0;
}
