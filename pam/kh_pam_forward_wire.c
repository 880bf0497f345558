/*
 * kh_pam_forward_wire — the frames between root and the forwarded token's
 * child (kh_pam_forward_child.c): encoding, and parsing that refuses
 * everything from the child unless it is well-formed.
 *
 * A file of its own so that what root reads from a process the user
 * controls is in one place, small enough to read whole, and tested on its
 * own (tests/unit/pam/test_forward_child).  Every field is length-prefixed
 * with a hard cap; a frame must be consumed exactly.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509.h>

#include "lib/kh_challenge.h"
#include "lib/kh_mem.h"
#include "lib/kh_pkcs11.h"
#include "pam/kh_pam.h"
#include "pam/kh_pam_forward_child.h"

/* Frame tags: the first field of each frame. */
#define TAG_HELLO    0x4b484648u   /* "KHFH" */
#define TAG_REQUEST  0x4b484652u   /* "KHFR" */
#define TAG_ANSWER   0x4b484641u   /* "KHFA" */

/* ---- encoding ------------------------------------------------------------ */

void
kh_fwd_buf_clear(struct kh_fwd_buf *b)
{
	if (b == NULL)
		return;
	kh_secure_free(b->data, b->cap);
	memset(b, 0, sizeof(*b));
}

static int
buf_put(struct kh_fwd_buf *b, const void *p, size_t n)
{
	if (n > KH_FWD_FRAME_MAX || b->len > KH_FWD_FRAME_MAX - n)
		return -1;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		unsigned char *d;

		while (cap < b->len + n)
			cap *= 2;
		/* Not realloc: the old block may hold the PIN, and is wiped. */
		d = malloc(cap);
		if (d == NULL)
			return -1;
		if (b->len > 0)
			memcpy(d, b->data, b->len);
		kh_secure_free(b->data, b->cap);
		b->data = d;
		b->cap = cap;
	}
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

static int
buf_u32(struct kh_fwd_buf *b, uint32_t v)
{
	unsigned char x[4] = { v >> 24, v >> 16, v >> 8, v };

	return buf_put(b, x, sizeof(x));
}

/* A field: its length, then its bytes. */
static int
put_bytes(struct kh_fwd_buf *b, const void *p, size_t n, size_t cap)
{
	if (n > cap || buf_u32(b, (uint32_t)n) != 0)
		return -1;
	return buf_put(b, p, n);
}

static int
put_u32(struct kh_fwd_buf *b, uint32_t v)
{
	unsigned char x[4] = { v >> 24, v >> 16, v >> 8, v };

	return put_bytes(b, x, sizeof(x), sizeof(x));
}

static int
put_u64(struct kh_fwd_buf *b, uint64_t v)
{
	unsigned char x[8];

	for (int i = 0; i < 8; i++)
		x[i] = (unsigned char)(v >> (56 - 8 * i));
	return put_bytes(b, x, sizeof(x), sizeof(x));
}

/* A string field, cut to cap bytes (the child's own strings). */
static int
put_str(struct kh_fwd_buf *b, const char *s, size_t cap)
{
	return put_bytes(b, s, s != NULL ? strnlen(s, cap) : 0, cap);
}

/* The frame's length in front of what start..len holds now. */
static int
frame_begin(struct kh_fwd_buf *b, size_t *start)
{
	*start = b->len;
	return buf_u32(b, 0);
}

static int
frame_end(struct kh_fwd_buf *b, size_t start)
{
	size_t n = b->len - start - 4;

	if (n > KH_FWD_FRAME_MAX)
		return -1;
	b->data[start] = (unsigned char)(n >> 24);
	b->data[start + 1] = (unsigned char)(n >> 16);
	b->data[start + 2] = (unsigned char)(n >> 8);
	b->data[start + 3] = (unsigned char)n;
	return 0;
}

