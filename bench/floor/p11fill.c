/*
 * p11fill — fills a PKCS#11 token with other objects, fast (issue #30's
 * bench: an issuer partition that holds many keys besides the issuer's).
 *
 *   p11fill MODULE TOKEN_LABEL PIN_FILE COUNT
 *
 * Adds COUNT objects to the token: COUNT/2 EC P-256 key pairs made with
 * C_CreateObject (a private key with CKA_SIGN and its public key, labelled
 * "other-NNNNN", CKA_ID 4 bytes from 0x10000000 up: never the issuer's),
 * all with the material of one key pair made here with OpenSSL (the module
 * does not care, a lookup reads them all the same), and one CKO_DATA object
 * when COUNT is odd.  SoftHSM2 with pkcs11-tool --keypairgen takes minutes
 * for 10,000 objects; this takes seconds.  The token's store comes from the
 * environment (SOFTHSM2_CONF).  Bench only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <p11-kit/pkcs11.h>

#define MAX_SLOTS 64
#define MAX_COUNT 100000

/* DER of the OID prime256v1 (1.2.840.10045.3.1.7), CKA_EC_PARAMS. */
static const unsigned char p256_params[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
					     0x3d, 0x03, 0x01, 0x07 };

struct material {
	unsigned char priv[32];
	unsigned char point[2 + 65];    /* DER OCTET STRING of the uncompressed point */
};

static int
make_material(struct material *m)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	BIGNUM *d = NULL;
	size_t n = 0;
	int ok;

	ok = k != NULL && EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_PRIV_KEY, &d) == 1 &&
	     BN_bn2binpad(d, m->priv, sizeof(m->priv)) == (int)sizeof(m->priv) &&
	     EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, m->point + 2, 65,
					     &n) == 1 && n == 65;
	m->point[0] = 0x04;
	m->point[1] = 65;
	BN_clear_free(d);
	EVP_PKEY_free(k);
	return ok ? 0 : -1;
}

static int
read_pin(const char *path, char *pin, size_t size)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (f == NULL)
		return -1;
	ok = fgets(pin, (int)size, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	pin[strcspn(pin, "\r\n")] = '\0';
	return pin[0] != '\0' ? 0 : -1;
}

static int
label_is(const CK_UTF8CHAR label[32], const char *want)
{
	size_t n = strlen(want);

	if (n > 32 || memcmp(label, want, n) != 0)
		return 0;
	for (; n < 32; n++)
		if (label[n] != ' ')
			return 0;
	return 1;
}

static CK_RV
create_pair(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s, const struct material *m,
	    unsigned long i)
{
	CK_OBJECT_CLASS priv_cls = CKO_PRIVATE_KEY, pub_cls = CKO_PUBLIC_KEY;
	CK_KEY_TYPE kt = CKK_EC;
	CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
	unsigned char id[4] = { 0x10 | (unsigned char)(i >> 24), (unsigned char)(i >> 16),
				(unsigned char)(i >> 8), (unsigned char)i };
	char label[32];
	int n = snprintf(label, sizeof(label), "other-%05lu", i);
	CK_ATTRIBUTE priv[] = {
		{ CKA_CLASS, &priv_cls, sizeof(priv_cls) }, { CKA_KEY_TYPE, &kt, sizeof(kt) },
		{ CKA_TOKEN, &yes, sizeof(yes) }, { CKA_PRIVATE, &yes, sizeof(yes) },
		{ CKA_SENSITIVE, &yes, sizeof(yes) }, { CKA_EXTRACTABLE, &no, sizeof(no) },
		{ CKA_SIGN, &yes, sizeof(yes) }, { CKA_LABEL, label, (CK_ULONG)n },
		{ CKA_ID, id, sizeof(id) },
		{ CKA_EC_PARAMS, (void *)p256_params, sizeof(p256_params) },
		{ CKA_VALUE, (void *)m->priv, sizeof(m->priv) },
	};
	CK_ATTRIBUTE pub[] = {
		{ CKA_CLASS, &pub_cls, sizeof(pub_cls) }, { CKA_KEY_TYPE, &kt, sizeof(kt) },
		{ CKA_TOKEN, &yes, sizeof(yes) }, { CKA_PRIVATE, &no, sizeof(no) },
		{ CKA_VERIFY, &yes, sizeof(yes) }, { CKA_LABEL, label, (CK_ULONG)n },
		{ CKA_ID, id, sizeof(id) },
		{ CKA_EC_PARAMS, (void *)p256_params, sizeof(p256_params) },
		{ CKA_EC_POINT, (void *)m->point, sizeof(m->point) },
	};
	CK_OBJECT_HANDLE h;
	CK_RV rv;

	if (n <= 0 || (size_t)n >= sizeof(label))
		return CKR_ARGUMENTS_BAD;
	rv = f->C_CreateObject(s, priv, sizeof(priv) / sizeof(priv[0]), &h);
	if (rv == CKR_OK)
		rv = f->C_CreateObject(s, pub, sizeof(pub) / sizeof(pub[0]), &h);
	return rv;
}

