#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/kh_mem.h"

#include "lib/kh_json_doc.h"

/* ============================================================ JSON helpers */

/*
 * jansson's messages quote the offending token ("... near '1234'"). The
 * signer request may carry a PIN, and error lines end up in logs, so the
 * quoted part is dropped and only the position kept.
 */
void
kh_json_error_text(const json_error_t *jerr, char *buf, size_t size)
{
	const char *near = strstr(jerr->text, " near ");
	int n = near != NULL ? (int)(near - jerr->text) : (int)strlen(jerr->text);

	(void)snprintf(buf, size, "%.*s", n, jerr->text);
}

/*
 * Parse a whole document that must be one JSON object: duplicate keys are
 * refused, nothing may follow it, NUL bytes in strings and invalid UTF-8 are
 * refused by jansson itself, and nesting is bounded by jansson's parser depth
 * limit (2048).
 */
int
kh_json_load_object(const char *buf, size_t len, size_t max, const char *what,
                    json_t **out, kh_error *err)
{
	json_error_t jerr;
	char text[JSON_ERROR_TEXT_LENGTH];
	json_t *root;

	*out = NULL;
	if (buf == NULL || len == 0)
		return kh_fail(err, KH_ERR_INPUT, "%s is empty", what);
	if (len > max)
		return kh_fail(err, KH_ERR_INPUT,
		               "%s is too large (over %zu bytes)", what, max);
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		kh_json_error_text(&jerr, text, sizeof(text));
		return kh_fail(err, KH_ERR_INPUT,
		               "%s is not valid JSON (line %d, column %d): %s",
		               what, jerr.line, jerr.column, text);
	}
	if (!json_is_object(root)) {
		json_decref(root);
		return kh_fail(err, KH_ERR_INPUT, "%s must be a JSON object", what);
	}
	*out = root;
	return 0;
}

const char *
kh_json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:  return "an object";
	case JSON_ARRAY:   return "an array";
	case JSON_STRING:  return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL:    return "a number";
	case JSON_TRUE:
	case JSON_FALSE:   return "a boolean";
	case JSON_NULL:    return "null";
	}
	return "unknown";
}

/* Fetch an optional string member: 1 present, 0 absent, -1 wrong type. */
int
kh_json_string(json_t *obj, const char *key, const char *where,
               json_t **val, kh_error *err)
{
	json_t *v = json_object_get(obj, key);

	*val = NULL;
	if (v == NULL)
		return 0;
	if (!json_is_string(v))
		return kh_fail(err, KH_ERR_INPUT, "%s%s must be a string, not %s",
		               where, key, kh_json_type_name(v));
	*val = v;
	return 1;
}

/* A string member that must be there. */
int
kh_json_required_string(json_t *obj, const char *key, const char *where,
                        json_t **val, kh_error *err)
{
	int rc = kh_json_string(obj, key, where, val, err);

	if (rc == 0)
		return kh_fail(err, KH_ERR_INPUT, "%s%s is missing", where, key);
	return rc;
}

/* Optional boolean member, false when absent. */
int
kh_json_bool(json_t *obj, const char *key, const char *where, bool *val,
             kh_error *err)
{
	json_t *v = json_object_get(obj, key);

	*val = false;
	if (v == NULL)
		return 0;
	if (!json_is_boolean(v))
		return kh_fail(err, KH_ERR_INPUT, "%s%s must be true or false, not %s",
		               where, key, kh_json_type_name(v));
	*val = json_is_true(v);
	return 0;
}