int
kh_fwd_encode_hello(struct kh_fwd_buf *b, const struct kh_fwd_hello *h)
{
	size_t s;

	if (frame_begin(b, &s) != 0 || put_u32(b, TAG_HELLO) != 0 ||
	    put_u32(b, (uint32_t)h->code) != 0 || put_u32(b, (uint32_t)h->outcome) != 0 ||
	    put_u32(b, h->pin_flags) != 0 || put_u64(b, h->slot_id) != 0 ||
	    put_str(b, h->label, KH_FWD_STR_MAX) != 0 ||
	    put_str(b, h->serial, KH_FWD_STR_MAX) != 0 ||
	    put_str(b, h->manufacturer, KH_FWD_STR_MAX) != 0 ||
	    put_str(b, h->model, KH_FWD_STR_MAX) != 0 ||
	    put_bytes(b, h->cert_der, h->cert_len, KH_FWD_CERT_MAX) != 0 ||
	    put_str(b, h->cert_label, KH_FWD_STR_MAX) != 0 ||
	    put_bytes(b, h->id, h->id_len, KH_P11_ID_MAX) != 0 ||
	    put_str(b, h->msg, KH_FWD_MSG_MAX) != 0)
		return -1;
	return frame_end(b, s);
}

int
kh_fwd_encode_answer(struct kh_fwd_buf *b, const struct kh_fwd_answer *a)
{
	size_t s;

	if (frame_begin(b, &s) != 0 || put_u32(b, TAG_ANSWER) != 0 ||
	    put_u32(b, (uint32_t)a->code) != 0 || put_u32(b, (uint32_t)a->stage) != 0 ||
	    put_u32(b, a->pin_flags) != 0 ||
	    put_bytes(b, a->sig, a->sig_len, KH_FWD_SIG_MAX) != 0 ||
	    put_str(b, a->msg, KH_FWD_MSG_MAX) != 0)
		return -1;
	return frame_end(b, s);
}

int
kh_fwd_encode_request(struct kh_fwd_buf *b, const char *pin, const unsigned char *challenge,
		      size_t len)
{
	size_t s;

	if (pin == NULL || strlen(pin) > KH_P11_PIN_MAX)
		return -1;
	if (frame_begin(b, &s) != 0 || put_u32(b, TAG_REQUEST) != 0 ||
	    put_bytes(b, pin, strlen(pin), KH_P11_PIN_MAX) != 0 ||
	    put_bytes(b, challenge, len, KH_CHALLENGE_LEN) != 0)
		return -1;
	return frame_end(b, s);
}

/* ---- parsing: everything from the child is refused unless well-formed ---- */

struct reader {
	const unsigned char *p;
	size_t left;
	const char *what;       /* "hello", "answer", "request" */
	kh_error *err;
};

static int
bad(struct reader *r, const char *fmt, const char *field, size_t n)
{
	return kh_fail(r->err, KH_ERR_REFUSED, "malformed %s from the forwarded token's "
		       "process: %s %s (%zu bytes); refused", r->what, field, fmt, n);
}

/* The next field, at most cap bytes. */
static int
get_field(struct reader *r, const char *field, size_t cap, const unsigned char **p,
	  size_t *n)
{
	uint32_t len;

	if (r->left < 4)
		return bad(r, "truncated", field, r->left);
	len = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 |
	      (uint32_t)r->p[3];
	r->p += 4;
	r->left -= 4;
	if (len > cap)
		return bad(r, "over its limit", field, len);
	if (len > r->left)
		return bad(r, "truncated", field, len);
	*p = r->p;
	*n = len;
	r->p += len;
	r->left -= len;
	return 0;
}

static int
get_u32(struct reader *r, const char *field, uint32_t *v)
{
	const unsigned char *p;
	size_t n;

	if (get_field(r, field, 4, &p, &n) != 0)
		return -1;
	if (n != 4)
		return bad(r, "not 4 bytes", field, n);
	*v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
	return 0;
}

static int
get_u64(struct reader *r, const char *field, uint64_t *v)
{
	const unsigned char *p;
	size_t n;

	if (get_field(r, field, 8, &p, &n) != 0)
		return -1;
	if (n != 8)
		return bad(r, "not 8 bytes", field, n);
	*v = 0;
	for (size_t i = 0; i < 8; i++)
		*v = *v << 8 | p[i];
	return 0;
}

/* A string: no NUL inside; unless raw (the PIN), control characters
 * replaced by '?' (it ends up in prompts and logs).  Into out (size > cap)
 * or a new string. */
static int
get_text(struct reader *r, const char *field, size_t cap, bool raw, char *out, char **dup)
{
	const unsigned char *p;
	size_t n;
	char *s;

	if (get_field(r, field, cap, &p, &n) != 0)
		return -1;
	if (memchr(p, '\0', n) != NULL)
		return bad(r, "holds a NUL", field, n);
	s = out != NULL ? out : malloc(n + 1);
	if (s == NULL)
		return kh_fail(r->err, KH_ERR_INTERNAL, "out of memory");
	for (size_t i = 0; i < n; i++)
		s[i] = !raw && (p[i] < 0x20 || p[i] == 0x7f) ? '?' : (char)p[i];
	s[n] = '\0';
	if (dup != NULL)
		*dup = s;
	return 0;
}