static CK_RV
create_data(CK_FUNCTION_LIST_PTR f, CK_SESSION_HANDLE s)
{
	CK_OBJECT_CLASS cls = CKO_DATA;
	CK_BBOOL yes = CK_TRUE;
	static const char label[] = "other-data", value[] = "p11fill";
	CK_ATTRIBUTE t[] = {
		{ CKA_CLASS, &cls, sizeof(cls) }, { CKA_TOKEN, &yes, sizeof(yes) },
		{ CKA_LABEL, (void *)label, sizeof(label) - 1 },
		{ CKA_VALUE, (void *)value, sizeof(value) - 1 },
	};
	CK_OBJECT_HANDLE h;

	return f->C_CreateObject(s, t, sizeof(t) / sizeof(t[0]), &h);
}

int
main(int argc, char **argv)
{
	CK_C_INITIALIZE_ARGS args = { .flags = CKF_OS_LOCKING_OK };
	CK_SLOT_ID slots[MAX_SLOTS], slot = 0;
	CK_ULONG nslots = MAX_SLOTS, i;
	CK_SESSION_HANDLE s;
	CK_FUNCTION_LIST_PTR f;
	CK_C_GetFunctionList get;
	CK_TOKEN_INFO ti;
	struct material m;
	char pin[256], *end;
	unsigned long count;
	int found = 0;
	void *dl;
	CK_RV rv;

	if (argc != 5) {
		fprintf(stderr, "usage: p11fill MODULE TOKEN_LABEL PIN_FILE COUNT\n");
		return 2;
	}
	errno = 0;
	count = strtoul(argv[4], &end, 10);
	if (errno != 0 || *end != '\0' || end == argv[4] || count > MAX_COUNT) {
		fprintf(stderr, "p11fill: COUNT: 0..%d\n", MAX_COUNT);
		return 2;
	}
	if (read_pin(argv[3], pin, sizeof(pin)) != 0 || make_material(&m) != 0) {
		fprintf(stderr, "p11fill: PIN file or key material\n");
		return 1;
	}
	if ((dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) == NULL ||
	    (*(void **)&get = dlsym(dl, "C_GetFunctionList")) == NULL || get(&f) != CKR_OK ||
	    f->C_Initialize(&args) != CKR_OK) {
		fprintf(stderr, "p11fill: cannot load %s\n", argv[1]);
		return 1;
	}
	if ((rv = f->C_GetSlotList(CK_TRUE, slots, &nslots)) == CKR_OK)
		for (i = 0; i < nslots && !found; i++)
			if (f->C_GetTokenInfo(slots[i], &ti) == CKR_OK && label_is(ti.label, argv[2])) {
				slot = slots[i];
				found = 1;
			}
	if (!found) {
		fprintf(stderr, "p11fill: no token '%s'\n", argv[2]);
		return 1;
	}
	rv = f->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &s);
	if (rv == CKR_OK)
		rv = f->C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin));
	explicit_bzero(pin, sizeof(pin));
	for (i = 0; rv == CKR_OK && i < count / 2; i++)
		rv = create_pair(f, s, &m, i);
	if (rv == CKR_OK && count % 2 == 1)
		rv = create_data(f, s);
	explicit_bzero(&m, sizeof(m));
	if (rv != CKR_OK) {
		fprintf(stderr, "p11fill: 0x%lx after %lu key pairs\n", rv, (unsigned long)i);
		return 1;
	}
	(void)f->C_Logout(s);
	(void)f->C_CloseSession(s);
	(void)f->C_Finalize(NULL);
	return 0;
}
