/*
 * test_sign — kh_sign_digest against OpenSSL's own verification.
 *
 * Every signature is checked with EVP_PKEY_verify under the rules Go's
 * verifier applies (PKCS#1 v1.5 DigestInfo, PSS with MGF1 = hash and the
 * expected salt, DER ECDSA), so a signer that drifts from what crypto/tls
 * expects fails here.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "lib/kh_pkey.h"
#include "lib/kh_base64.h"
#include "lib/kh_signer_proto.h"
#include "lib/kh_sign.h"

struct keys {
	EVP_PKEY *rsa2048;
	EVP_PKEY *rsa1024;
	EVP_PKEY *rsapss;   /* an RSA-PSS-restricted key */
	EVP_PKEY *p256;
	EVP_PKEY *p384;
	EVP_PKEY *ed25519;
};

static struct keys K;

/* EVP_PKEY_Q_keygen in OpenSSL 3.0 only knows RSA, EC and the curve keys. */
static EVP_PKEY *
keygen_rsa_pss(unsigned int bits)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA-PSS", NULL);
	EVP_PKEY *pkey = NULL;

	if (ctx != NULL && EVP_PKEY_keygen_init(ctx) > 0 &&
	    EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, (int)bits) > 0)
		(void)EVP_PKEY_keygen(ctx, &pkey);
	EVP_PKEY_CTX_free(ctx);
	return pkey;
}

static int
group_setup(void **state)
{
	(void)state;
	K.rsa2048 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	K.rsa1024 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
	K.rsapss = keygen_rsa_pss(2048);
	K.p256 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	K.p384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
	K.ed25519 = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	return (K.rsa2048 && K.rsa1024 && K.rsapss && K.p256 && K.p384 && K.ed25519) ? 0 : -1;
}

static int
group_teardown(void **state)
{
	(void)state;
	EVP_PKEY_free(K.rsa2048);
	EVP_PKEY_free(K.rsa1024);
	EVP_PKEY_free(K.rsapss);
	EVP_PKEY_free(K.p256);
	EVP_PKEY_free(K.p384);
	EVP_PKEY_free(K.ed25519);
	return 0;
}

/* Hash a fixed message with the Go hash's digest. */
static size_t
make_digest(int go_hash, unsigned char *out)
{
	static const char msg[] = "TLS 1.3, client CertificateVerify";
	unsigned int n = 0;

	assert_int_equal(EVP_Digest(msg, sizeof(msg) - 1, out, &n, kh_go_hash_md(go_hash), NULL), 1);
	assert_int_equal(n, kh_go_hash_size(go_hash));
	return n;
}

/*
 * Verify with explicit parameters. pss_salt is OpenSSL's saltlen value for
 * verification (RSA_PSS_SALTLEN_AUTO or an exact length); ignored otherwise.
 */
static int
verify(EVP_PKEY *pkey, enum kh_sign_scheme scheme, int go_hash, int pss_salt,
       const unsigned char *dg, size_t dlen, const unsigned char *sig, size_t slen)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(pkey, NULL);
	const EVP_MD *md = kh_go_hash_md(go_hash);
	int id = EVP_PKEY_get_base_id(pkey);
	int rc;

	assert_non_null(ctx);
	assert_int_equal(EVP_PKEY_verify_init(ctx), 1);
	assert_true(EVP_PKEY_CTX_set_signature_md(ctx, md) > 0);
	if (id != EVP_PKEY_EC) {
		if (scheme == KH_SIGN_PSS) {
			assert_true(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PSS_PADDING) > 0);
			assert_true(EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, md) > 0);
			assert_true(EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, pss_salt) > 0);
		} else {
			assert_true(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) > 0);
		}
	}
	rc = EVP_PKEY_verify(ctx, sig, slen, dg, dlen);
	EVP_PKEY_CTX_free(ctx);
	return rc;
}

struct sign_case {
	const char *name;
	EVP_PKEY **key;
	enum kh_sign_scheme scheme;
	int hash;
	int salt;        /* Go semantics */
	int verify_salt; /* exact salt the signature must carry (PSS) */
};