static int
get_str(struct reader *r, const char *field, size_t cap, char *out, char **dup)
{
	return get_text(r, field, cap, false, out, dup);
}

static int
get_tag(struct reader *r, uint32_t want)
{
	uint32_t tag;

	if (get_u32(r, "tag", &tag) != 0)
		return -1;
	if (tag != want)
		return bad(r, "is another frame's", "tag", 4);
	return 0;
}

static int
get_end(struct reader *r)
{
	if (r->left != 0)
		return bad(r, "after the last field", "bytes", r->left);
	return 0;
}

/* An error class the child may report; anything else is malformed. */
static int
get_code(struct reader *r, enum kh_errcode *code)
{
	uint32_t v;

	if (get_u32(r, "status", &v) != 0)
		return -1;
	if (v > KH_ERR_TOKEN)
		return bad(r, "out of range", "status", v);
	*code = (enum kh_errcode)v;
	return 0;
}

static int
get_flags(struct reader *r, unsigned *flags)
{
	uint32_t v;

	if (get_u32(r, "PIN flags", &v) != 0)
		return -1;
	if (v & ~(uint32_t)(KH_P11_PIN_COUNT_LOW | KH_P11_PIN_FINAL_TRY | KH_P11_PIN_LOCKED |
			    KH_P11_PIN_TO_BE_CHANGED))
		return bad(r, "has unknown bits", "PIN flags", v);
	*flags = v;
	return 0;
}

void
kh_fwd_hello_clear(struct kh_fwd_hello *h)
{
	if (h == NULL)
		return;
	free(h->label);
	free(h->serial);
	free(h->manufacturer);
	free(h->model);
	free(h->cert_der);
	free(h->cert_label);
	explicit_bzero(h, sizeof(*h));
}

void
kh_fwd_answer_clear(struct kh_fwd_answer *a)
{
	if (a == NULL)
		return;
	free(a->sig);
	explicit_bzero(a, sizeof(*a));
}

int
kh_fwd_parse_hello(const unsigned char *buf, size_t len, struct kh_fwd_hello *h,
		   kh_error *err)
{
	struct reader r = { buf, len, "hello", err };
	const unsigned char *p;
	uint32_t outcome = 0;
	uint64_t slot = 0;
	size_t n;

	memset(h, 0, sizeof(*h));
	if (get_tag(&r, TAG_HELLO) != 0 || get_code(&r, &h->code) != 0 ||
	    get_u32(&r, "outcome", &outcome) != 0 || get_flags(&r, &h->pin_flags) != 0 ||
	    get_u64(&r, "slot", &slot) != 0 ||
	    get_str(&r, "label", KH_FWD_STR_MAX, NULL, &h->label) != 0 ||
	    get_str(&r, "serial", KH_FWD_STR_MAX, NULL, &h->serial) != 0 ||
	    get_str(&r, "manufacturer", KH_FWD_STR_MAX, NULL, &h->manufacturer) != 0 ||
	    get_str(&r, "model", KH_FWD_STR_MAX, NULL, &h->model) != 0)
		goto fail;
	if (outcome > KH_TOKEN_REJECTED) {
		bad(&r, "out of range", "outcome", outcome);
		goto fail;
	}
	h->outcome = (enum kh_token_outcome)outcome;
	h->slot_id = (unsigned long)slot;
	if (get_field(&r, "certificate", KH_FWD_CERT_MAX, &p, &n) != 0)
		goto fail;
	if (n > 0) {
		h->cert_der = malloc(n);
		if (h->cert_der == NULL) {
			kh_fail(err, KH_ERR_INTERNAL, "out of memory");
			goto fail;
		}
		memcpy(h->cert_der, p, n);
		h->cert_len = n;
	}
	if (get_str(&r, "certificate label", KH_FWD_STR_MAX, NULL, &h->cert_label) != 0 ||
	    get_field(&r, "CKA_ID", KH_P11_ID_MAX, &p, &n) != 0)
		goto fail;
	memcpy(h->id, p, n);
	h->id_len = n;
	if (get_str(&r, "message", KH_FWD_MSG_MAX, h->msg, NULL) != 0 || get_end(&r) != 0)
		goto fail;
	/* A token chosen is a certificate sent, and nothing else. */
	if (h->code == KH_OK && (h->outcome != KH_TOKEN_CHOSEN || h->cert_len == 0)) {
		bad(&r, "without a certificate or with another outcome", "chosen token",
		    h->cert_len);
		goto fail;
	}
	if (h->code != KH_OK && h->outcome == KH_TOKEN_CHOSEN) {
		bad(&r, "with a failure", "chosen token", 0);
		goto fail;
	}
	return 0;
fail:
	kh_fwd_hello_clear(h);
	return -1;
}

