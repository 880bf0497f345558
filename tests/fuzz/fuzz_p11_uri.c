/* libFuzzer target: PKCS#11 URIs (lib/kh_p11_uri.c), as a key URI
 * (issuer.key) and as a token URI (token.uri).  An accepted URI's text
 * attributes are printable and not empty; what kubehsm prints of a key
 * URI it accepted (kh_p11_uri_format: token, object, id, serial) parses
 * back to the same values, and so does a token URI's token and serial
 * (or, escaped past KH_P11_URI_MAX, is refused for its length only); a
 * token URI matches (kh_p11_uri_mismatch) the token it describes and no
 * token of another label. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kh_p11_uri.h"
#include "lib/kh_pkcs11.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fail(const char *what, const char *uri)
{
	fprintf(stderr, "fuzz_p11_uri: %s: '%s'\n", what, uri);
	abort();
}

static void
check_refusal(const kh_error *err, const char *uri)
{
	if (err->msg[0] == '\0' || strchr(err->msg, '\n') != NULL)
		fail("a refusal without a one-line reason", uri);
}

static bool
text_ok(const char *s)
{
	if (s == NULL)
		return true;
	if (s[0] == '\0')
		return false;
	for (const unsigned char *c = (const unsigned char *)s; *c != '\0'; c++)
		if (*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

static void
check_texts(const struct kh_p11_uri *u, const char *uri)
{
	if (!text_ok(u->token) || !text_ok(u->manufacturer) || !text_ok(u->model) ||
	    !text_ok(u->serial) || !text_ok(u->slot_description) ||
	    !text_ok(u->slot_manufacturer) || !text_ok(u->object))
		fail("an accepted URI holds an empty or unprintable attribute", uri);
	if ((u->id == NULL) != (u->id_len == 0))
		fail("an accepted URI has an id without bytes", uri);
}

static bool
same_text(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/*
 * The printing escapes what the parser took unescaped (a space, say), so
 * it can outgrow what the parsers read: then it is refused for its length
 * and nothing else.  (kubehsm prints URIs from a token's own labels, far
 * below the limit, never from a URI it parsed.)  Frees printed if so.
 */
static bool
too_long(char *printed, const char *uri)
{
	struct kh_p11_uri u;
	kh_error err = { 0 };

	if (strlen(printed) <= KH_P11_URI_MAX)
		return false;
	if (kh_p11_uri_parse_token(printed, &u, &err) == 0 ||
	    strstr(err.msg, "longer than") == NULL)
		fail("a printed URI over the limit is not refused for its length", uri);
	free(printed);
	return true;
}

static void
fuzz_key_uri(const char *uri)
{
	struct kh_p11_uri u, again;
	char hex[2 * KH_P11_URI_MAX + 1];
	char *printed;
	kh_error err = { 0 };

	if (kh_p11_uri_parse(uri, &u, &err) != 0) {
		check_refusal(&err, uri);
		return;
	}
	check_texts(&u, uri);
	if (u.token == NULL || (u.object == NULL && u.id == NULL))
		fail("a key URI accepted without a token or a key", uri);
	if (u.id_len > KH_P11_URI_MAX)
		fail("a key URI's id longer than the URI", uri);
	if (u.id != NULL)
		(void)kh_p11_hex_encode(u.id, u.id_len, hex, sizeof(hex));
	printed = kh_p11_uri_format(u.token, u.object, u.id != NULL ? hex : NULL, u.serial, &err);
	if (printed == NULL)
		fail("an accepted key URI cannot be printed", uri);
	if (too_long(printed, uri)) {
		kh_p11_uri_clear(&u);
		return;
	}
	if (kh_p11_uri_parse(printed, &again, &err) != 0)
		fail("a printed key URI is refused", printed);
	if (!same_text(u.token, again.token) || !same_text(u.object, again.object) ||
	    !same_text(u.serial, again.serial) || u.id_len != again.id_len ||
	    (u.id_len > 0 && memcmp(u.id, again.id, u.id_len) != 0))
		fail("a printed key URI names another key", printed);
	free(printed);
	kh_p11_uri_clear(&again);
	kh_p11_uri_clear(&u);
}

/* A token with exactly the URI's attributes ("" where the URI says none). */
static struct kh_p11_token
token_of(const struct kh_p11_uri *u)
{
	struct kh_p11_token t;

	memset(&t, 0, sizeof(t));
	t.slot_id = u->has_slot_id ? u->slot_id : 7;
	t.slot_description = u->slot_description != NULL ? u->slot_description : (char *)"";
	t.slot_manufacturer = u->slot_manufacturer != NULL ? u->slot_manufacturer : (char *)"";
	t.label = u->token != NULL ? u->token : (char *)"";
	t.manufacturer = u->manufacturer != NULL ? u->manufacturer : (char *)"";
	t.model = u->model != NULL ? u->model : (char *)"";
	t.serial = u->serial != NULL ? u->serial : (char *)"";
	t.present = t.initialized = true;
	return t;
}

static void
fuzz_token_uri(const char *uri)
{
	struct kh_p11_uri u, again;
	struct kh_p11_token t;
	char *printed, *other;
	kh_error err = { 0 };

	if (kh_p11_uri_parse_token(uri, &u, &err) != 0) {
		check_refusal(&err, uri);
		return;
	}
	check_texts(&u, uri);
	if (u.object != NULL || u.id != NULL)
		fail("a token URI accepted with an object", uri);
	t = token_of(&u);
	if (kh_p11_uri_mismatch(&u, &t) != NULL)
		fail("a token URI does not match the token it describes", uri);
	if (u.token != NULL) {
		other = malloc(strlen(u.token) + 2);
		if (other == NULL)
			abort();
		(void)snprintf(other, strlen(u.token) + 2, "%sx", u.token);
		t.label = other;
		if (kh_p11_uri_mismatch(&u, &t) == NULL)
			fail("a token URI matches a token of another label", uri);
		free(other);
	}
	if (u.token != NULL || u.serial != NULL) {
		printed = kh_p11_uri_format(u.token, NULL, NULL, u.serial, &err);
		if (printed == NULL)
			fail("an accepted token URI cannot be printed", uri);
		if (too_long(printed, uri)) {
			kh_p11_uri_clear(&u);
			return;
		}
		if (kh_p11_uri_parse_token(printed, &again, &err) != 0)
			fail("a printed token URI is refused", printed);
		if (!same_text(u.token, again.token) || !same_text(u.serial, again.serial))
			fail("a printed token URI names another token", printed);
		free(printed);
		kh_p11_uri_clear(&again);
	}
	kh_p11_uri_clear(&u);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *uri = malloc(size + 1);

	if (uri == NULL)
		return 0;
	memcpy(uri, data, size);
	uri[size] = '\0';
	fuzz_key_uri(uri);
	fuzz_token_uri(uri);
	free(uri);
	return 0;
}
