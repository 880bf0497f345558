/*
 * kh_p11_raw_key — see kh_p11_raw_key.h (and why this file, alone in the
 * tree, uses OpenSSL's deprecated RSA_METHOD / EC_KEY_METHOD).
 */
#include "config.h"

#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <stdlib.h>
#include <string.h>

#include <libp11.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/rsa.h>

#include "lib/kh_p11_raw_key.h"

struct kh_p11_raw_methods {
	RSA_METHOD *rsa;
	EC_KEY_METHOD *ec;
};

/* What one key signs with: the key's app data (ex_data index 0, which
 * needs no registration — so no callback of ours outlives a dlclose). */
struct kh_p11_raw_ref {
	struct kh_p11_raw r;       /* a copy: the handle owns the session */
	CK_OBJECT_HANDLE obj;
	char *pin;                 /* CKA_ALWAYS_AUTHENTICATE only */
};

/* Largest signature: RSA-16384, or ECDSA P-521's 2 x 66 bytes. */
#define KH_P11_SIG_MAX 2048

static void
kh_p11_raw_ref_free(struct kh_p11_raw_ref *ref)
{
	if (ref == NULL)
		return;
	if (ref->pin != NULL) {
		OPENSSL_cleanse(ref->pin, strlen(ref->pin));
		free(ref->pin);
	}
	free(ref);
}

/* Put the module's answer where libp11 put it (kh_p11_last_error_token_gone
 * reads it): the PKCS#11 error library, the CK_RV as reason. */
static void
kh_p11_raw_key_error(CK_RV rv)
{
	ERR_raise(ERR_get_CKR_code(), (int)(rv & 0x7fffffUL));
}

/* Sign `in` with the key's mechanism; the signature's length, or -1. */
static int
kh_p11_raw_ref_sign(const struct kh_p11_raw_ref *ref, CK_MECHANISM_TYPE mech,
		    const unsigned char *in, size_t in_len, unsigned char *sig, size_t size)
{
	struct kh_p11_raw r;
	size_t len = size;
	CK_RV rv;

	if (ref == NULL) {
		kh_p11_raw_key_error(CKR_KEY_HANDLE_INVALID);
		return -1;
	}
	r = ref->r;
	rv = kh_p11_raw_sign(&r, ref->obj, mech, ref->pin, in, in_len, sig, &len);
	if (rv != CKR_OK) {
		kh_p11_raw_key_error(rv);
		return -1;
	}
	return (int)len;
}

/* ---- RSA: OpenSSL pads, the token raises to the private exponent ---- */

static int
kh_p11_rsa_priv_enc(int flen, const unsigned char *from, unsigned char *to, RSA *rsa,
		    int padding)
{
	const struct kh_p11_raw_ref *ref = RSA_get_app_data(rsa);
	CK_MECHANISM_TYPE mech;

	switch (padding) {
	case RSA_PKCS1_PADDING:
		mech = CKM_RSA_PKCS;       /* `from` is the DigestInfo */
		break;
	case RSA_NO_PADDING:
		mech = CKM_RSA_X_509;      /* `from` is a whole PSS block */
		break;
	default:
		ERR_raise(ERR_LIB_RSA, RSA_R_UNKNOWN_PADDING_TYPE);
		return -1;
	}
	if (flen < 0)
		return -1;
	return kh_p11_raw_ref_sign(ref, mech, from, (size_t)flen, to, (size_t)RSA_size(rsa));
}

static int
kh_p11_rsa_finish(RSA *rsa)
{
	int (*fin)(RSA *) = RSA_meth_get_finish(RSA_PKCS1_OpenSSL());

	kh_p11_raw_ref_free(RSA_get_app_data(rsa));
	RSA_set_app_data(rsa, NULL);
	return fin != NULL ? fin(rsa) : 1;
}

/* ---- ECDSA: CKM_ECDSA on the digest, r||s to an ECDSA_SIG ---- */

static ECDSA_SIG *
kh_p11_ecdsa_sign_sig(const unsigned char *dgst, int dlen, const BIGNUM *kinv,
		      const BIGNUM *rp, EC_KEY *ec)
{
	const struct kh_p11_raw_ref *ref = EC_KEY_get_ex_data(ec, 0);
	unsigned char sig[KH_P11_SIG_MAX];
	BIGNUM *r = NULL, *s = NULL;
	ECDSA_SIG *out;
	int len;

	(void)kinv;
	(void)rp;
	if (dlen < 0)
		return NULL;
	len = kh_p11_raw_ref_sign(ref, CKM_ECDSA, dgst, (size_t)dlen, sig, sizeof(sig));
	if (len <= 0 || len % 2 != 0)
		return NULL;
	out = ECDSA_SIG_new();
	r = BN_bin2bn(sig, len / 2, NULL);
	s = BN_bin2bn(sig + len / 2, len / 2, NULL);
	if (out == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(out, r, s) != 1) {
		ECDSA_SIG_free(out);
		BN_free(r);
		BN_free(s);
		return NULL;
	}
	return out;
}

