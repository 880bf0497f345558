/*
 * p11_fill — put N EC P-256 key pairs ("fill-<i>", CKA_ID the index) on a
 * token, in one process: what a busy HSM partition holds besides the key a
 * test is about (tests/integration/tokens/p11_calls.sh).  pkcs11-tool
 * takes a process and a login per key pair (0.2 s each on SoftHSM here).
 *
 *   p11_fill MODULE TOKENLABEL PIN N
 *
 * Exits 0 when all N were made; otherwise says which call failed.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <p11-kit/pkcs11.h>

static int
fail(const char *what, CK_RV rv)
{
	fprintf(stderr, "p11_fill: %s failed (CKR 0x%lx)\n", what, (unsigned long)rv);
	return 1;
}

/* The slot whose token is labelled `label` (blank-padded to 32). */
static int
find_slot(CK_FUNCTION_LIST_PTR f, const char *label, CK_SLOT_ID *slot)
{
	CK_SLOT_ID ids[64];
	CK_ULONG n = 64, i;
	CK_TOKEN_INFO ti;
	char want[32];
	size_t len = strlen(label);

	if (len > sizeof(want))
		return 1;
	memset(want, ' ', sizeof(want));
	memcpy(want, label, len);
	if (f->C_GetSlotList(CK_TRUE, ids, &n) != CKR_OK)
		return 1;
	for (i = 0; i < n; i++) {
		if (f->C_GetTokenInfo(ids[i], &ti) == CKR_OK &&
		    memcmp(ti.label, want, sizeof(want)) == 0) {
			*slot = ids[i];
			return 0;
		}
	}
	return 1;
}

int
main(int argc, char **argv)
{
	/* DER OID of prime256v1 (1.2.840.10045.3.1.7), as CKA_EC_PARAMS. */
	static CK_BYTE p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
	CK_MECHANISM mech = { CKM_EC_KEY_PAIR_GEN, NULL, 0 };
	CK_BBOOL yes = CK_TRUE;
	CK_C_GetFunctionList get;
	CK_FUNCTION_LIST_PTR f;
	CK_SESSION_HANDLE s;
	CK_SLOT_ID slot;
	CK_RV rv;
	void *dl;
	long n, i;

	if (argc != 5 || (n = strtol(argv[4], NULL, 10)) <= 0) {
		fprintf(stderr, "p11_fill: usage: p11_fill MODULE TOKENLABEL PIN N\n");
		return 2;
	}
	dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (dl == NULL || (*(void **)&get = dlsym(dl, "C_GetFunctionList")) == NULL ||
	    get(&f) != CKR_OK) {
		fprintf(stderr, "p11_fill: cannot load %s\n", argv[1]);
		return 1;
	}
	if ((rv = f->C_Initialize(NULL)) != CKR_OK)
		return fail("C_Initialize", rv);
	if (find_slot(f, argv[2], &slot) != 0) {
		fprintf(stderr, "p11_fill: no token labelled '%s'\n", argv[2]);
		return 1;
	}
	if ((rv = f->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &s)) != CKR_OK)
		return fail("C_OpenSession", rv);
	if ((rv = f->C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)argv[3], strlen(argv[3]))) != CKR_OK)
		return fail("C_Login", rv);
	for (i = 0; i < n; i++) {
		char label[32];
		CK_BYTE id[4] = { (CK_BYTE)(0xf0 | (i >> 24)), (CK_BYTE)(i >> 16),
				  (CK_BYTE)(i >> 8), (CK_BYTE)i };
		CK_ULONG llen = (CK_ULONG)snprintf(label, sizeof(label), "fill-%ld", i);
		CK_ATTRIBUTE pub[] = {
			{ CKA_TOKEN, &yes, sizeof(yes) },
			{ CKA_VERIFY, &yes, sizeof(yes) },
			{ CKA_EC_PARAMS, p256, sizeof(p256) },
			{ CKA_LABEL, label, llen },
			{ CKA_ID, id, sizeof(id) },
		};
		CK_ATTRIBUTE priv[] = {
			{ CKA_TOKEN, &yes, sizeof(yes) },
			{ CKA_PRIVATE, &yes, sizeof(yes) },
			{ CKA_SENSITIVE, &yes, sizeof(yes) },
			{ CKA_SIGN, &yes, sizeof(yes) },
			{ CKA_LABEL, label, llen },
			{ CKA_ID, id, sizeof(id) },
		};
		CK_OBJECT_HANDLE hpub, hpriv;

		rv = f->C_GenerateKeyPair(s, &mech, pub, sizeof(pub) / sizeof(pub[0]), priv,
					  sizeof(priv) / sizeof(priv[0]), &hpub, &hpriv);
		if (rv != CKR_OK)
			return fail("C_GenerateKeyPair", rv);
	}
	(void)f->C_Logout(s);
	(void)f->C_CloseSession(s);
	(void)f->C_Finalize(NULL);
	printf("%ld key pairs on '%s'\n", n, argv[2]);
	return 0;
}
