/*
 * kh_p11_raw — see kh_p11_raw.h.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "lib/kh_p11_raw.h"

bool
kh_p11_raw_gone(CK_RV rv)
{
	return rv == CKR_TOKEN_NOT_PRESENT || rv == CKR_DEVICE_REMOVED;
}

/* A failed call: KH_ERR_NOTFOUND when the token went away. */
static int
kh_p11_raw_fail(kh_error *err, CK_RV rv, const char *what)
{
	if (kh_p11_raw_gone(rv))
		return kh_fail(err, KH_ERR_NOTFOUND, "%s: the token was removed (CKR 0x%lx)", what,
			       (unsigned long)rv);
	return kh_fail(err, KH_ERR_TOKEN, "%s failed (CKR 0x%lx)", what, (unsigned long)rv);
}

int
kh_p11_raw_open(CK_FUNCTION_LIST_PTR fl, CK_SLOT_ID slot_id, struct kh_p11_raw *r,
		kh_error *err)
{
	CK_RV rv;

	memset(r, 0, sizeof(*r));
	if (fl == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "no PKCS#11 function list");
	r->fl = fl;
	r->slot = slot_id;
	/* Read-only, serial: a user login, lookups and signatures need no
	 * more.  Login state is per application and token, so what C_Login
	 * does on this session holds for every session of ours. */
	rv = fl->C_OpenSession(slot_id, CKF_SERIAL_SESSION, NULL, NULL, &r->session);
	if (rv != CKR_OK)
		return kh_p11_raw_fail(err, rv, "C_OpenSession");
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
kh_p11_raw_token_present(CK_FUNCTION_LIST_PTR fl, CK_SLOT_ID slot_id, kh_error *err)
{
	CK_SLOT_INFO info;
	CK_RV rv;

	if (fl == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "no PKCS#11 function list");
	rv = fl->C_GetSlotInfo(slot_id, &info);
	if (rv == CKR_SLOT_ID_INVALID || kh_p11_raw_gone(rv))
		return 0;
	if (rv != CKR_OK)
		return kh_p11_raw_fail(err, rv, "C_GetSlotInfo");
	return (info.flags & CKF_TOKEN_PRESENT) != 0;
}

CK_RV
kh_p11_raw_login(struct kh_p11_raw *r, const char *pin)
{
	CK_RV rv = r->fl->C_Login(r->session, CKU_USER, (CK_UTF8CHAR_PTR)pin,
				  (CK_ULONG)strlen(pin));

	return rv == CKR_USER_ALREADY_LOGGED_IN ? CKR_OK : rv;
}

CK_RV
kh_p11_raw_logout(struct kh_p11_raw *r)
{
	CK_RV rv = r->fl->C_Logout(r->session);

	return rv == CKR_USER_NOT_LOGGED_IN ? CKR_OK : rv;
}

int
kh_p11_raw_find(struct kh_p11_raw *r, const struct kh_p11_raw_match *m,
		CK_OBJECT_HANDLE *objs, size_t max, size_t *n, kh_error *err)
{
	CK_OBJECT_CLASS cls = m->cls;
	CK_ATTRIBUTE tmpl[3] = { { CKA_CLASS, &cls, sizeof(cls) } };
	CK_ULONG ntmpl = 1, got = 0;
	CK_RV rv, rv2;

	*n = 0;
	if (m->label != NULL)
		tmpl[ntmpl++] = (CK_ATTRIBUTE){ CKA_LABEL, (void *)m->label,
						(CK_ULONG)strlen(m->label) };
	if (m->id != NULL)
		tmpl[ntmpl++] = (CK_ATTRIBUTE){ CKA_ID, (void *)m->id, (CK_ULONG)m->id_len };
	rv = r->fl->C_FindObjectsInit(r->session, tmpl, ntmpl);
	if (rv != CKR_OK)
		return kh_p11_raw_fail(err, rv, "C_FindObjectsInit");
	rv = r->fl->C_FindObjects(r->session, objs, (CK_ULONG)max, &got);
	/* Always end the search, or the session stays unusable. */
	rv2 = r->fl->C_FindObjectsFinal(r->session);
	if (rv != CKR_OK || rv2 != CKR_OK)
		return kh_p11_raw_fail(err, rv != CKR_OK ? rv : rv2, "C_FindObjects");
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
		return kh_p11_raw_fail(err, rv != CKR_OK ? rv : CKR_ATTRIBUTE_VALUE_INVALID,
				       "C_GetAttributeValue");
	return v != CK_FALSE;
}

/* More certificates than this on one token is a token we do not read. */
#define KH_P11_CERTS_MAX 1024
/* Handles asked for per C_FindObjects: every token measured answers all it
 * has up to that in one call, so a user's token costs one. */
#define KH_P11_CERTS_BATCH 32

int
kh_p11_raw_find_certs(struct kh_p11_raw *r, CK_OBJECT_HANDLE **objs, size_t *n,
		      kh_error *err)
{
	CK_OBJECT_CLASS cls = CKO_CERTIFICATE;
	CK_CERTIFICATE_TYPE type = CKC_X_509;
	CK_ATTRIBUTE tmpl[2] = {
		{ CKA_CLASS, &cls, sizeof(cls) },
		{ CKA_CERTIFICATE_TYPE, &type, sizeof(type) },
	};
	CK_OBJECT_HANDLE *h = NULL, *grown;
	CK_ULONG got = 0;
	size_t have = 0;
	CK_RV rv, rv2;

	*objs = NULL;
	*n = 0;
	rv = r->fl->C_FindObjectsInit(r->session, tmpl, 2);
	if (rv != CKR_OK)
		return kh_p11_raw_fail(err, rv, "C_FindObjectsInit");
	/* Fewer handles than asked for is the end (what the modules do; the
	 * standard's own end is an answer of none, one more round trip). */
	do {
		if (have + KH_P11_CERTS_BATCH > KH_P11_CERTS_MAX) {
			(void)r->fl->C_FindObjectsFinal(r->session);
			free(h);
			return kh_fail(err, KH_ERR_TOKEN, "the token holds more than %u certificates",
				       KH_P11_CERTS_MAX);
		}
		grown = realloc(h, (have + KH_P11_CERTS_BATCH) * sizeof(*h));
		if (grown == NULL) {
			(void)r->fl->C_FindObjectsFinal(r->session);
			free(h);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
		h = grown;
		got = 0;
		rv = r->fl->C_FindObjects(r->session, h + have, KH_P11_CERTS_BATCH, &got);
		if (rv == CKR_OK)
			have += got > KH_P11_CERTS_BATCH ? KH_P11_CERTS_BATCH : (size_t)got;
	} while (rv == CKR_OK && got == KH_P11_CERTS_BATCH);
	rv2 = r->fl->C_FindObjectsFinal(r->session);
	if (rv != CKR_OK || rv2 != CKR_OK) {
		free(h);
		return kh_p11_raw_fail(err, rv != CKR_OK ? rv : rv2, "C_FindObjects");
	}
	*objs = h;
	*n = have;
	return 0;
}

int
kh_p11_raw_key_facts(struct kh_p11_raw *r, CK_OBJECT_HANDLE obj, CK_KEY_TYPE *type,
		     bool *always_auth, kh_error *err)
{
	CK_KEY_TYPE t = CKK_VENDOR_DEFINED;
	CK_BBOOL aa = CK_FALSE;
	CK_ATTRIBUTE a[2] = {
		{ CKA_KEY_TYPE, &t, sizeof(t) },
		{ CKA_ALWAYS_AUTHENTICATE, &aa, sizeof(aa) },
	};
	CK_RV rv = r->fl->C_GetAttributeValue(r->session, obj, a, 2);

	/* A module without CKA_ALWAYS_AUTHENTICATE answers TYPE_INVALID and
	 * still fills in the key type (PKCS#11 2.40, C_GetAttributeValue). */
	if (rv != CKR_OK && rv != CKR_ATTRIBUTE_TYPE_INVALID)
		return kh_p11_raw_fail(err, rv, "C_GetAttributeValue");
	if (a[0].ulValueLen != sizeof(t))
		return kh_fail(err, KH_ERR_TOKEN, "the key has no CKA_KEY_TYPE");
	*type = t;
	*always_auth = a[1].ulValueLen == sizeof(aa) && aa != CK_FALSE;
	return 0;
}

void
kh_p11_raw_attrs_free(CK_ATTRIBUTE *tmpl, size_t n)
{
	for (size_t i = 0; tmpl != NULL && i < n; i++) {
		free(tmpl[i].pValue);
		tmpl[i].pValue = NULL;
		tmpl[i].ulValueLen = CK_UNAVAILABLE_INFORMATION;
	}
}

/* The largest attribute we read (an RSA-16384 modulus is 2 KiB; a
 * certificate rarely passes 4). */
#define KH_P11_ATTR_MAX (64u * 1024u)

int
kh_p11_raw_attrs(struct kh_p11_raw *r, CK_OBJECT_HANDLE obj, CK_ATTRIBUTE *tmpl, size_t n,
		 kh_error *err)
{
	CK_RV rv;
	size_t i;

	for (i = 0; i < n; i++) {
		tmpl[i].pValue = NULL;
		tmpl[i].ulValueLen = 0;
	}
	/* Sizes.  An attribute the object lacks makes the call answer
	 * CKR_ATTRIBUTE_TYPE_INVALID (or _SENSITIVE) while every other one is
	 * still answered (PKCS#11 2.40, C_GetAttributeValue). */
	rv = r->fl->C_GetAttributeValue(r->session, obj, tmpl, (CK_ULONG)n);
	if (rv != CKR_OK && rv != CKR_ATTRIBUTE_TYPE_INVALID && rv != CKR_ATTRIBUTE_SENSITIVE)
		return kh_p11_raw_fail(err, rv, "C_GetAttributeValue");
	for (i = 0; i < n; i++) {
		if (tmpl[i].ulValueLen == CK_UNAVAILABLE_INFORMATION || tmpl[i].ulValueLen == 0)
			continue;
		if (tmpl[i].ulValueLen > KH_P11_ATTR_MAX) {
			kh_p11_raw_attrs_free(tmpl, n);
			return kh_fail(err, KH_ERR_TOKEN, "attribute 0x%lx is %lu bytes long",
				       (unsigned long)tmpl[i].type, (unsigned long)tmpl[i].ulValueLen);
		}
		tmpl[i].pValue = malloc(tmpl[i].ulValueLen);
		if (tmpl[i].pValue == NULL) {
			kh_p11_raw_attrs_free(tmpl, n);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
	}
	/* Values: the absent ones go as pValue NULL again and stay absent. */
	rv = r->fl->C_GetAttributeValue(r->session, obj, tmpl, (CK_ULONG)n);
	if (rv != CKR_OK && rv != CKR_ATTRIBUTE_TYPE_INVALID && rv != CKR_ATTRIBUTE_SENSITIVE) {
		kh_p11_raw_attrs_free(tmpl, n);
		return kh_p11_raw_fail(err, rv, "C_GetAttributeValue");
	}
	for (i = 0; i < n; i++) {
		if (tmpl[i].pValue == NULL) {
			tmpl[i].ulValueLen = CK_UNAVAILABLE_INFORMATION;
		} else if (tmpl[i].ulValueLen == CK_UNAVAILABLE_INFORMATION) {
			free(tmpl[i].pValue);
			tmpl[i].pValue = NULL;
		}
	}
	return 0;
}

CK_RV
kh_p11_raw_sign(struct kh_p11_raw *r, CK_OBJECT_HANDLE key, CK_MECHANISM_TYPE mech,
		const char *pin, const unsigned char *in, size_t in_len, unsigned char *sig,
		size_t *sig_len)
{
	CK_MECHANISM m = { mech, NULL, 0 };
	CK_ULONG len = (CK_ULONG)*sig_len;
	CK_SLOT_INFO si;
	CK_RV rv;

	/* A card pulled since the last call: OpenSC learns of it in
	 * C_GetSlotInfo, and its C_Sign on a card that is gone waited for
	 * ever on its own card mutex (OpenSC 0.23, measured).  One call, and
	 * the answer is the module's: a slot it cannot read is left to
	 * C_SignInit. */
	if (r->fl->C_GetSlotInfo(r->slot, &si) == CKR_OK && !(si.flags & CKF_TOKEN_PRESENT))
		return CKR_TOKEN_NOT_PRESENT;
	rv = r->fl->C_SignInit(r->session, &m, key);
	if (rv != CKR_OK)
		return rv;
	if (pin != NULL) {
		/* CKA_ALWAYS_AUTHENTICATE: the PIN once more, for this
		 * operation only.  A failure leaves the operation active:
		 * C_SignInit with no mechanism ends it (PKCS#11 3.0; an
		 * older module refuses the call, and the key is unusable
		 * then anyway). */
		rv = r->fl->C_Login(r->session, CKU_CONTEXT_SPECIFIC, (CK_UTF8CHAR_PTR)pin,
				    (CK_ULONG)strlen(pin));
		if (rv != CKR_OK) {
			(void)r->fl->C_SignInit(r->session, NULL, key);
			return rv;
		}
	}
	rv = r->fl->C_Sign(r->session, (CK_BYTE_PTR)in, (CK_ULONG)in_len, sig, &len);
	if (rv == CKR_OK)
		*sig_len = (size_t)len;
	return rv;
}
