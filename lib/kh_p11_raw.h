/*
 * kh_p11_raw — PKCS#11 calls libp11 0.4.12 does not offer, made on the very
 * module libp11 has loaded and initialised (its function list, a session of
 * our own), for what libp11 does not expose: a private key's
 * CKA_ALWAYS_AUTHENTICATE, and finding an object by CKA_ID without reading
 * every object of the token.
 *
 * Internal to lib/ (kh_pkcs11.c): it needs the PKCS#11 types
 * (<p11-kit/pkcs11.h>), which no caller above lib/ should see.
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set.
 */
#ifndef KH_P11_RAW_H
#define KH_P11_RAW_H

#include <stdbool.h>
#include <stddef.h>

#include <p11-kit/pkcs11.h>

#include "lib/kh_error.h"

/* A read-only session of our own on one slot. */
struct kh_p11_raw {
	CK_FUNCTION_LIST_PTR fl;
	CK_SESSION_HANDLE session;
	bool open;
};

/* Open a session on slot_id of the (already initialised) module fl. */
int kh_p11_raw_open(CK_FUNCTION_LIST_PTR fl, CK_SLOT_ID slot_id, struct kh_p11_raw *r,
		    kh_error *err);

/* Close it; a closed or never-opened r is fine. */
void kh_p11_raw_close(struct kh_p11_raw *r);

/* Objects of class cls whose CKA_ID is id (id NULL: any id): up to max
 * handles in objs, their number (up to max) in *n. */
int kh_p11_raw_find(struct kh_p11_raw *r, CK_OBJECT_CLASS cls, const unsigned char *id,
		    size_t id_len, CK_OBJECT_HANDLE *objs, size_t max, size_t *n,
		    kh_error *err);

/* A CK_BBOOL attribute: 1 true, 0 false or absent (what the standard
 * says an absent boolean means), -1 with err when it cannot be read. */
int kh_p11_raw_bool(struct kh_p11_raw *r, CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_TYPE type,
		    kh_error *err);

#endif
