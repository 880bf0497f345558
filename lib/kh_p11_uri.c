/*
 * kh_p11_uri — see kh_p11_uri.h.  Plain C, no library: the policy loader
 * checks token.uri with it, and it must not need a PKCS#11 module or
 * OpenSSL to do so.
 */
#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/kh_p11_uri.h"

enum uri_kind { URI_KEY, URI_TOKEN };

void
kh_p11_uri_clear(struct kh_p11_uri *uri)
{
	if (uri == NULL)
		return;
	free(uri->token);
	free(uri->manufacturer);
	free(uri->model);
	free(uri->serial);
	free(uri->slot_description);
	free(uri->slot_manufacturer);
	free(uri->object);
	free(uri->id);
	memset(uri, 0, sizeof(*uri));
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode [s, s+n) into a new NUL-terminated buffer. */
static int
pct_decode(const char *s, size_t n, unsigned char **out, size_t *outlen,
	   const char *what, kh_error *err)
{
	unsigned char *buf = malloc(n + 1);
	size_t i, j = 0;

	if (buf == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	for (i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
			int lo = i + 2 < n ? hexval(s[i + 2]) : -1;

			if (hi < 0 || lo < 0) {
				free(buf);
				return kh_fail(err, KH_ERR_CONFIG,
					       "PKCS#11 URI: bad percent escape in '%s'", what);
			}
			buf[j++] = (unsigned char)(hi << 4 | lo);
			i += 2;
		} else {
			buf[j++] = (unsigned char)s[i];
		}
	}
	buf[j] = '\0';
	*out = buf;
	*outlen = j;
	return 0;
}

/* A text attribute: given once, not empty, no NUL or other control
 * character hidden in an escape (it is compared with, and printed as,
 * what a token reports). */
static int
uri_text(const char *v, size_t n, char **dst, const char *name, kh_error *err)
{
	unsigned char *buf;
	size_t len, i;

	if (*dst != NULL)
		return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: '%s' given twice", name);
	if (pct_decode(v, n, &buf, &len, name, err) != 0)
		return -1;
	for (i = 0; i < len; i++)
		if (buf[i] < 0x20 || buf[i] == 0x7f)
			break;
	if (len == 0 || i < len) {
		free(buf);
		return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: '%s' is empty or holds a "
			       "control character", name);
	}
	*dst = (char *)buf;
	return 0;
}

static int
uri_id(struct kh_p11_uri *u, const char *v, size_t n, kh_error *err)
{
	unsigned char *buf;
	size_t len;

	if (u->id != NULL)
		return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: 'id' given twice");
	if (pct_decode(v, n, &buf, &len, "id", err) != 0)
		return -1;
	if (len == 0) {
		free(buf);
		return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: 'id' is empty");
	}
	u->id = buf;
	u->id_len = len;
	return 0;
}

/* slot-id: a decimal CK_SLOT_ID, digits only. */
static int
uri_slot_id(struct kh_p11_uri *u, const char *v, size_t n, kh_error *err)
{
	unsigned long id = 0;
	size_t i;

	if (u->has_slot_id)
		return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: 'slot-id' given twice");
	if (n == 0 || n > 20)
		return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: 'slot-id' must be a decimal number");
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9' ||
		    id > (ULONG_MAX - (unsigned long)(v[i] - '0')) / 10)
			return kh_fail(err, KH_ERR_CONFIG,
				       "PKCS#11 URI: 'slot-id' must be a decimal number");
		id = id * 10 + (unsigned long)(v[i] - '0');
	}
	u->has_slot_id = true;
	u->slot_id = id;
	return 0;
}

#define KH_IS(name) (klen == strlen(name) && strncmp(attr, (name), klen) == 0)

/* The text attributes of a token and its slot, as RFC 7512 names them;
 * NULL for any other name. */