static int
kh_p11_ecdsa_sign(int type, const unsigned char *dgst, int dlen, unsigned char *sig,
		  unsigned int *siglen, const BIGNUM *kinv, const BIGNUM *r, EC_KEY *ec)
{
	ECDSA_SIG *s = kh_p11_ecdsa_sign_sig(dgst, dlen, kinv, r, ec);
	unsigned char *p = sig;
	int len;

	(void)type;
	*siglen = 0;
	if (s == NULL)
		return 0;
	/* sig holds ECDSA_size(ec) bytes, the longest DER this key makes. */
	len = i2d_ECDSA_SIG(s, &p);
	ECDSA_SIG_free(s);
	if (len <= 0)
		return 0;
	*siglen = (unsigned int)len;
	return 1;
}

static void
kh_p11_ec_finish(EC_KEY *ec)
{
	kh_p11_raw_ref_free(EC_KEY_get_ex_data(ec, 0));
	(void)EC_KEY_set_ex_data(ec, 0, NULL);
}

void
kh_p11_raw_methods_free(struct kh_p11_raw_methods *m)
{
	if (m == NULL)
		return;
	RSA_meth_free(m->rsa);
	EC_KEY_METHOD_free(m->ec);
	free(m);
}

/* OpenSSL's own methods, with the private operations and the clean-up ours. */
static struct kh_p11_raw_methods *
kh_p11_raw_methods_new(kh_error *err)
{
	struct kh_p11_raw_methods *m = calloc(1, sizeof(*m));
	int (*sign_setup)(EC_KEY *, BN_CTX *, BIGNUM **, BIGNUM **) = NULL;
	int (*init)(EC_KEY *) = NULL;
	void (*finish)(EC_KEY *) = NULL;
	int (*copy)(EC_KEY *, const EC_KEY *) = NULL;
	int (*set_group)(EC_KEY *, const EC_GROUP *) = NULL;
	int (*set_private)(EC_KEY *, const BIGNUM *) = NULL;
	int (*set_public)(EC_KEY *, const EC_POINT *) = NULL;

	if (m == NULL)
		goto oom;
	m->rsa = RSA_meth_dup(RSA_PKCS1_OpenSSL());
	m->ec = EC_KEY_METHOD_new(EC_KEY_OpenSSL());
	if (m->rsa == NULL || m->ec == NULL ||
	    RSA_meth_set1_name(m->rsa, "kubehsm PKCS#11") != 1 ||
	    RSA_meth_set_priv_enc(m->rsa, kh_p11_rsa_priv_enc) != 1 ||
	    RSA_meth_set_finish(m->rsa, kh_p11_rsa_finish) != 1)
		goto oom;
	EC_KEY_METHOD_get_sign(EC_KEY_OpenSSL(), NULL, &sign_setup, NULL);
	EC_KEY_METHOD_set_sign(m->ec, kh_p11_ecdsa_sign, sign_setup, kh_p11_ecdsa_sign_sig);
	EC_KEY_METHOD_get_init(EC_KEY_OpenSSL(), &init, &finish, &copy, &set_group,
			       &set_private, &set_public);
	/* OpenSSL's own EC method has no finish to chain to. */
	EC_KEY_METHOD_set_init(m->ec, init, kh_p11_ec_finish, copy, set_group, set_private,
			       set_public);
	return m;
oom:
	kh_p11_raw_methods_free(m);
	kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	return NULL;
}

/* ---- the key ---- */

static struct kh_p11_raw_ref *
kh_p11_raw_ref_new(const struct kh_p11_raw *r, CK_OBJECT_HANDLE obj, const char *pin)
{
	struct kh_p11_raw_ref *ref = calloc(1, sizeof(*ref));

	if (ref == NULL)
		return NULL;
	ref->r = *r;
	ref->obj = obj;
	if (pin != NULL && (ref->pin = strdup(pin)) == NULL) {
		free(ref);
		return NULL;
	}
	return ref;
}

