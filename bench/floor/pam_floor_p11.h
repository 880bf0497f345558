/*
 * pam_floor_p11 — the login floor's raw PKCS#11: load the module, find a
 * token by label, find one object, read an attribute, sign.  (bench only)
 */
#ifndef PAM_FLOOR_P11_H
#define PAM_FLOOR_P11_H

#include <stdbool.h>
#include <p11-kit/pkcs11.h>

struct p11 {
	void *dl;
	CK_FUNCTION_LIST_PTR f;
	bool initialized;       /* by us: C_Finalize at the end */
};

int floor_p11_load(struct p11 *p, const char *path);
void floor_p11_unload(struct p11 *p);
bool floor_label_is(const CK_UTF8CHAR label[32], const char *want);
CK_RV floor_p11_find_token(struct p11 *p, const char *label, CK_SLOT_ID *slot, CK_FLAGS *flags);
CK_RV floor_p11_find_one(struct p11 *p, CK_SESSION_HANDLE s, CK_ATTRIBUTE *tmpl, CK_ULONG n,
	     CK_OBJECT_HANDLE *obj);
CK_RV floor_p11_attr(struct p11 *p, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_TYPE type,
	 unsigned char **val, CK_ULONG *len);
CK_RV floor_p11_sign(struct p11 *p, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key, CK_KEY_TYPE kt,
	 const unsigned char *data, size_t len, unsigned char **sig, size_t *siglen);

#endif