/* RSA-2048: emLen 256, so the max salt is 256 - hLen - 2. */
static const struct sign_case good[] = {
	{ "RSA-2048 PKCS#1 v1.5 SHA-256", &K.rsa2048, KH_SIGN_HASH, KH_GO_SHA256, 0, 0 },
	{ "RSA-2048 PKCS#1 v1.5 SHA-384", &K.rsa2048, KH_SIGN_HASH, KH_GO_SHA384, 0, 0 },
	{ "RSA-2048 PKCS#1 v1.5 SHA-512", &K.rsa2048, KH_SIGN_HASH, KH_GO_SHA512, 0, 0 },
	{ "RSA-2048 PSS SHA-256 salt -1 (= hash)", &K.rsa2048, KH_SIGN_PSS, KH_GO_SHA256, -1, 32 },
	{ "RSA-2048 PSS SHA-384 salt -1 (= hash)", &K.rsa2048, KH_SIGN_PSS, KH_GO_SHA384, -1, 48 },
	{ "RSA-2048 PSS SHA-512 salt -1 (= hash)", &K.rsa2048, KH_SIGN_PSS, KH_GO_SHA512, -1, 64 },
	{ "RSA-2048 PSS SHA-256 salt 0 (auto = max)", &K.rsa2048, KH_SIGN_PSS, KH_GO_SHA256, 0, 222 },
	{ "RSA-2048 PSS SHA-512 salt 0 (auto = max)", &K.rsa2048, KH_SIGN_PSS, KH_GO_SHA512, 0, 190 },
	{ "RSA-2048 PSS SHA-256 salt 32", &K.rsa2048, KH_SIGN_PSS, KH_GO_SHA256, 32, 32 },
	{ "RSA-2048 PSS SHA-384 salt 32", &K.rsa2048, KH_SIGN_PSS, KH_GO_SHA384, 32, 32 },
	{ "RSA-2048 PSS SHA-256 largest explicit salt 222", &K.rsa2048, KH_SIGN_PSS, KH_GO_SHA256, 222, 222 },
	{ "RSA-1024 PSS SHA-256 salt -1", &K.rsa1024, KH_SIGN_PSS, KH_GO_SHA256, -1, 32 },
	{ "RSA-PSS key PSS SHA-256 salt -1", &K.rsapss, KH_SIGN_PSS, KH_GO_SHA256, -1, 32 },
	{ "ECDSA P-256 SHA-256", &K.p256, KH_SIGN_HASH, KH_GO_SHA256, 0, 0 },
	{ "ECDSA P-384 SHA-384", &K.p384, KH_SIGN_HASH, KH_GO_SHA384, 0, 0 },
	{ "ECDSA P-256 SHA-512", &K.p256, KH_SIGN_HASH, KH_GO_SHA512, 0, 0 },
};

static void
t_sign_good(void **state)
{
	const struct sign_case *c = *state;
	struct kh_sign_opts opts = { c->scheme, c->hash, c->salt };
	unsigned char dg[KH_DIGEST_MAX];
	size_t dlen = make_digest(c->hash, dg), slen = 0;
	unsigned char *sig = NULL;
	EVP_PKEY *pkey = *c->key;
	kh_error err;

	kh_error_clear(&err);
	if (kh_sign_digest(pkey, &opts, dg, dlen, &sig, &slen, &err) != 0)
		fail_msg("%s", err.msg);
	assert_non_null(sig);
	if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC) {
		const unsigned char *p = sig;
		ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)slen);
		unsigned char *der = NULL;

		/* Go's ecdsa returns ASN.1 DER: must parse and re-encode identically. */
		assert_non_null(es);
		assert_ptr_equal(p, sig + slen);
		assert_int_equal(i2d_ECDSA_SIG(es, &der), (int)slen);
		assert_memory_equal(der, sig, slen);
		OPENSSL_free(der);
		ECDSA_SIG_free(es);
	} else {
		assert_int_equal(slen, (size_t)EVP_PKEY_get_size(pkey));
	}
	assert_int_equal(verify(pkey, c->scheme, c->hash, c->verify_salt, dg, dlen, sig, slen), 1);
	if (c->scheme == KH_SIGN_PSS) {
		/* Go verifies PSSSaltLengthAuto by detecting the salt: that works too. */
		assert_int_equal(verify(pkey, c->scheme, c->hash, RSA_PSS_SALTLEN_AUTO, dg, dlen, sig, slen), 1);
		/* And the salt really is the expected one, not merely some salt. */
		assert_true(verify(pkey, c->scheme, c->hash, c->verify_salt == 32 ? 33 : 32,
		                   dg, dlen, sig, slen) != 1);
	}
	/* A different digest must not verify. */
	dg[0] ^= 1;
	assert_true(verify(pkey, c->scheme, c->hash, c->verify_salt, dg, dlen, sig, slen) != 1);
	free(sig);
}

struct sign_bad {
	const char *name;
	EVP_PKEY **key;
	enum kh_sign_scheme scheme;
	int hash;
	int salt;
	int digest_delta;   /* digest length relative to the hash size */
	enum kh_errcode code;
	const char *needle;
};