/* An RSA public key carrying our method and ref, in an EVP_PKEY. */
static EVP_PKEY *
kh_p11_raw_rsa(RSA_METHOD *meth, const RSA *pub, struct kh_p11_raw_ref *ref)
{
	const BIGNUM *n0 = NULL, *e0 = NULL;
	BIGNUM *n, *e;
	EVP_PKEY *pkey = EVP_PKEY_new();
	RSA *rsa = RSA_new();

	RSA_get0_key(pub, &n0, &e0, NULL);
	n = BN_dup(n0);
	e = BN_dup(e0);
	if (pkey == NULL || rsa == NULL || n == NULL || e == NULL ||
	    RSA_set0_key(rsa, n, e, NULL) != 1) {
		BN_free(n);
		BN_free(e);
		goto fail;
	}
	/* The method's finish frees ref from here on. */
	if (RSA_set_method(rsa, meth) != 1)
		goto fail;
	RSA_set_app_data(rsa, ref);
	ref = NULL;
	if (EVP_PKEY_assign_RSA(pkey, rsa) != 1)
		goto fail;
	return pkey;
fail:
	kh_p11_raw_ref_free(ref);
	RSA_free(rsa);
	EVP_PKEY_free(pkey);
	return NULL;
}

static EVP_PKEY *
kh_p11_raw_ec(EC_KEY_METHOD *meth, const EC_KEY *pub, struct kh_p11_raw_ref *ref)
{
	EVP_PKEY *pkey = EVP_PKEY_new();
	EC_KEY *ec = EC_KEY_new();

	if (pkey == NULL || ec == NULL || EC_KEY_set_method(ec, meth) != 1)
		goto fail;
	if (EC_KEY_set_ex_data(ec, 0, ref) != 1)
		goto fail;
	ref = NULL;      /* the method's finish frees it from here on */
	if (EC_KEY_set_group(ec, EC_KEY_get0_group(pub)) != 1 ||
	    EC_KEY_set_public_key(ec, EC_KEY_get0_public_key(pub)) != 1 ||
	    EVP_PKEY_assign_EC_KEY(pkey, ec) != 1)
		goto fail;
	return pkey;
fail:
	kh_p11_raw_ref_free(ref);
	EC_KEY_free(ec);
	EVP_PKEY_free(pkey);
	return NULL;
}

