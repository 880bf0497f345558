/*
 * pam_floor_p11 — the raw PKCS#11 calls of the login floor (bench only; see
 * pam_floor.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "pam_floor_p11.h"

#define MAX_SLOTS 64


int
floor_p11_load(struct p11 *p, const char *path)
{
	CK_C_GetFunctionList get;
	CK_C_INITIALIZE_ARGS args = { .flags = CKF_OS_LOCKING_OK };
	CK_RV rv;

	p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (p->dl == NULL)
		return -1;
	get = (CK_C_GetFunctionList)dlsym(p->dl, "C_GetFunctionList");
	if (get == NULL || get(&p->f) != CKR_OK)
		return -1;
	/* Another module of the host may have initialised it: then it is
	 * theirs to finalise. */
	rv = p->f->C_Initialize(&args);
	if (rv != CKR_OK && rv != CKR_CRYPTOKI_ALREADY_INITIALIZED)
		return -1;
	p->initialized = rv == CKR_OK;
	return 0;
}

void
floor_p11_unload(struct p11 *p)
{
	if (p->initialized)
		(void)p->f->C_Finalize(NULL);
	if (p->dl != NULL)
		dlclose(p->dl);
	memset(p, 0, sizeof(*p));
}

/* A token label is blank-padded to 32 bytes. */
bool
floor_label_is(const CK_UTF8CHAR label[32], const char *want)
{
	size_t n = strlen(want);

	if (n > 32 || memcmp(label, want, n) != 0)
		return false;
	for (; n < 32; n++)
		if (label[n] != ' ')
			return false;
	return true;
}

/* The slot of the initialised token labelled LABEL (among the first
 * MAX_SLOTS: enough for a benchmark); its flags in *flags. */
CK_RV
floor_p11_find_token(struct p11 *p, const char *label, CK_SLOT_ID *slot, CK_FLAGS *flags)
{
	CK_SLOT_ID slots[MAX_SLOTS];
	CK_ULONG n = MAX_SLOTS, i;
	CK_TOKEN_INFO ti;
	CK_RV rv = p->f->C_GetSlotList(CK_TRUE, slots, &n);

	if (rv != CKR_OK)
		return rv;
	for (i = 0; i < n; i++)
		if (p->f->C_GetTokenInfo(slots[i], &ti) == CKR_OK &&
		    (ti.flags & CKF_TOKEN_INITIALIZED) && floor_label_is(ti.label, label)) {
			*slot = slots[i];
			*flags = ti.flags;
			return CKR_OK;
		}
	return CKR_TOKEN_NOT_PRESENT;
}

/* The one object matching the template. */
CK_RV
floor_p11_find_one(struct p11 *p, CK_SESSION_HANDLE s, CK_ATTRIBUTE *tmpl, CK_ULONG n,
	     CK_OBJECT_HANDLE *obj)
{
	CK_ULONG found = 0;
	CK_RV rv = p->f->C_FindObjectsInit(s, tmpl, n);

	if (rv != CKR_OK)
		return rv;
	rv = p->f->C_FindObjects(s, obj, 1, &found);
	(void)p->f->C_FindObjectsFinal(s);
	if (rv == CKR_OK && found != 1)
		rv = CKR_KEY_HANDLE_INVALID;
	return rv;
}

/* A variable-length attribute, malloc'd. */
CK_RV
floor_p11_attr(struct p11 *p, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_TYPE type,
	 unsigned char **val, CK_ULONG *len)
{
	CK_ATTRIBUTE a = { type, NULL, 0 };
	CK_RV rv = p->f->C_GetAttributeValue(s, obj, &a, 1);

	if (rv != CKR_OK)
		return rv;
	if (a.ulValueLen == (CK_ULONG)-1 || (a.pValue = malloc(a.ulValueLen + 1)) == NULL)
		return CKR_HOST_MEMORY;
	rv = p->f->C_GetAttributeValue(s, obj, &a, 1);
	if (rv != CKR_OK) {
		free(a.pValue);
		return rv;
	}
	*val = a.pValue;
	*len = a.ulValueLen;
	return CKR_OK;
}

/* Sign DATA with the private key (EC: ECDSA over SHA-256 of DATA; RSA:
 * PKCS#1 v1.5 with SHA-256); *sig is DER (ECDSA-Sig-Value) or the RSA
 * signature, malloc'd. */
CK_RV
floor_p11_sign(struct p11 *p, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key, CK_KEY_TYPE kt,
	 const unsigned char *data, size_t len, unsigned char **sig, size_t *siglen)
{
	unsigned char dg[32], raw[512];
	CK_ULONG rawlen = sizeof(raw);
	CK_MECHANISM mech = { kt == CKK_EC ? CKM_ECDSA : CKM_SHA256_RSA_PKCS, NULL, 0 };
	ECDSA_SIG *es;
	BIGNUM *r, *sv;
	CK_RV rv;
	int n;

	if (kt != CKK_EC && kt != CKK_RSA)
		return CKR_KEY_TYPE_INCONSISTENT;
	if (kt == CKK_EC) {
		SHA256(data, len, dg);
		data = dg;
		len = sizeof(dg);
	}
	if ((rv = p->f->C_SignInit(s, &mech, key)) != CKR_OK ||
	    (rv = p->f->C_Sign(s, (CK_BYTE_PTR)data, len, raw, &rawlen)) != CKR_OK)
		return rv;
	if (kt == CKK_RSA) {
		if ((*sig = malloc(rawlen)) == NULL)
			return CKR_HOST_MEMORY;
		memcpy(*sig, raw, rawlen);
		*siglen = rawlen;
		return CKR_OK;
	}
	/* PKCS#11 gives r || s; X.509 and EVP want the DER SEQUENCE. */
	es = ECDSA_SIG_new();
	r = BN_bin2bn(raw, (int)(rawlen / 2), NULL);
	sv = BN_bin2bn(raw + rawlen / 2, (int)(rawlen / 2), NULL);
	if (es == NULL || r == NULL || sv == NULL || ECDSA_SIG_set0(es, r, sv) != 1) {
		ECDSA_SIG_free(es);
		BN_free(r);
		BN_free(sv);
		return CKR_HOST_MEMORY;
	}
	*sig = NULL;
	n = i2d_ECDSA_SIG(es, sig);
	ECDSA_SIG_free(es);
	if (n <= 0)
		return CKR_HOST_MEMORY;
	*siglen = (size_t)n;
	return CKR_OK;
}