static const struct sign_bad bad[] = {
	{ "PSS options with an EC key", &K.p256, KH_SIGN_PSS, KH_GO_SHA256, -1, 0, KH_ERR_INPUT, "EC key" },
	{ "PKCS#1 v1.5 on an RSA-PSS-only key", &K.rsapss, KH_SIGN_HASH, KH_GO_SHA256, 0, 0, KH_ERR_INPUT, "restricted to RSA-PSS" },
	{ "Ed25519 key", &K.ed25519, KH_SIGN_HASH, KH_GO_SHA256, 0, 0, KH_ERR_INPUT, "unsupported key type" },
	{ "unsupported hash SHA-1", &K.rsa2048, KH_SIGN_HASH, 3, 0, 0, KH_ERR_UNSUPPORTED, "unsupported hash 3" },
	{ "unsupported hash 0", &K.p256, KH_SIGN_HASH, 0, 0, 0, KH_ERR_UNSUPPORTED, "unsupported hash 0" },
	{ "digest one byte short", &K.rsa2048, KH_SIGN_HASH, KH_GO_SHA256, 0, -1, KH_ERR_INPUT, "31 bytes but SHA-256 needs 32" },
	{ "digest one byte long (EC)", &K.p256, KH_SIGN_HASH, KH_GO_SHA384, 0, 1, KH_ERR_INPUT, "49 bytes but SHA-384 needs 48" },
	{ "empty digest", &K.rsa2048, KH_SIGN_PSS, KH_GO_SHA512, -1, -64, KH_ERR_INPUT, "0 bytes" },
	{ "PSS salt larger than the key allows", &K.rsa2048, KH_SIGN_PSS, KH_GO_SHA256, 223, 0, KH_ERR_INPUT, "does not fit" },
	{ "PSS absurd salt", &K.rsa2048, KH_SIGN_PSS, KH_GO_SHA256, 100000, 0, KH_ERR_INPUT, "at most 222" },
	{ "PSS salt -2", &K.rsa2048, KH_SIGN_PSS, KH_GO_SHA256, -2, 0, KH_ERR_INPUT, "-2 is invalid" },
	{ "PSS salt INT_MIN", &K.rsa2048, KH_SIGN_PSS, KH_GO_SHA256, INT32_MIN, 0, KH_ERR_INPUT, "is invalid" },
	/* RSA-1024 with SHA-512: emLen 128 < 64 + 64 + 2. */
	{ "PSS hash-size salt cannot fit RSA-1024 with SHA-512", &K.rsa1024, KH_SIGN_PSS, KH_GO_SHA512, -1, 0, KH_ERR_INPUT, "does not fit" },
	{ "unknown scheme", &K.rsa2048, (enum kh_sign_scheme)9, KH_GO_SHA256, 0, 0, KH_ERR_INPUT, "unknown signature scheme" },
};

static void
t_sign_bad(void **state)
{
	const struct sign_bad *c = *state;
	struct kh_sign_opts opts = { c->scheme, c->hash, c->salt };
	unsigned char dg[KH_DIGEST_MAX + 8] = { 0 };
	size_t dlen = kh_go_hash_size(c->hash) != 0 ? kh_go_hash_size(c->hash) : 32;
	unsigned char *sig = (unsigned char *)"x";
	size_t slen = 7;
	kh_error err;

	dlen = (size_t)((long)dlen + c->digest_delta);
	kh_error_clear(&err);
	assert_int_equal(kh_sign_digest(*c->key, &opts, dg, dlen, &sig, &slen, &err), -1);
	if (err.code != c->code)
		fail_msg("code %s, want %s (%s)", kh_errcode_name(err.code),
		         kh_errcode_name(c->code), err.msg);
	if (strstr(err.msg, c->needle) == NULL)
		fail_msg("message '%s' lacks '%s'", err.msg, c->needle);
	assert_null(sig);
	assert_int_equal(slen, 0);
}

static void
t_sign_null_args(void **state)
{
	struct kh_sign_opts opts = { KH_SIGN_HASH, KH_GO_SHA256, 0 };
	unsigned char dg[32] = { 0 }, *sig;
	size_t slen;
	kh_error err;

	(void)state;
	assert_int_equal(kh_sign_digest(NULL, &opts, dg, 32, &sig, &slen, &err), -1);
	assert_int_equal(err.code, KH_ERR_INTERNAL);
	assert_int_equal(kh_sign_digest(K.p256, NULL, dg, 32, &sig, &slen, &err), -1);
	assert_int_equal(kh_sign_digest(K.p256, &opts, NULL, 32, &sig, &slen, &err), -1);
	assert_int_equal(kh_sign_digest(K.p256, &opts, dg, 32, NULL, &slen, &err), -1);
	/* err may be NULL */
	assert_int_equal(kh_sign_digest(K.p256, &opts, dg, 31, &sig, &slen, NULL), -1);
}

