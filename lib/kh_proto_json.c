#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kh_mem.h"
#include "kh_proto.h"
#include "kh_proto_json.h"

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

/*
 * Serialise `root` compactly, plus '\n' and a NUL, into one buffer of exactly
 * the right size. Counting first means no growing buffer is ever reallocated,
 * so nothing that passed through the dump is left in freed memory (the
 * ExecCredential carries the session key).
 */
int
kh_json_dump_line(json_t *root, char **out, size_t *out_len, kh_error *err)
{
	const size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER;
	struct kh_outbuf o = { NULL, 0, 0 };
	size_t n = 0;

	*out = NULL;
	*out_len = 0;
	if (json_dump_callback(root, kh_dump_count, &n, flags) != 0 || n == 0 ||
	    n > SIZE_MAX - 2)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot serialise the JSON answer");
	o.cap = n;
	o.buf = malloc(n + 2);
	if (o.buf == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	if (json_dump_callback(root, kh_dump_write, &o, flags) != 0 || o.used != n) {
		kh_secure_free(o.buf, n + 2);
		return kh_fail(err, KH_ERR_INTERNAL, "cannot serialise the JSON answer");
	}
	o.buf[n] = '\n';
	o.buf[n + 1] = '\0';
	*out = o.buf;
	*out_len = n + 1;
	return 0;
}