static char **
token_attr(struct kh_p11_uri *u, const char *attr, size_t klen, const char **name)
{
	static const char *const names[] = {
		"token", "manufacturer", "model", "serial", "slot-description",
		"slot-manufacturer",
	};
	char **fields[] = {
		&u->token, &u->manufacturer, &u->model, &u->serial, &u->slot_description,
		&u->slot_manufacturer,
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (KH_IS(names[i])) {
			*name = names[i];
			return fields[i];
		}
	}
	return NULL;
}

static int
uri_attr(struct kh_p11_uri *u, enum uri_kind kind, const char *attr, size_t n,
	 kh_error *err)
{
	const char *eq = memchr(attr, '=', n);
	size_t klen, vlen;
	const char *v, *name = NULL;
	char **text;

	if (eq == NULL)
		return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: attribute '%.*s' has no '='",
			       (int)(n > 64 ? 64 : n), attr);
	klen = (size_t)(eq - attr);
	v = eq + 1;
	vlen = n - klen - 1;
	if ((text = token_attr(u, attr, klen, &name)) != NULL)
		return uri_text(v, vlen, text, name, err);
	if (KH_IS("slot-id"))
		return uri_slot_id(u, v, vlen, err);
	if (kind == URI_KEY && KH_IS("object"))
		return uri_text(v, vlen, &u->object, "object", err);
	if (kind == URI_KEY && KH_IS("id"))
		return uri_id(u, v, vlen, err);
	if (kind == URI_KEY && KH_IS("type")) {
		/* Only a private key makes sense for the issuer. */
		if (vlen == strlen("private") && strncmp(v, "private", vlen) == 0)
			return 0;
		return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: type must be 'private'");
	}
	if (kind == URI_TOKEN)
		return kh_fail(err, KH_ERR_CONFIG,
			       "PKCS#11 URI: '%.*s' does not name a token (use token, manufacturer, "
			       "model, serial, slot-id, slot-description, slot-manufacturer)",
			       (int)(klen > 64 ? 64 : klen), attr);
	return kh_fail(err, KH_ERR_CONFIG,
		       "PKCS#11 URI: unsupported attribute '%.*s' (use token, object, id, serial)",
		       (int)(klen > 64 ? 64 : klen), attr);
}
#undef KH_IS

static int
uri_parse(const char *uri, enum uri_kind kind, struct kh_p11_uri *out, kh_error *err)
{
	const char *s, *end;

	memset(out, 0, sizeof(*out));
	if (uri == NULL || strncasecmp(uri, "pkcs11:", 7) != 0)
		return kh_fail(err, KH_ERR_CONFIG, "'%.64s' is not a PKCS#11 URI (pkcs11:...)",
			       uri != NULL ? uri : "");
	if (strlen(uri) > KH_P11_URI_MAX)
		return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI longer than %d bytes",
			       KH_P11_URI_MAX);
	s = uri + 7;
	/* Query attributes (pin-value, pin-source, module-path) would move the
	 * PIN or the module into the URI: those come from the policy instead. */
	if (strchr(s, '?') != NULL || strchr(s, '#') != NULL)
		return kh_fail(err, KH_ERR_CONFIG,
			       "PKCS#11 URI '%s': query attributes are not supported", uri);
	while (*s != '\0') {
		end = strchr(s, ';');
		if (end == NULL)
			end = s + strlen(s);
		if (end == s) {
			kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI '%s': empty attribute", uri);
			goto fail;
		}
		if (uri_attr(out, kind, s, (size_t)(end - s), err) != 0)
			goto fail;
		s = *end == ';' ? end + 1 : end;
	}
	return 0;
fail:
	kh_p11_uri_clear(out);
	return -1;
}

int
kh_p11_uri_parse(const char *uri, struct kh_p11_uri *out, kh_error *err)
{
	if (uri_parse(uri, URI_KEY, out, err) != 0)
		return -1;
	if (out->token == NULL) {
		kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI '%s' names no token (token=...)", uri);
		goto fail;
	}
	if (out->object == NULL && out->id == NULL) {
		kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI '%s' names no key (object=... or id=...)", uri);
		goto fail;
	}
	return 0;
fail:
	kh_p11_uri_clear(out);
	return -1;
}