static void
t_go_hash_table(void **state)
{
	(void)state;
	assert_int_equal(kh_go_hash_size(5), 32);
	assert_int_equal(kh_go_hash_size(6), 48);
	assert_int_equal(kh_go_hash_size(7), 64);
	assert_int_equal(kh_go_hash_size(3), 0);
	assert_int_equal(kh_go_hash_size(-1), 0);
	assert_string_equal(kh_go_hash_name(6), "SHA-384");
	assert_string_equal(kh_go_hash_name(8), "unsupported");
	assert_ptr_equal(kh_go_hash_md(7), EVP_sha512());
	assert_null(kh_go_hash_md(0));
}

/*
 * The whole `kubehsm sign` path: a SignRequest as the prototype client-go
 * writes it, decoded, signed, answered, and the answer decoded and verified.
 */
static void
signer_end_to_end(EVP_PKEY *pkey, const char *opts_type, const char *opts_json,
                  enum kh_sign_scheme scheme, int go_hash, int verify_salt)
{
	unsigned char dg[KH_DIGEST_MAX], *sig, *back;
	size_t dlen = make_digest(go_hash, dg), slen, rlen, blen;
	char *dg64, *req_json, *resp;
	struct kh_signer_request req;
	kh_error err;
	json_t *root, *opts_str;

