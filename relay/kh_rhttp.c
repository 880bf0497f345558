/*
 * kh_rhttp — request and response heads through http-parser.
 *
 * The callbacks record only what the relay acts on (method, target,
 * framing headers, status) and pause the parser at the end of a head and
 * at the end of a message, so kh_rhttp_feed returns there with the byte
 * count consumed so far.  A paused parser resumes by being fed the rest:
 * http-parser re-reads the byte it stopped on in its next state.
 */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "relay/kh_rhttp.h"

static int kh_rhttp_on_url(http_parser *p, const char *at, size_t n);
static int kh_rhttp_on_field(http_parser *p, const char *at, size_t n);
static int kh_rhttp_on_value(http_parser *p, const char *at, size_t n);
static int kh_rhttp_on_head(http_parser *p);
static int kh_rhttp_on_done(http_parser *p);

static const http_parser_settings kh_rhttp_settings = {
	.on_url = kh_rhttp_on_url,
	.on_header_field = kh_rhttp_on_field,
	.on_header_value = kh_rhttp_on_value,
	.on_headers_complete = kh_rhttp_on_head,
	.on_message_complete = kh_rhttp_on_done,
};

static void
kh_rhttp_reset_message(struct kh_rhttp *h)
{
	h->head_bytes = 0;
	h->in_head = true;
	h->head_done = false;
	h->last_lf = false;
	h->last_cr = false;
	h->last_sp = false;
	h->line = 0;
	h->rl_spaces = 0;
	memset(h->rl_tail, 0, sizeof(h->rl_tail));
	h->ncl = h->nte = h->nhost = h->nupgrade = 0;
	h->cur = KH_HDR_OTHER;
	h->in_value = false;
	h->field_len = 0;
	memset(&h->cl, 0, sizeof(h->cl));
	memset(&h->te, 0, sizeof(h->te));
	h->target_len = 0;
	if (h->target != NULL)
		h->target[0] = '\0';
	h->target_cut = false;
	h->interim = false;
}

static void
kh_rhttp_init(struct kh_rhttp *h, bool response, bool skip_body, char *target)
{
	memset(h, 0, sizeof(*h));
	h->target = target;
	h->target_cap = target != NULL ? KH_RHTTP_TARGET_MAX + 1 : 0;
	http_parser_init(&h->p, response ? HTTP_RESPONSE : HTTP_REQUEST);
	h->p.data = h;
	h->response = response;
	h->skip_body = skip_body;
	kh_rhttp_reset_message(h);
}

void
kh_rhttp_init_request(struct kh_rhttp *h, char *target)
{
	kh_rhttp_init(h, false, false, target);
}

void
kh_rhttp_init_response(struct kh_rhttp *h, bool skip_body)
{
	kh_rhttp_init(h, true, skip_body, NULL);
}

static int
kh_rhttp_on_url(http_parser *p, const char *at, size_t n)
{
	struct kh_rhttp *h = p->data;
	size_t room = h->target_cap > 0 ? h->target_cap - 1 - h->target_len : 0;

	if (h->target == NULL)
		return 0;
	if (n > room) {
		n = room;
		h->target_cut = true;
	}
	memcpy(h->target + h->target_len, at, n);
	h->target_len += n;
	h->target[h->target_len] = '\0';
	return 0;
}

/* RFC 9110 tchar: http-parser lets a space into a name when not strict,
 * and "Transfer-Encoding :" is a classic way to make two parsers differ. */
static bool
kh_rhttp_token(const char *s, size_t n)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c != '\0' && strchr(extra, c) != NULL)))
			return false;
	}
	return true;
}