int
kh_p11_uri_parse_token(const char *uri, struct kh_p11_uri *out, kh_error *err)
{
	return uri_parse(uri, URI_TOKEN, out, err);
}

/* ---- formatting ---- */

/* A growing string; `failed` sticks once an allocation fails. */
struct sbuf {
	char *s;
	size_t len, cap;
	bool failed;
};

static void
sbuf_put(struct sbuf *b, const char *s, size_t n)
{
	char *ns;
	size_t want;

	if (b->failed)
		return;
	want = b->len + n + 1;
	if (want > b->cap) {
		size_t cap = b->cap ? b->cap : 64;

		while (cap < want)
			cap *= 2;
		ns = realloc(b->s, cap);
		if (ns == NULL) {
			b->failed = true;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

/* RFC 7512 pchar without escaping: unreserved characters. */
static bool
uri_plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

static void
uri_append(struct sbuf *b, bool *first, const char *name, const unsigned char *v,
	   size_t n, bool all_escaped)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;

	if (!*first)
		sbuf_put(b, ";", 1);
	*first = false;
	sbuf_put(b, name, strlen(name));
	sbuf_put(b, "=", 1);
	for (i = 0; i < n; i++) {
		char esc[3] = { '%', hex[v[i] >> 4], hex[v[i] & 0xf] };

		if (!all_escaped && uri_plain(v[i]))
			sbuf_put(b, (const char *)&v[i], 1);
		else
			sbuf_put(b, esc, 3);
	}
}

char *
kh_p11_uri_format(const char *token, const char *object, const char *key_id_hex,
		  const char *serial, kh_error *err)
{
	struct sbuf b = { 0 };
	unsigned char *id = NULL;
	size_t idlen = 0;
	bool first = true;

	if (key_id_hex != NULL && key_id_hex[0] != '\0' &&
	    kh_p11_hex_decode(key_id_hex, &id, &idlen, err) != 0)
		return NULL;
	sbuf_put(&b, "pkcs11:", 7);
	if (token != NULL && token[0] != '\0')
		uri_append(&b, &first, "token", (const unsigned char *)token, strlen(token), false);
	if (object != NULL && object[0] != '\0')
		uri_append(&b, &first, "object", (const unsigned char *)object, strlen(object), false);
	if (id != NULL)
		uri_append(&b, &first, "id", id, idlen, true);
	if (serial != NULL && serial[0] != '\0')
		uri_append(&b, &first, "serial", (const unsigned char *)serial, strlen(serial), false);
	free(id);
	if (b.failed) {
		free(b.s);
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	return b.s;
}

/* ---- hex ---- */

int
kh_p11_hex_decode(const char *hex, unsigned char **out, size_t *len, kh_error *err)
{
	size_t n, i;
	unsigned char *buf;

	*out = NULL;
	*len = 0;
	n = hex != NULL ? strlen(hex) : 0;
	if (n == 0 || n % 2 != 0)
		return kh_fail(err, KH_ERR_INPUT, "key id '%.64s' is not an even-length hex string",
			       hex != NULL ? hex : "");
	for (i = 0; i < n; i++)
		if (hexval(hex[i]) < 0)
			return kh_fail(err, KH_ERR_INPUT, "key id '%.64s' is not a hex string", hex);
	buf = malloc(n / 2);
	if (buf == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	for (i = 0; i < n / 2; i++)
		buf[i] = (unsigned char)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
	*out = buf;
	*len = n / 2;
	return 0;
}

char *
kh_p11_hex_encode(const unsigned char *bytes, size_t len, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (size == 0)
		return buf;
	for (i = 0; i < len && 2 * i + 2 < size; i++) {
		buf[2 * i] = hex[bytes[i] >> 4];
		buf[2 * i + 1] = hex[bytes[i] & 0xf];
	}
	buf[2 * i] = '\0';
	return buf;
}
