/*
 * kh_p11_uri — PKCS#11 URIs (RFC 7512), path attributes only.
 *
 * Two uses, two parsers.  A key URI (issuer.key, the record's token URI)
 * names a key on a token: token= is required, and object= or id=.  A token
 * URI (token.uri) narrows the tokens a login considers: only attributes of
 * a token and its slot are allowed, and "pkcs11:" alone matches every token.
 * Query attributes (pin-value, pin-source, module-path) are refused by
 * both: the PIN and the module come from the policy, never from a URI.
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set (KH_ERR_CONFIG: the URI is wrong); kh_p11_uri_format returns
 * NULL with err set.
 */
#ifndef KH_P11_URI_H
#define KH_P11_URI_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/kh_error.h"

/* Longest URI either parser reads: a policy line, not a document. */
#define KH_P11_URI_MAX 4096

/* A parsed "pkcs11:" URI: each text attribute is NULL when absent. */
struct kh_p11_uri {
	/* the token (CK_TOKEN_INFO) */
	char *token;              /* token= (label) */
	char *manufacturer;       /* manufacturer= */
	char *model;              /* model= */
	char *serial;             /* serial= */
	/* its slot (CK_SLOT_INFO, CK_SLOT_ID) */
	char *slot_description;   /* slot-description= */
	char *slot_manufacturer;  /* slot-manufacturer= */
	bool has_slot_id;
	unsigned long slot_id;    /* slot-id=, decimal */
	/* the object, key URIs only */
	char *object;             /* object= (CKA_LABEL) */
	unsigned char *id;        /* id= (CKA_ID bytes) */
	size_t id_len;
};

/* A key URI: token= and object= or id= required; the token and slot
 * attributes above narrow the token further.  Free with kh_p11_uri_clear. */
int kh_p11_uri_parse(const char *uri, struct kh_p11_uri *out, kh_error *err);

/* A token URI: token, manufacturer, model, serial, slot-id,
 * slot-description, slot-manufacturer; nothing is required. */
int kh_p11_uri_parse_token(const char *uri, struct kh_p11_uri *out, kh_error *err);

void kh_p11_uri_clear(struct kh_p11_uri *uri);

/* "pkcs11:token=...;object=...;id=...;serial=..." with RFC 7512 escaping;
 * NULL/"" parts are left out. Caller frees. */
char *kh_p11_uri_format(const char *token, const char *object,
			const char *key_id_hex, const char *serial,
			kh_error *err);

/* Hex (upper or lower, even length) → bytes. Caller frees *out. */
int kh_p11_hex_decode(const char *hex, unsigned char **out, size_t *len,
		      kh_error *err);

/* Bytes → lower-case hex, NUL-terminated, into buf of size >= 2*len+1;
 * returns buf.  (CKA_IDs in messages and URIs.) */
char *kh_p11_hex_encode(const unsigned char *bytes, size_t len, char *buf, size_t size);

#endif
