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
	h->ncl = h->nte = 0;
	h->cur = KH_HDR_OTHER;
	h->in_value = false;
	h->field_len = 0;
	h->te_len = 0;
	h->te_long = false;
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
		h->te_len = 0;
	}
}

static int
kh_rhttp_on_value(http_parser *p, const char *at, size_t n)
{
	struct kh_rhttp *h = p->data;

	if (!h->in_value)
		kh_rhttp_classify(h);
	if (h->cur != KH_HDR_TE)
		return 0;
	if (h->te_len + n >= sizeof(h->te)) {
		h->te_long = true;
		return 0;
	}
	memcpy(h->te + h->te_len, at, n);
	h->te_len += n;
	h->te[h->te_len] = '\0';
	return 0;
}

/* A request head the relay can pass on as it is, or why not. */
static const char *
kh_rhttp_check_request(const struct kh_rhttp *h)
{
	size_t n = h->te_len;

	if (h->p.method == HTTP_CONNECT)
		return "CONNECT is not relayed";
	if (h->target == NULL || h->target[0] != '/')
		return "the request target must be a path (origin-form)";
	if (h->ncl > 1)
		return "more than one Content-Length header";
	if ((h->nte > 0 && h->ncl > 0) ||
	    ((h->p.flags & F_CONTENTLENGTH) && h->p.uses_transfer_encoding))
		return "both Content-Length and Transfer-Encoding";
	if (h->nte > 1)
		return "more than one Transfer-Encoding header";
	if (h->nte == 1) {
		while (n > 0 && (h->te[n - 1] == ' ' || h->te[n - 1] == '\t'))
			n--;
		if (h->te_long || n != 7 || strncasecmp(h->te, "chunked", 7) != 0)
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

/*
 * Bytes of a head the parser is lenient about and an API server might not
 * be: a LF without its CR, and a line that starts with a space or a tab
 * (obs-fold).  Either could make the server see other headers than the
 * relay did.
 */
static const char *
kh_rhttp_scan_head(struct kh_rhttp *h, const char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char c = buf[i];

		if (c == '\n' && !h->last_cr)
			return "a line ends in a bare LF";
		if ((c == ' ' || c == '\t') && h->last_lf)
			return "a header line is folded (obs-fold)";
		h->last_lf = c == '\n';
		h->last_cr = c == '\r';
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
		/* The parser paused at the head's end: n covers the head only. */
		const char *why = kh_rhttp_scan_head(h, buf, n);

		h->head_bytes += n;
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