	assert_int_equal(kh_base64_encode(dg, dlen, &dg64, NULL, &err), 0);
	opts_str = json_string(opts_json);
	root = json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:O}",
	                 "apiVersion", KH_SIGNER_API_VERSION, "kind", "SignRequest",
	                 "digest", dg64, "configuration", "pathLib", "/usr/lib/softhsm/libsofthsm2.so",
	                 "slotId", "0", "objectId", "2", "signerOptsType", opts_type,
	                 "signerOpts", opts_str);
	assert_non_null(root);
	req_json = json_dumps(root, JSON_COMPACT);
	assert_non_null(req_json);

	if (kh_signer_request_parse(req_json, strlen(req_json), &req, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(req.opts.scheme, scheme);
	assert_int_equal(req.digest_len, dlen);
	if (kh_sign_digest(pkey, &req.opts, req.digest, req.digest_len, &sig, &slen, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(kh_signer_sign_response(sig, slen, &resp, &rlen, &err), 0);
	free(sig);
	json_decref(root);

	root = json_loadb(resp, rlen, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(root);
	assert_string_equal(json_string_value(json_object_get(root, "kind")), "SignResponse");
	assert_int_equal(kh_base64_decode(json_string_value(json_object_get(root, "signature")),
	                                  json_string_length(json_object_get(root, "signature")),
	                                  4096, &back, &blen, &err), 0);
	assert_int_equal(verify(pkey, scheme, go_hash, verify_salt, dg, dlen, back, blen), 1);
	free(back);
	json_decref(root);
	json_decref(opts_str);
	free(resp);
	free(req_json);
	free(dg64);
	kh_signer_request_free(&req);
}

static void
t_e2e_rsa_pss(void **state)
{
	(void)state;
	signer_end_to_end(K.rsa2048, "*rsa.PSSOptions", "{\"SaltLength\":-1,\"Hash\":5}",
	                  KH_SIGN_PSS, KH_GO_SHA256, 32);
	signer_end_to_end(K.rsa2048, "*rsa.PSSOptions", "{\"SaltLength\":0,\"Hash\":6}",
	                  KH_SIGN_PSS, KH_GO_SHA384, RSA_PSS_SALTLEN_AUTO);
}

static void
t_e2e_rsa_pkcs1(void **state)
{
	(void)state;
	signer_end_to_end(K.rsa2048, "crypto.Hash", "7", KH_SIGN_HASH, KH_GO_SHA512, 0);
}

static void
t_e2e_ecdsa(void **state)
{
	(void)state;
	signer_end_to_end(K.p256, "crypto.Hash", "5", KH_SIGN_HASH, KH_GO_SHA256, 0);
	signer_end_to_end(K.p384, "crypto.Hash", "6", KH_SIGN_HASH, KH_GO_SHA384, 0);
}

/* ---- kh_pkey: the session key from its PKCS#8 PEM ------------------------ */

/* PEM of `key` as PEM_write_bio_PrivateKey writes it (unencrypted PKCS#8),
 * or with `cipher`, encrypted PKCS#8; malloc'd. */
static char *
pem_of(EVP_PKEY *key, const EVP_CIPHER *cipher, int traditional)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *out;
	long n;

	assert_non_null(b);
	if (traditional)
		assert_int_equal(PEM_write_bio_PrivateKey_traditional(b, key, NULL, NULL, 0,
								       NULL, NULL), 1);
	else
		assert_int_equal(PEM_write_bio_PrivateKey(b, key, cipher, (unsigned char *)"pw",
							  cipher ? 2 : 0, NULL, NULL), 1);
	n = BIO_get_mem_data(b, &data);
	out = strndup(data, (size_t)n);
	assert_non_null(out);
	BIO_free(b);
	return out;
}

static void
t_pkey_round_trip(void **state)
{
	EVP_PKEY *keys[] = { K.p256, K.p384, K.rsa2048, K.rsapss, K.ed25519 };
	kh_error err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char *pem = pem_of(keys[i], NULL, 0);
		EVP_PKEY *got = kh_pkey_from_pkcs8_pem(pem, &err);

		if (got == NULL)
			fail_msg("key %zu: %s", i, err.msg);
		assert_int_equal(EVP_PKEY_eq(got, keys[i]), 1);
		assert_int_equal(EVP_PKEY_get_base_id(got), EVP_PKEY_get_base_id(keys[i]));
		EVP_PKEY_free(got);
		free(pem);
	}
}

static void
expect_pkey_refused(const char *pem, const char *why)
{
	kh_error err;
	EVP_PKEY *got = kh_pkey_from_pkcs8_pem(pem, &err);

	if (got != NULL)
		fail_msg("accepted a session key %s", why);
	assert_int_equal(err.code, KH_ERR_REFUSED);
	assert_true(err.msg[0] != '\0');
}

static void
t_pkey_refuses(void **state)
{
	char *enc = pem_of(K.p256, EVP_aes_256_cbc(), 0);
	char *trad = pem_of(K.p256, NULL, 1);
	char *plain = pem_of(K.p256, NULL, 0);
	char *cut = strdup(plain), *bent = strdup(plain), *hdr;

	(void)state;
	assert_non_null(cut);
	assert_non_null(bent);
	expect_pkey_refused(enc, "that is encrypted");
	expect_pkey_refused(trad, "in the traditional EC format");
	expect_pkey_refused("", "that is empty");
	expect_pkey_refused("not pem at all\n", "that is not PEM");
	expect_pkey_refused("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
			    "that is a certificate");
	cut[strlen(cut) / 2] = '\0';
	expect_pkey_refused(cut, "cut in half");
	bent[40] = bent[40] == 'A' ? 'B' : 'A';   /* one base64 digit of the DER */
	expect_pkey_refused(bent, "with a corrupted body");
	assert_true(asprintf(&hdr, "-----BEGIN PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
			     "DEK-Info: AES-256-CBC,00000000000000000000000000000000\n\n%s",
			     plain + strlen("-----BEGIN PRIVATE KEY-----\n")) > 0);
	expect_pkey_refused(hdr, "with PEM headers");
	free(hdr);
	free(cut);
	free(bent);
	free(plain);
	free(trad);
	free(enc);
}

#define N_GOOD (sizeof(good) / sizeof(good[0]))
#define N_BAD (sizeof(bad) / sizeof(bad[0]))

int
main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(t_go_hash_table),
		cmocka_unit_test(t_sign_null_args),
		cmocka_unit_test(t_e2e_rsa_pss),
		cmocka_unit_test(t_e2e_rsa_pkcs1),
		cmocka_unit_test(t_e2e_ecdsa),
		cmocka_unit_test(t_pkey_round_trip),
		cmocka_unit_test(t_pkey_refuses),
	};
	const size_t nfixed = sizeof(fixed) / sizeof(fixed[0]);
	const size_t total = nfixed + N_GOOD + N_BAD;
	struct CMUnitTest *tests = calloc(total, sizeof(*tests));
	size_t i, k = 0;
	int rc;

	if (tests == NULL)
		return 1;
	for (i = 0; i < nfixed; i++)
		tests[k++] = fixed[i];
	for (i = 0; i < N_GOOD; i++)
		tests[k++] = (struct CMUnitTest){ good[i].name, t_sign_good, NULL, NULL,
		                                  (void *)&good[i] };
	for (i = 0; i < N_BAD; i++)
		tests[k++] = (struct CMUnitTest){ bad[i].name, t_sign_bad, NULL, NULL,
		                                  (void *)&bad[i] };
	rc = _cmocka_run_group_tests("sign", tests, total, group_setup, group_teardown);
	free(tests);
	return rc;
}