int
kh_fwd_parse_answer(const unsigned char *buf, size_t len, struct kh_fwd_answer *a,
		    kh_error *err)
{
	struct reader r = { buf, len, "answer", err };
	const unsigned char *p;
	uint32_t stage = 0;
	size_t n;

	memset(a, 0, sizeof(*a));
	if (get_tag(&r, TAG_ANSWER) != 0 || get_code(&r, &a->code) != 0 ||
	    get_u32(&r, "stage", &stage) != 0 || get_flags(&r, &a->pin_flags) != 0 ||
	    get_field(&r, "signature", KH_FWD_SIG_MAX, &p, &n) != 0)
		goto fail;
	if (stage > KH_FWD_STAGE_SIGN) {
		bad(&r, "out of range", "stage", stage);
		goto fail;
	}
	a->stage = (enum kh_fwd_stage)stage;
	if (n > 0) {
		a->sig = malloc(n);
		if (a->sig == NULL) {
			kh_fail(err, KH_ERR_INTERNAL, "out of memory");
			goto fail;
		}
		memcpy(a->sig, p, n);
		a->sig_len = n;
	}
	if (get_str(&r, "message", KH_FWD_MSG_MAX, a->msg, NULL) != 0 || get_end(&r) != 0)
		goto fail;
	if ((a->code == KH_OK) != (a->stage == KH_FWD_STAGE_NONE) ||
	    (a->code == KH_OK) != (a->sig_len > 0)) {
		bad(&r, "does not match its status and stage", "signature", a->sig_len);
		goto fail;
	}
	return 0;
fail:
	kh_fwd_answer_clear(a);
	return -1;
}

X509 *
kh_fwd_hello_cert(const struct kh_fwd_hello *h, kh_error *err)
{
	const unsigned char *p = h->cert_der;
	X509 *x;

	if (h->cert_der == NULL || h->cert_len == 0 || h->cert_len > KH_FWD_CERT_MAX) {
		kh_fail(err, KH_ERR_REFUSED, "the forwarded token's process sent no certificate");
		return NULL;
	}
	x = d2i_X509(NULL, &p, (long)h->cert_len);
	if (x == NULL || p != h->cert_der + h->cert_len) {
		X509_free(x);
		kh_fail_ssl(err, KH_ERR_REFUSED, "the certificate from the forwarded token's "
			    "process is not one DER X.509 certificate; refused");
		return NULL;
	}
	return x;
}

int
kh_fwd_verify_challenge(X509 *cert, const unsigned char *challenge, size_t len,
			const struct kh_fwd_answer *a, kh_error *err)
{
	if (a->code != KH_OK || a->sig == NULL || a->sig_len == 0)
		return kh_fail(err, KH_ERR_AUTH, "proof of possession failed: no signature");
	return kh_p11_verify_challenge(cert, challenge, len, a->sig, a->sig_len, err);
}

int
kh_fwd_parse_request(const unsigned char *buf, size_t len, char *pin,
		     unsigned char *challenge, kh_error *err)
{
	struct reader r = { buf, len, "request", err };
	const unsigned char *p;
	size_t n;

	if (get_tag(&r, TAG_REQUEST) != 0 ||
	    get_text(&r, "PIN", KH_P11_PIN_MAX, true, pin, NULL) != 0 ||
	    get_field(&r, "challenge", KH_CHALLENGE_LEN, &p, &n) != 0)
		return -1;
	if (n != KH_CHALLENGE_LEN)
		return bad(&r, "short", "challenge", n);
	if (get_end(&r) != 0)
		return -1;
	memcpy(challenge, p, n);
	return 0;
}
