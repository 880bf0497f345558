/*
 * kh_json_doc — JSON helpers shared by the protocol codecs (internal).
 *
 * Strict decoding of untrusted documents, typed field access with messages
 * that name the field, and one-line output into a buffer sized exactly so
 * that a secret in it is never left behind in a reallocated block.
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set (KH_ERR_INPUT for a document that is wrong), unless noted:
 * the string-field getters return 1 when the field is there.
 */
#ifndef KH_JSON_DOC_H
#define KH_JSON_DOC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "lib/kh_error.h"

/* jansson's error, without the quoted token (it may be a secret). */
void kh_json_error_text(const json_error_t *jerr, char *buf, size_t size);

/* Decode at most max bytes into an object (duplicate keys refused). */
int kh_json_load_object(const char *buf, size_t len, size_t max,
			const char *what, json_t **out, kh_error *err);

/* "string", "integer", ... for messages. */
const char *kh_json_type_name(const json_t *v);

/* Optional / required string field; *val is borrowed from obj.  Not the
 * convention above: kh_json_string returns 1 when the field is there, 0
 * when it is absent, -1 when it is not a string; kh_json_required_string
 * returns 1 when it is there and -1 otherwise. */
int kh_json_string(json_t *obj, const char *key, const char *where,
		   json_t **val, kh_error *err);
int kh_json_required_string(json_t *obj, const char *key, const char *where,
			    json_t **val, kh_error *err);

/* Optional boolean field (false when absent). */
int kh_json_bool(json_t *obj, const char *key, const char *where, bool *val,
		 kh_error *err);

/* Optional string field, copied (NULs refused). */
int kh_json_dup_string(json_t *obj, const char *key, const char *where,
		       char **dst, size_t *dst_len, kh_error *err);

/* Wipe a jansson string's own buffer before the json_t is released. */
void kh_json_wipe_string(json_t *s);

/* Compact one-line dump plus newline, into an exactly sized buffer. */
int kh_json_dump_line(json_t *root, char **out, size_t *out_len, kh_error *err);

#endif
