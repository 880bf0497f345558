/*
 * kh_rhttp — what kubehsm-relayd reads of HTTP/1.1: the heads, never a body.
 *
 * Debian's http-parser (nodejs/http-parser 2.9) does the parsing; this
 * wrapper stops it at the two places the relay acts on (the end of a head,
 * the end of a message), and refuses request heads an API server behind
 * us might read differently from us.  The reference is Go's net/http
 * (kube-apiserver's parser), which is lenient where http-parser is strict
 * and the other way round; refused are:
 *   - framing: both Content-Length and Transfer-Encoding, more than one of
 *     either, a Content-Length that is not plain digits, a
 *     Transfer-Encoding other than exactly "chunked", any Transfer-Encoding
 *     on HTTP/1.0 (Go ignores it there and reads the "body" as further
 *     requests), trailer fields after a chunked body;
 *   - lines: a bare LF or CR, obs-fold (a header line continued on the
 *     next), a control character, an empty line before the request line;
 *   - the request line: anything but METHOD SP origin-form-target SP
 *     HTTP/1.0|HTTP/1.1, CONNECT;
 *   - headers: a name that is not a token, no Host (or several) on
 *     HTTP/1.1, an Upgrade on HTTP/1.0, a head over KH_RHTTP_HEAD_MAX.
 * tests/integration/relay/relay_diff.sh holds the relay to that against a
 * real Go server.  Body bytes go through the parser only for their
 * framing (lengths, chunk sizes): they are never copied or looked at.
 *
 * A feed returns at the first event; the caller acts on it and feeds the
 * rest (from *used on).  Nothing here allocates.
 */
#ifndef KH_RHTTP_H
#define KH_RHTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <http_parser.h>

/* Largest request head the relay reads (request line and headers). */
#define KH_RHTTP_HEAD_MAX (16 * 1024)
/* The request target kept for the audit line (longer ones are cut there). */
#define KH_RHTTP_TARGET_MAX 2048

enum kh_rhttp_ev {
	KH_RHTTP_MORE,          /* everything consumed; feed more */
	KH_RHTTP_HEAD,          /* a head ended: look at it, then feed the rest */
	KH_RHTTP_DONE,          /* a message ended (a final response, for responses) */
	KH_RHTTP_BAD,           /* refused: ->why says why (a 400 for requests) */
};

enum kh_rhttp_hdr { KH_HDR_OTHER, KH_HDR_CL, KH_HDR_TE, KH_HDR_HOST, KH_HDR_UPGRADE };

/* A short header value kept for its check (Content-Length, Transfer-Encoding). */
struct kh_rhttp_val {
	char s[24];
	size_t len;
	bool cut;                       /* longer than s holds */
};

struct kh_rhttp {
	http_parser p;
	bool response;
	/* Per message. */
	size_t head_bytes;              /* bytes of the head seen so far */
	bool in_head;                   /* between the first byte and the head's end */
	bool head_done;
	bool last_lf;                   /* the head's previous byte was a LF */
	bool last_cr;                   /* ... a CR */
	bool last_sp;                   /* ... a space */
	unsigned line;                  /* the head's line being read (0: the request line) */
	unsigned rl_spaces;             /* spaces in the request line */
	char rl_tail[9];                /* its last bytes: " HTTP/1.x" */
	unsigned ncl, nte, nhost, nupgrade;     /* headers seen, by kind */
	enum kh_rhttp_hdr cur;          /* the header whose value is being read */
	bool in_value;                  /* the last piece was of a value */
	char field[24];                 /* the start of the field name */
	size_t field_len;
	struct kh_rhttp_val cl, te;     /* Content-Length, Transfer-Encoding values */
	char *target;                   /* request target: the caller's buffer */
	size_t target_cap;              /* its size (KH_RHTTP_TARGET_MAX + 1) */
	size_t target_len;
	bool target_cut;
	bool skip_body;                 /* responses: the request was HEAD */
	bool interim;                   /* responses: a 1xx other than 101 ended */
	const char *why;                /* KH_RHTTP_BAD */
	enum kh_rhttp_ev ev;            /* set by the callbacks */
};

/* target: where the request target goes (KH_RHTTP_TARGET_MAX + 1 bytes). */
void kh_rhttp_init_request(struct kh_rhttp *h, char *target);
/* skip_body: the request this answers was a HEAD (no body follows). */
void kh_rhttp_init_response(struct kh_rhttp *h, bool skip_body);

/*
 * Parse from buf; *used is how much was consumed up to the event.  After a
 * KH_RHTTP_DONE the next message starts fresh (requests: pipelining).
 */
enum kh_rhttp_ev kh_rhttp_feed(struct kh_rhttp *h, const char *buf, size_t len, size_t *used);

/* The peer closed: an EOF-delimited response body ends (KH_RHTTP_DONE),
 * anything else cut short is KH_RHTTP_BAD. */
enum kh_rhttp_ev kh_rhttp_eof(struct kh_rhttp *h);

/* After a head: */
static inline const char *kh_rhttp_method(const struct kh_rhttp *h)
{
	return http_method_str((enum http_method)h->p.method);
}
static inline unsigned kh_rhttp_status(const struct kh_rhttp *h) { return h->p.status_code; }
/* An Upgrade the parser stopped at (requests: asked; responses: 101). */
static inline bool kh_rhttp_upgrade(const struct kh_rhttp *h) { return h->p.upgrade != 0; }
/* Both HTTP/1.1 keep-alive rules and the Connection header allow another message. */
static inline bool kh_rhttp_keep_alive(const struct kh_rhttp *h)
{
	return http_should_keep_alive(&h->p) != 0;
}
/* The response has no end but the connection's (no length, not chunked). */
bool kh_rhttp_until_eof(const struct kh_rhttp *h);
/* A watch: ?watch=1|true, or the old /watch/ paths. */
bool kh_rhttp_is_watch(const struct kh_rhttp *h);

#endif