/* Copy an optional string member into *dst (NULL when absent). */
int
kh_json_dup_string(json_t *obj, const char *key, const char *where,
                   char **dst, size_t *dst_len, kh_error *err)
{
	json_t *v;
	int rc = kh_json_string(obj, key, where, &v, err);

	*dst = NULL;
	if (rc <= 0)
		return rc;
	/* jansson refuses \u0000, so the value has no embedded NUL. */
	*dst = strndup(json_string_value(v), json_string_length(v));
	if (*dst == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	if (dst_len != NULL)
		*dst_len = json_string_length(v);
	return 0;
}

/* Wipe a jansson string's own buffer in place, before the json_t goes away. */
void
kh_json_wipe_string(json_t *s)
{
	if (s != NULL && json_is_string(s))
		explicit_bzero((char *)json_string_value(s), json_string_length(s));
}

/* ======================================================= output buffers */

/* Above this, the bound would waste memory: count the exact size instead. */
#define KH_DUMP_BOUND_MAX (4u << 20)

struct kh_outbuf {
	char *buf;
	size_t cap;
	size_t used;
};

static int
kh_dump_count(const char *chunk, size_t size, void *data)
{
	size_t *n = data;

	(void)chunk;
	if (size > SIZE_MAX - *n)
		return -1;
	*n += size;
	return 0;
}

static int
kh_dump_write(const char *chunk, size_t size, void *data)
{
	struct kh_outbuf *o = data;

	if (size > o->cap - o->used)
		return -1;
	memcpy(o->buf + o->used, chunk, size);
	o->used += size;
	return 0;
}

/* Saturating add: a bound that overflows just means "use the counting pass". */
static size_t
kh_size_add(size_t a, size_t b)
{
	return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/*
 * An upper bound on the compact dump of v: a string byte escapes to at most
 * six bytes ("\u00XX"; a 4-byte UTF-8 character to twelve), numbers and
 * literals take fewer than 32, and each member adds quotes, colon and comma.
 * O(nodes), not O(bytes): string lengths are stored.  Our documents are a
 * few levels deep; anything deeper gets SIZE_MAX (the counting pass).
 */
static size_t
kh_dump_bound(json_t *v, int depth)
{
	size_t n = 2, i;
	const char *k;
	json_t *x;

	if (depth > 16)
		return SIZE_MAX;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		json_object_foreach(v, k, x)
			n = kh_size_add(n, kh_size_add(6 * strlen(k) + 4,
						       kh_dump_bound(x, depth + 1)));
		return n;
	case JSON_ARRAY:
		json_array_foreach(v, i, x)
			n = kh_size_add(n, kh_size_add(1, kh_dump_bound(x, depth + 1)));
		return n;
	case JSON_STRING:
		return json_string_length(v) > (SIZE_MAX - 2) / 6 ? SIZE_MAX
			: 2 + 6 * json_string_length(v);
	default:
		return 32;
	}
}

/* Dump into a buffer of cap bytes (+ room for '\n' and NUL); never grows. */
static int
kh_dump_into(json_t *root, size_t cap, char **out, size_t *out_len)
{
	const size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER;
	struct kh_outbuf o = { NULL, cap, 0 };

	o.buf = malloc(cap + 2);
	if (o.buf == NULL)
		return -1;
	if (json_dump_callback(root, kh_dump_write, &o, flags) != 0 || o.used == 0) {
		kh_secure_free(o.buf, cap + 2);
		return -1;
	}
	o.buf[o.used] = '\n';
	o.buf[o.used + 1] = '\0';
	*out = o.buf;
	*out_len = o.used + 1;
	return 0;
}

/*
 * Serialise `root` compactly, plus '\n' and a NUL, into one buffer that is
 * never reallocated, so nothing that passed through the dump is left in
 * freed memory (the ExecCredential carries the session key).  The buffer is
 * sized from an upper bound computed without serialising, so the document
 * is dumped once; only if that bound is unusable is it counted first.
 */
int
kh_json_dump_line(json_t *root, char **out, size_t *out_len, kh_error *err)
{
	size_t bound = kh_dump_bound(root, 0), n = 0;

	*out = NULL;
	*out_len = 0;
	if (bound <= KH_DUMP_BOUND_MAX && kh_dump_into(root, bound, out, out_len) == 0)
		return 0;
	if (json_dump_callback(root, kh_dump_count, &n,
			       JSON_COMPACT | JSON_PRESERVE_ORDER) != 0 ||
	    n == 0 || n > SIZE_MAX - 2)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot serialise the JSON answer");
	if (kh_dump_into(root, n, out, out_len) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot serialise the JSON answer");
	return 0;
}
