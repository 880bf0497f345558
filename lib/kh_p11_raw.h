/*
 * kh_p11_raw — the PKCS#11 calls kubehsm makes itself, on the very module
 * libp11 has loaded and initialised (its function list, sessions of our
 * own).
 *
 * libp11 loads the module and lists the users' slots.  The rest is here —
 * the certificates a token shows before login, on the session the login
 * then uses (one session per login: every call is a round trip on a
 * network HSM, issue #30), and from C_Login on everything: libp11 0.4.12 cannot find
 * one object by a template (it lists every key of the token and reads
 * several attributes of each: the lookup grew with the HSM partition,
 * issue #30), and libp11 0.4.13 waits for ever in its session pool once
 * C_OpenSession answers CKR_DEVICE_REMOVED (issue #29, fixed in 0.4.14) —
 * which it does for a token pulled after login.  So: the certificates,
 * C_Login and C_Logout, C_FindObjects for exactly the object a caller
 * names, the attributes a key needs, and C_Sign.  Every call returns; none waits on the module.
 *
 * Internal to lib/ (kh_pkcs11.c, kh_p11_raw_key.c): it needs the PKCS#11
 * types (<p11-kit/pkcs11.h>), which no caller above lib/ should see.
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set; a token that went away is KH_ERR_NOTFOUND, with a message
 * naming the call (callers that know the token's label say so instead).
 */
#ifndef KH_P11_RAW_H
#define KH_P11_RAW_H

#include <stdbool.h>
#include <stddef.h>

#include <p11-kit/pkcs11.h>

#include "lib/kh_error.h"

/* A session of our own on one slot. */
struct kh_p11_raw {
	CK_FUNCTION_LIST_PTR fl;
	CK_SLOT_ID slot;
	CK_SESSION_HANDLE session;
	bool open;
};

/* Did the module say the token went away? */
bool kh_p11_raw_gone(CK_RV rv);

/* Open a (read-only, serial) session on slot_id of the initialised module fl. */
int kh_p11_raw_open(CK_FUNCTION_LIST_PTR fl, CK_SLOT_ID slot_id, struct kh_p11_raw *r,
		    kh_error *err);

/* Close it; a closed or never-opened r is fine. */
void kh_p11_raw_close(struct kh_p11_raw *r);

/* Is a token present in slot_id (C_GetSlotInfo)?  1 yes, 0 no (or the
 * slot is gone), -1 with err when the module cannot say. */
int kh_p11_raw_token_present(CK_FUNCTION_LIST_PTR fl, CK_SLOT_ID slot_id, kh_error *err);

/* C_Login as the user (CKR_USER_ALREADY_LOGGED_IN is success).  The CK_RV. */
CK_RV kh_p11_raw_login(struct kh_p11_raw *r, const char *pin);

/* C_Logout.  The CK_RV (CKR_USER_NOT_LOGGED_IN is success). */
CK_RV kh_p11_raw_logout(struct kh_p11_raw *r);

/* What names one object: its class, and CKA_LABEL and/or CKA_ID (NULL:
 * don't match on it). */
struct kh_p11_raw_match {
	CK_OBJECT_CLASS cls;
	const char *label;
	const unsigned char *id;
	size_t id_len;
};

/* The objects m names, by one C_FindObjectsInit/C_FindObjects/
 * C_FindObjectsFinal: up to max handles in objs, their number in *n. */
int kh_p11_raw_find(struct kh_p11_raw *r, const struct kh_p11_raw_match *m,
		    CK_OBJECT_HANDLE *objs, size_t max, size_t *n, kh_error *err);

/* Every X.509 certificate object of the token (CKO_CERTIFICATE,
 * CKC_X_509): their handles in *objs (free()), their number in *n. */
int kh_p11_raw_find_certs(struct kh_p11_raw *r, CK_OBJECT_HANDLE **objs, size_t *n,
			  kh_error *err);

/* A private key's type and CKA_ALWAYS_AUTHENTICATE, in one
 * C_GetAttributeValue (an absent CKA_ALWAYS_AUTHENTICATE is false, as the
 * standard says; an absent CKA_KEY_TYPE is an error). */
int kh_p11_raw_key_facts(struct kh_p11_raw *r, CK_OBJECT_HANDLE obj, CK_KEY_TYPE *type,
			 bool *always_auth, kh_error *err);

/* A CK_BBOOL attribute: 1 true, 0 false or absent (what the standard
 * says an absent boolean means), -1 with err when it cannot be read. */
int kh_p11_raw_bool(struct kh_p11_raw *r, CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_TYPE type,
		    kh_error *err);

/*
 * Read the attributes of tmpl (types set, pValue NULL) in two calls, sizes
 * then values, whatever their number.  Each pValue is then malloc'd (free
 * with kh_p11_raw_attrs_free) and ulValueLen its length; an attribute the
 * object does not have keeps pValue NULL and ulValueLen
 * CK_UNAVAILABLE_INFORMATION.
 */
int kh_p11_raw_attrs(struct kh_p11_raw *r, CK_OBJECT_HANDLE obj, CK_ATTRIBUTE *tmpl,
		     size_t n, kh_error *err);
void kh_p11_raw_attrs_free(CK_ATTRIBUTE *tmpl, size_t n);

/*
 * One signature: C_SignInit with mechanism mech on key, the
 * context-specific C_Login with pin when it is not NULL (a key with
 * CKA_ALWAYS_AUTHENTICATE), C_Sign of in into sig (*sig_len: its size in,
 * the signature's length out).  The CK_RV of the call that failed.
 */
CK_RV kh_p11_raw_sign(struct kh_p11_raw *r, CK_OBJECT_HANDLE key, CK_MECHANISM_TYPE mech,
		      const char *pin, const unsigned char *in, size_t in_len,
		      unsigned char *sig, size_t *sig_len);

#endif