static int
kh_rhttp_on_field(http_parser *p, const char *at, size_t n)
{
	struct kh_rhttp *h = p->data;
	size_t room;

	if (h->in_value) {
		h->in_value = false;
		h->field_len = 0;
	}
	/* Go reads trailers by rules of its own (bare LF ends a line there,
	 * it looks ahead for CRLFCRLF first): no client of ours sends any. */
	if (!h->response && h->head_done) {
		h->why = "trailer fields after a chunked body";
		h->ev = KH_RHTTP_BAD;
		return -1;
	}
	if (!h->response && !kh_rhttp_token(at, n)) {
		h->why = "a header name that is not a token";
		h->ev = KH_RHTTP_BAD;
		return -1;
	}
	room = sizeof(h->field) - 1 - h->field_len;
	if (n > room)
		n = room;
	memcpy(h->field + h->field_len, at, n);
	h->field_len += n;
	h->field[h->field_len] = '\0';
	return 0;
}

/* The first piece of a value (http-parser reports empty ones too): which
 * header this is. */
static void
kh_rhttp_classify(struct kh_rhttp *h)
{
	h->in_value = true;
	h->cur = KH_HDR_OTHER;
	if (strcasecmp(h->field, "content-length") == 0) {
		h->cur = KH_HDR_CL;
		h->ncl++;
	} else if (strcasecmp(h->field, "transfer-encoding") == 0) {
		h->cur = KH_HDR_TE;
		h->nte++;
	} else if (strcasecmp(h->field, "host") == 0) {
		h->cur = KH_HDR_HOST;
		h->nhost++;
	} else if (strcasecmp(h->field, "upgrade") == 0) {
		h->cur = KH_HDR_UPGRADE;
		h->nupgrade++;
	}
}

static void
kh_rhttp_keep(struct kh_rhttp_val *v, const char *at, size_t n)
{
	if (v->cut || v->len + n >= sizeof(v->s)) {
		v->cut = true;
		return;
	}
	memcpy(v->s + v->len, at, n);
	v->len += n;
	v->s[v->len] = '\0';
}

static int
kh_rhttp_on_value(http_parser *p, const char *at, size_t n)
{
	struct kh_rhttp *h = p->data;

	if (!h->in_value)
		kh_rhttp_classify(h);
	if (h->cur == KH_HDR_CL)
		kh_rhttp_keep(&h->cl, at, n);
	else if (h->cur == KH_HDR_TE)
		kh_rhttp_keep(&h->te, at, n);
	return 0;
}

/* A kept value without the whitespace around it (Go trims both ends). */
static const char *
kh_rhttp_trimmed(const struct kh_rhttp_val *v, size_t *len)
{
	const char *s = v->s;
	size_t n = v->len;

	while (n > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	*len = n;
	return s;
}

/* 1 to 18 digits: a length both parsers read alike (Go's ends at 2^63). */
static bool
kh_rhttp_plain_length(const struct kh_rhttp_val *v)
{
	size_t i, n;
	const char *s = kh_rhttp_trimmed(v, &n);

	if (v->cut || n == 0 || n > 18)
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
	}
	return true;
}

/* A request head the relay can pass on as it is, or why not. */
static const char *
kh_rhttp_check_request(const struct kh_rhttp *h)
{
	bool http10 = h->p.http_major == 1 && h->p.http_minor == 0;
	const char *te;
	size_t n;

	if (h->p.method == HTTP_CONNECT)
		return "CONNECT is not relayed";
	if (h->p.http_major != 1 || h->p.http_minor > 1)
		return "an HTTP version other than 1.0 and 1.1";
	if (h->target == NULL || h->target[0] != '/')
		return "the request target must be a path (origin-form)";
	/* Go's net/http ignores Transfer-Encoding on HTTP/1.0 (RFC 9112 6.1
	 * says to treat the message as faulty): the relay would read a
	 * chunked body where the API server reads further requests. */
	if (http10 && h->nte > 0)
		return "Transfer-Encoding on an HTTP/1.0 request";
	/* An HTTP/1.0 Upgrade is to be ignored (RFC 9110 7.8), which
	 * http-parser does not and kube-apiserver's handlers may not. */
	if (http10 && (h->nupgrade > 0 || (h->p.flags & F_CONNECTION_UPGRADE)))
		return "an Upgrade on an HTTP/1.0 request";
	if (h->nhost > 1 || (!http10 && h->nhost == 0))
		return "an HTTP/1.1 request needs exactly one Host header";
	if (h->ncl > 1)
		return "more than one Content-Length header";
	if ((h->nte > 0 && h->ncl > 0) ||
	    ((h->p.flags & F_CONTENTLENGTH) && h->p.uses_transfer_encoding))
		return "both Content-Length and Transfer-Encoding";
	if (h->ncl == 1 && !kh_rhttp_plain_length(&h->cl))
		return "a Content-Length that is not a plain decimal number";
	if (h->nte > 1)
		return "more than one Transfer-Encoding header";
	if (h->nte == 1) {
		te = kh_rhttp_trimmed(&h->te, &n);
		if (h->te.cut || n != 7 || strncasecmp(te, "chunked", 7) != 0)
			return "a Transfer-Encoding other than chunked";
	}
	return NULL;
}