EVP_PKEY *
kh_p11_raw_key_new(struct kh_p11_raw_methods **methods, const struct kh_p11_raw *r,
		   CK_OBJECT_HANDLE obj, const EVP_PKEY *pub, const char *pin, kh_error *err)
{
	struct kh_p11_raw_ref *ref;
	EVP_PKEY *pkey = NULL;
	const RSA *rsa;
	const EC_KEY *ec;

	if (*methods == NULL && (*methods = kh_p11_raw_methods_new(err)) == NULL)
		return NULL;
	ref = kh_p11_raw_ref_new(r, obj, pin);
	if (ref == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	ERR_clear_error();
	switch (EVP_PKEY_get_base_id(pub)) {
	case EVP_PKEY_RSA:
		if ((rsa = EVP_PKEY_get0_RSA(pub)) != NULL)
			pkey = kh_p11_raw_rsa((*methods)->rsa, rsa, ref);
		else
			kh_p11_raw_ref_free(ref);
		break;
	case EVP_PKEY_EC:
		if ((ec = EVP_PKEY_get0_EC_KEY(pub)) != NULL)
			pkey = kh_p11_raw_ec((*methods)->ec, ec, ref);
		else
			kh_p11_raw_ref_free(ref);
		break;
	default:
		kh_p11_raw_ref_free(ref);
		kh_fail(err, KH_ERR_TOKEN, "the key is neither RSA nor EC");
		return NULL;
	}
	if (pkey == NULL)
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot make the token key usable");
	return pkey;
}

/* ---- the public half, from the token ---- */

static EVP_PKEY *
kh_p11_raw_rsa_public(const CK_ATTRIBUTE *mod, const CK_ATTRIBUTE *exp)
{
	BIGNUM *n = BN_bin2bn(mod->pValue, (int)mod->ulValueLen, NULL);
	BIGNUM *e = BN_bin2bn(exp->pValue, (int)exp->ulValueLen, NULL);
	EVP_PKEY *pkey = EVP_PKEY_new();
	RSA *rsa = RSA_new();

	if (n == NULL || e == NULL || pkey == NULL || rsa == NULL ||
	    RSA_set0_key(rsa, n, e, NULL) != 1) {
		BN_free(n);
		BN_free(e);
		goto fail;
	}
	if (EVP_PKEY_assign_RSA(pkey, rsa) != 1)
		goto fail;
	return pkey;
fail:
	RSA_free(rsa);
	EVP_PKEY_free(pkey);
	return NULL;
}

/* CKA_EC_POINT is a DER OCTET STRING holding the point (PKCS#11 2.40);
 * some modules give the bare point. */
static EC_POINT *
kh_p11_raw_ec_point(const EC_GROUP *g, const CK_ATTRIBUTE *a)
{
	const unsigned char *p = a->pValue;
	ASN1_OCTET_STRING *os = d2i_ASN1_OCTET_STRING(NULL, &p, (long)a->ulValueLen);
	EC_POINT *pt = EC_POINT_new(g);
	int ok = 0;

	if (pt != NULL && os != NULL && p == (const unsigned char *)a->pValue + a->ulValueLen)
		ok = EC_POINT_oct2point(g, pt, ASN1_STRING_get0_data(os),
					(size_t)ASN1_STRING_length(os), NULL);
	if (pt != NULL && !ok)
		ok = EC_POINT_oct2point(g, pt, a->pValue, a->ulValueLen, NULL);
	ASN1_OCTET_STRING_free(os);
	if (!ok) {
		EC_POINT_free(pt);
		return NULL;
	}
	return pt;
}

static EVP_PKEY *
kh_p11_raw_ec_public(const CK_ATTRIBUTE *params, const CK_ATTRIBUTE *point)
{
	const unsigned char *p = params->pValue;
	EC_GROUP *g = d2i_ECPKParameters(NULL, &p, (long)params->ulValueLen);
	EC_POINT *pt = g != NULL ? kh_p11_raw_ec_point(g, point) : NULL;
	EVP_PKEY *pkey = EVP_PKEY_new();
	EC_KEY *ec = EC_KEY_new();

	if (pt == NULL || pkey == NULL || ec == NULL || EC_KEY_set_group(ec, g) != 1 ||
	    EC_KEY_set_public_key(ec, pt) != 1 || EVP_PKEY_assign_EC_KEY(pkey, ec) != 1) {
		EC_KEY_free(ec);
		EVP_PKEY_free(pkey);
		pkey = NULL;
	}
	EC_POINT_free(pt);
	EC_GROUP_free(g);
	return pkey;
}

/* CKA_EC_POINT of the public key object m names (with CKO_PUBLIC_KEY). */
static int
kh_p11_raw_public_point(struct kh_p11_raw *r, const struct kh_p11_raw_match *m,
			CK_ATTRIBUTE *point, kh_error *err)
{
	struct kh_p11_raw_match pm = *m;
	CK_OBJECT_HANDLE obj[2];
	size_t n = 0;

	pm.cls = CKO_PUBLIC_KEY;
	if (kh_p11_raw_find(r, &pm, obj, 2, &n, err) != 0)
		return -1;
	if (n != 1)
		return kh_fail(err, KH_ERR_TOKEN, "the EC key has no CKA_EC_POINT and %s public "
			       "key object of that label and id", n == 0 ? "no" : "more than one");
	if (kh_p11_raw_attrs(r, obj[0], point, 1, err) != 0)
		return -1;
	if (point->pValue == NULL)
		return kh_fail(err, KH_ERR_TOKEN, "the EC public key object has no CKA_EC_POINT");
	return 0;
}

EVP_PKEY *
kh_p11_raw_public(struct kh_p11_raw *r, CK_OBJECT_HANDLE obj, const struct kh_p11_raw_match *m,
		  kh_error *err)
{
	enum { TYPE, MOD, EXP, PARAMS, POINT, NATTR };
	CK_ATTRIBUTE a[NATTR] = {
		[TYPE] = { CKA_KEY_TYPE, NULL, 0 },
		[MOD] = { CKA_MODULUS, NULL, 0 },
		[EXP] = { CKA_PUBLIC_EXPONENT, NULL, 0 },
		[PARAMS] = { CKA_EC_PARAMS, NULL, 0 },
		[POINT] = { CKA_EC_POINT, NULL, 0 },
	};
	CK_KEY_TYPE type = (CK_KEY_TYPE)-1;
	EVP_PKEY *pkey = NULL;

	/* Everything a key type may have, in one two-call read. */
	if (kh_p11_raw_attrs(r, obj, a, NATTR, err) != 0)
		return NULL;
	if (a[TYPE].pValue != NULL && a[TYPE].ulValueLen == sizeof(type))
		memcpy(&type, a[TYPE].pValue, sizeof(type));
	if (type == CKK_RSA && a[MOD].pValue != NULL && a[EXP].pValue != NULL) {
		pkey = kh_p11_raw_rsa_public(&a[MOD], &a[EXP]);
	} else if (type == CKK_EC && a[PARAMS].pValue != NULL) {
		if (a[POINT].pValue == NULL &&
		    kh_p11_raw_public_point(r, m, &a[POINT], err) != 0)
			goto out;
		pkey = kh_p11_raw_ec_public(&a[PARAMS], &a[POINT]);
	} else {
		kh_fail(err, KH_ERR_TOKEN, "the key is neither RSA nor EC (CKA_KEY_TYPE 0x%lx)",
			(unsigned long)type);
		goto out;
	}
	if (pkey == NULL)
		kh_fail_ssl(err, KH_ERR_TOKEN, "the key's public half cannot be read");
out:
	kh_p11_raw_attrs_free(a, NATTR);
	return pkey;
}
