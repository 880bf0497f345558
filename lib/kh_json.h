/*
 * kh_json — jansson settings for documents that carry secrets.
 *
 * jansson copies every string it parses or builds (lexer buffers, string
 * values) and frees them without wiping.  While wiping is enabled, every
 * block jansson frees is cleansed first, so a session key that passed
 * through a JSON document leaves no copy in freed memory.
 *
 * The hooks use the ordinary malloc/free underneath, so blocks allocated
 * before or after (by the host process, or with wiping disabled) stay
 * compatible.  The PAM module enables wiping on entry and disables it
 * before returning, so no pointer into an unloaded module is left behind.
 *
 * Return convention: pointers, NULL on failure (jansson says no more, so
 * there is no err).
 */
#ifndef KH_JSON_H
#define KH_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

void kh_json_wipe_on_free(bool enable);

/* Seed jansson's hash function from getrandom(2) before its first object.
 * Unseeded, jansson opens and reads /dev/urandom itself: three system calls
 * on the exec warm path for the same randomness.  If getrandom fails,
 * jansson seeds itself as before.  A no-op once an object exists. */
void kh_json_seed(void);

/* Decode flags for untrusted input: no duplicate keys, nothing after the value. */
#define KH_JSON_DECODE_FLAGS (JSON_REJECT_DUPLICATES)

/* json_dumps, but compact and into a buffer the caller wipes with
 * kh_secure_free(buf, *len + 1). */
char *kh_json_dump_secret(const json_t *doc, size_t *len);

#endif