static int
kh_rhttp_on_head(http_parser *p)
{
	struct kh_rhttp *h = p->data;

	h->head_done = true;
	h->in_head = false;
	h->ev = KH_RHTTP_HEAD;
	if (!h->response) {
		h->why = kh_rhttp_check_request(h);
		if (h->why != NULL) {
			h->ev = KH_RHTTP_BAD;
			return -1;
		}
	}
	http_parser_pause(p, 1);
	return h->response && h->skip_body ? 1 : 0;
}

static int
kh_rhttp_on_done(http_parser *p)
{
	struct kh_rhttp *h = p->data;

	/* 100 Continue and friends: the final answer is still to come. */
	if (h->response && p->status_code >= 100 && p->status_code < 200 &&
	    p->status_code != 101) {
		h->interim = true;
		h->head_done = true;
		return 0;
	}
	h->ev = KH_RHTTP_DONE;
	http_parser_pause(p, 1);
	return 0;
}

/* The request line so far: spaces, and what the line ends in. */
static const char *
kh_rhttp_scan_request_line(struct kh_rhttp *h, unsigned char c)
{
	if (c == '\r') {
		if (h->rl_spaces != 2 ||
		    (memcmp(h->rl_tail, " HTTP/1.1", 9) != 0 && memcmp(h->rl_tail, " HTTP/1.0", 9) != 0))
			return "a request line other than METHOD SP PATH SP HTTP/1.x";
		return NULL;
	}
	if (c == '\t' || c >= 0x80)
		return "a tab or a byte outside ASCII in the request line";
	if (c == ' ') {
		if (h->last_sp)
			return "a request line other than METHOD SP PATH SP HTTP/1.x";
		h->rl_spaces++;
	}
	memmove(h->rl_tail, h->rl_tail + 1, sizeof(h->rl_tail) - 1);
	h->rl_tail[sizeof(h->rl_tail) - 1] = (char)c;
	return NULL;
}

/*
 * Bytes of a head the parser is lenient about and an API server might not
 * be (or the other way round): a LF without its CR (Go takes it as a line
 * end), a CR without its LF, a line that starts with a space or a tab
 * (obs-fold: Go joins it to the line before), control characters, an
 * empty line before the request (http-parser skips it, Go only after a
 * POST), and a request line Go would split otherwise.  Either could make
 * the server see other requests or headers than the relay did.
 */
static const char *
kh_rhttp_scan_head(struct kh_rhttp *h, const char *buf, size_t n)
{
	const char *why;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (h->last_cr && c != '\n')
			return "a CR not followed by LF";
		if (c == '\n' && !h->last_cr)
			return "a line ends in a bare LF";
		if ((c == '\r' || c == '\n') && h->head_bytes + i == 0)
			return "an empty line before the request line";
		if ((c == ' ' || c == '\t') && h->last_lf)
			return "a header line is folded (obs-fold)";
		if ((c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f)
			return "a control character in the request head";
		if (h->line == 0 && c != '\n' && (why = kh_rhttp_scan_request_line(h, c)) != NULL)
			return why;
		if (c == '\n')
			h->line++;
		h->last_lf = c == '\n';
		h->last_cr = c == '\r';
		h->last_sp = c == ' ';
	}
	return NULL;
}

