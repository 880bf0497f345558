/*
 * kh_p11_raw — see kh_p11_raw.h.
 */
#include "config.h"

#include <string.h>

#include "lib/kh_p11_raw.h"

int
kh_p11_raw_open(CK_FUNCTION_LIST_PTR fl, CK_SLOT_ID slot_id, struct kh_p11_raw *r,
		kh_error *err)
{
	CK_RV rv;

	memset(r, 0, sizeof(*r));
	if (fl == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "no PKCS#11 function list");
	r->fl = fl;
	/* Read-only, serial: it only looks.  A session of ours does not change
	 * the login state libp11's sessions share with it (PKCS#11 login state
	 * is per application and token). */
	rv = fl->C_OpenSession(slot_id, CKF_SERIAL_SESSION, NULL, NULL, &r->session);
	if (rv != CKR_OK)
		return kh_fail(err, rv == CKR_TOKEN_NOT_PRESENT || rv == CKR_DEVICE_REMOVED ?
			       KH_ERR_NOTFOUND : KH_ERR_TOKEN,
			       "cannot open a session on slot %lu (CKR 0x%lx)",
			       (unsigned long)slot_id, (unsigned long)rv);
	r->open = true;
	return 0;
}

void
kh_p11_raw_close(struct kh_p11_raw *r)
{
	if (r == NULL || !r->open)
		return;
	(void)r->fl->C_CloseSession(r->session);
	r->open = false;
}

int
kh_p11_raw_find(struct kh_p11_raw *r, CK_OBJECT_CLASS cls, const unsigned char *id,
		size_t id_len, CK_OBJECT_HANDLE *objs, size_t max, size_t *n, kh_error *err)
{
	CK_ATTRIBUTE tmpl[2] = {
		{ CKA_CLASS, &cls, sizeof(cls) },
		{ CKA_ID, (void *)id, (CK_ULONG)id_len },
	};
	CK_ULONG got = 0;
	CK_RV rv, rv2;

	*n = 0;
	rv = r->fl->C_FindObjectsInit(r->session, tmpl, id != NULL ? 2 : 1);
	if (rv != CKR_OK)
		return kh_fail(err, KH_ERR_TOKEN, "cannot search the token (CKR 0x%lx)",
			       (unsigned long)rv);
	rv = r->fl->C_FindObjects(r->session, objs, (CK_ULONG)max, &got);
	/* Always end the search, or the session stays unusable. */
	rv2 = r->fl->C_FindObjectsFinal(r->session);
	if (rv != CKR_OK || rv2 != CKR_OK)
		return kh_fail(err, KH_ERR_TOKEN, "cannot search the token (CKR 0x%lx)",
			       (unsigned long)(rv != CKR_OK ? rv : rv2));
	*n = got > max ? max : (size_t)got;
	return 0;
}

int
kh_p11_raw_bool(struct kh_p11_raw *r, CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_TYPE type,
		kh_error *err)
{
	CK_BBOOL v = CK_FALSE;
	CK_ATTRIBUTE a = { type, &v, sizeof(v) };
	CK_RV rv = r->fl->C_GetAttributeValue(r->session, obj, &a, 1);

	if (rv == CKR_ATTRIBUTE_TYPE_INVALID)
		return 0;
	if (rv != CKR_OK || a.ulValueLen != sizeof(v))
		return kh_fail(err, KH_ERR_TOKEN, "cannot read attribute 0x%lx (CKR 0x%lx)",
			       (unsigned long)type, (unsigned long)rv);
	return v != CK_FALSE;
}