static enum kh_rhttp_ev
kh_rhttp_bad(struct kh_rhttp *h, const char *why)
{
	h->why = why;
	h->ev = KH_RHTTP_BAD;
	return KH_RHTTP_BAD;
}

enum kh_rhttp_ev
kh_rhttp_feed(struct kh_rhttp *h, const char *buf, size_t len, size_t *used)
{
	enum http_errno e;
	bool scanning;
	size_t n;

	*used = 0;
	if (h->ev == KH_RHTTP_BAD)
		return KH_RHTTP_BAD;
	if (h->ev == KH_RHTTP_DONE)
		kh_rhttp_reset_message(h);
	/* After the reset: a feed that starts the next message reads its head. */
	scanning = h->in_head && !h->response;
	h->ev = KH_RHTTP_MORE;
	n = http_parser_execute(&h->p, &kh_rhttp_settings, buf, len);
	e = HTTP_PARSER_ERRNO(&h->p);
	*used = n;
	if (scanning) {
		/* The parser paused at the head's end: n covers the head but its
		 * last byte, which it reads again when fed on (and takes any
		 * byte for the LF there): that one is checked here too. */
		const char *why = kh_rhttp_scan_head(h, buf, n);

		h->head_bytes += n;
		if (why == NULL && h->head_done && n < len)
			why = kh_rhttp_scan_head(h, buf + n, 1);
		if (why != NULL)
			return kh_rhttp_bad(h, why);
		if (h->head_bytes > KH_RHTTP_HEAD_MAX)
			return kh_rhttp_bad(h, "the request head is too large");
	}
	if (h->ev == KH_RHTTP_BAD)
		return KH_RHTTP_BAD;
	if (e == HPE_PAUSED) {
		http_parser_pause(&h->p, 0);
		return h->ev;
	}
	if (e != HPE_OK)
		return kh_rhttp_bad(h, http_errno_description(e));
	return h->ev;
}

enum kh_rhttp_ev
kh_rhttp_eof(struct kh_rhttp *h)
{
	enum http_errno e;

	if (h->ev == KH_RHTTP_BAD)
		return KH_RHTTP_BAD;
	if (h->ev == KH_RHTTP_DONE)
		return KH_RHTTP_MORE;           /* a clean end between messages */
	h->ev = KH_RHTTP_MORE;
	(void)http_parser_execute(&h->p, &kh_rhttp_settings, NULL, 0);
	e = HTTP_PARSER_ERRNO(&h->p);
	if (e == HPE_PAUSED)
		http_parser_pause(&h->p, 0);
	else if (e != HPE_OK)
		return kh_rhttp_bad(h, http_errno_description(e));
	return h->ev;
}

bool
kh_rhttp_until_eof(const struct kh_rhttp *h)
{
	unsigned s = h->p.status_code;

	if (!h->response || h->skip_body || (s >= 100 && s < 200) || s == 204 || s == 304)
		return false;
	return !(h->p.flags & (F_CHUNKED | F_CONTENTLENGTH));
}

/* Whether query string q has name=value among its &-separated parameters. */
static bool
kh_rhttp_query_has(const char *q, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);
	const char *s = q;

	while (s != NULL && *s != '\0') {
		const char *end = strchr(s, '&');
		size_t len = end != NULL ? (size_t)(end - s) : strlen(s);

		if (len == nl + 1 + vl && strncmp(s, name, nl) == 0 && s[nl] == '=' &&
		    strncmp(s + nl + 1, value, vl) == 0)
			return true;
		s = end != NULL ? end + 1 : NULL;
	}
	return false;
}

bool
kh_rhttp_is_watch(const struct kh_rhttp *h)
{
	const char *q;
	size_t plen;

	if (h->target == NULL)
		return false;
	q = strchr(h->target, '?');
	plen = q != NULL ? (size_t)(q - h->target) : h->target_len;
	if (plen >= 7 && memmem(h->target, plen, "/watch/", 7) != NULL)
		return true;
	return q != NULL && (kh_rhttp_query_has(q + 1, "watch", "1") ||
			     kh_rhttp_query_has(q + 1, "watch", "true"));
}
