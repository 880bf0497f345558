/*
 * test_x509 — lib/kh_x509: identity mapping, groups, session certificate
 * minting, key generation, chain loading, validation.  Every certificate is
 * built in-process with OpenSSL, so there are no fixture files to go stale.
 */
#include "config.h"

#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "lib/kh_mem.h"
#include "lib/kh_pin_file.h"
#include "lib/kh_pkcs11.h"
#include "lib/kh_x509.h"

#define DAY 86400

/* ---- building test certificates ---- */

struct cert_spec {
	const char *subject[16][2];   /* {"CN", "alice"}, ... ; {NULL} ends */
	const char *san;              /* X509V3 config string, or NULL */
	const char *ku, *eku;         /* NULL = extension absent */
	bool ca;
	long not_before, not_after;   /* seconds from now */
};

static EVP_PKEY *
ec_key(void)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");

	assert_non_null(k);
	return k;
}

static void
add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	assert_non_null(ext);
	assert_int_equal(X509_add_ext(x, ext, -1), 1);
	X509_EXTENSION_free(ext);
}

/* Sign a certificate for `key` with issuer (NULL = self-signed). */
static X509 *
make_cert(const struct cert_spec *s, EVP_PKEY *key, X509 *issuer, EVP_PKEY *issuer_key)
{
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new();
	int i;

	assert_non_null(x);
	assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), (long)(random() & 0xffffff) + 1), 1);
	for (i = 0; s->subject[i][0] != NULL; i++)
		assert_int_equal(X509_NAME_add_entry_by_txt(name, s->subject[i][0], MBSTRING_UTF8,
							     (const unsigned char *)s->subject[i][1],
							     -1, -1, 0), 1);
	assert_int_equal(X509_set_subject_name(x, name), 1);
	assert_int_equal(X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name), 1);
	X509_NAME_free(name);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), s->not_before ? s->not_before : -DAY));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), s->not_after ? s->not_after : 30 * DAY));
	assert_int_equal(X509_set_pubkey(x, key), 1);
	if (s->ca) {
		add_ext(x, issuer ? issuer : x, NID_basic_constraints, "critical,CA:TRUE");
		add_ext(x, issuer ? issuer : x, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
	}
	add_ext(x, issuer ? issuer : x, NID_subject_key_identifier, "hash");
	if (s->ku)
		add_ext(x, issuer ? issuer : x, NID_key_usage, s->ku);
	if (s->eku)
		add_ext(x, issuer ? issuer : x, NID_ext_key_usage, s->eku);
	if (s->san)
		add_ext(x, issuer ? issuer : x, NID_subject_alt_name, s->san);
	assert_true(X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) > 0);
	return x;
}

static X509 *
leaf(const struct cert_spec *s)
{
	EVP_PKEY *k = ec_key();
	X509 *x = make_cert(s, k, NULL, NULL);

	EVP_PKEY_free(k);
	return x;
}

/* trust.domains of the email/upn mappings below. */
static const char *const test_domains[] = { "example.org", "corp.example" };

static void
expect_map(const struct cert_spec *s, enum kh_map_rule rule, const char *want)
{
	X509 *x = leaf(s);
	kh_error err = { 0 };
	char *name = NULL;
	int rc = kh_x509_map_user(x, rule, test_domains, 2, &name, &err);

	if (want != NULL) {
		if (rc != 0)
			fail_msg("mapping failed: %s", err.msg);
		assert_string_equal(name, want);
	} else {
		assert_int_equal(rc, -1);
		assert_null(name);
		assert_int_equal(err.code, KH_ERR_REFUSED);
		assert_true(err.msg[0] != '\0');
	}
	free(name);
	X509_free(x);
}

/* A certificate whose CN holds raw bytes (embedded NUL, control chars). */
static X509 *
leaf_raw_cn(const unsigned char *cn, int len, int type)
{
	struct cert_spec s = { .subject = { { NULL } } };
	EVP_PKEY *k = ec_key();
	X509 *x = make_cert(&s, k, NULL, NULL);
	X509_NAME *name = X509_NAME_new();

	assert_int_equal(X509_NAME_add_entry_by_NID(name, NID_commonName, type, cn, len, -1, 0), 1);
	assert_int_equal(X509_set_subject_name(x, name), 1);
	X509_NAME_free(name);
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	EVP_PKEY_free(k);
	return x;
}

/* ---- identity mapping ---- */

static void
test_map_cn(void **state)
{
	struct cert_spec ok = { .subject = { { "CN", "alice" }, { "O", "dev" } } };
	struct cert_spec none = { .subject = { { "O", "dev" } } };
	struct cert_spec two = { .subject = { { "CN", "alice" }, { "CN", "mallory" } } };
	struct cert_spec space = { .subject = { { "CN", "alice smith" } } };
	struct cert_spec utf8 = { .subject = { { "CN", "al\xc3\xaf" "ce" } } };

	(void)state;
	expect_map(&ok, KH_MAP_CN, "alice");
	expect_map(&none, KH_MAP_CN, NULL);
	expect_map(&two, KH_MAP_CN, NULL);
	expect_map(&space, KH_MAP_CN, NULL);
	expect_map(&utf8, KH_MAP_CN, NULL);
}

static void
test_map_cn_embedded_nul(void **state)
{
	static const unsigned char nul[] = "alice\0.evil";
	static const unsigned char ctl[] = "ali\nce";
	kh_error err = { 0 };
	char *name = NULL;
	X509 *x;

	(void)state;
	x = leaf_raw_cn(nul, (int)sizeof(nul) - 1, V_ASN1_UTF8STRING);
	assert_int_equal(kh_x509_map_user(x, KH_MAP_CN, NULL, 0, &name, &err), -1);
	assert_null(name);
	assert_non_null(strstr(err.msg, "NUL"));
	X509_free(x);
	x = leaf_raw_cn(ctl, (int)sizeof(ctl) - 1, V_ASN1_UTF8STRING);
	assert_int_equal(kh_x509_map_user(x, KH_MAP_CN, NULL, 0, &name, &err), -1);
	X509_free(x);
	/* A BMPString "alice" decodes to plain ASCII and is accepted. */
	x = leaf_raw_cn((const unsigned char *)"\0a\0l\0i\0c\0e", 10, V_ASN1_BMPSTRING);
	assert_int_equal(kh_x509_map_user(x, KH_MAP_CN, NULL, 0, &name, &err), 0);
	assert_string_equal(name, "alice");
	free(name);
	X509_free(x);
}

static void
test_map_uid(void **state)
{
	struct cert_spec ok = { .subject = { { "CN", "Alice Smith" }, { "UID", "asmith" } } };
	struct cert_spec none = { .subject = { { "CN", "asmith" } } };
	struct cert_spec two = { .subject = { { "UID", "a" }, { "UID", "b" } } };

	(void)state;
	expect_map(&ok, KH_MAP_UID, "asmith");
	expect_map(&none, KH_MAP_UID, NULL);
	expect_map(&two, KH_MAP_UID, NULL);
}

static void
test_map_email(void **state)
{
	struct cert_spec san = { .subject = { { "CN", "x" } }, .san = "email:alice@example.org" };
	struct cert_spec attr = { .subject = { { "CN", "x" }, { "emailAddress", "bob@example.org" } } };
	/* The SAN wins over the subject attribute. */
	struct cert_spec both = { .subject = { { "emailAddress", "bob@example.org" } },
				  .san = "email:alice@example.org" };
	struct cert_spec two = { .subject = { { "CN", "x" } },
				 .san = "email:alice@example.org,email:root@example.org" };
	struct cert_spec noat = { .subject = { { "CN", "x" } }, .san = "email:alice" };
	struct cert_spec twoat = { .subject = { { "CN", "x" } }, .san = "email:a@b@example.org" };
	struct cert_spec empty_local = { .subject = { { "CN", "x" } }, .san = "email:@example.org" };
	struct cert_spec none = { .subject = { { "CN", "x" } }, .san = "DNS:host.example.org" };
	struct cert_spec nosan = { .subject = { { "CN", "x" } } };

	(void)state;
	expect_map(&san, KH_MAP_EMAIL, "alice");
	expect_map(&attr, KH_MAP_EMAIL, "bob");
	expect_map(&both, KH_MAP_EMAIL, "alice");
	expect_map(&two, KH_MAP_EMAIL, NULL);
	expect_map(&noat, KH_MAP_EMAIL, NULL);
	expect_map(&twoat, KH_MAP_EMAIL, NULL);
	expect_map(&empty_local, KH_MAP_EMAIL, NULL);
	expect_map(&none, KH_MAP_EMAIL, NULL);
	expect_map(&nosan, KH_MAP_EMAIL, NULL);
}

static void
test_map_upn(void **state)
{
	struct cert_spec ok = { .subject = { { "CN", "x" } },
				.san = "otherName:msUPN;UTF8:alice@corp.example" };
	struct cert_spec with_email = { .subject = { { "CN", "x" } },
					.san = "email:bob@example.org,otherName:msUPN;UTF8:alice@corp.example" };
	struct cert_spec two = { .subject = { { "CN", "x" } },
				 .san = "otherName:msUPN;UTF8:a@corp,otherName:msUPN;UTF8:b@corp" };
	struct cert_spec ia5 = { .subject = { { "CN", "x" } },
				 .san = "otherName:msUPN;IA5STRING:alice@corp.example" };
	struct cert_spec other_oid = { .subject = { { "CN", "x" } },
				       .san = "otherName:1.2.3.4;UTF8:alice@corp.example" };
	struct cert_spec noat = { .subject = { { "CN", "x" } }, .san = "otherName:msUPN;UTF8:alice" };

	(void)state;
	expect_map(&ok, KH_MAP_UPN, "alice");
	expect_map(&with_email, KH_MAP_UPN, "alice");
	expect_map(&with_email, KH_MAP_EMAIL, "bob");
	expect_map(&two, KH_MAP_UPN, NULL);
	expect_map(&ia5, KH_MAP_UPN, NULL);
	expect_map(&other_oid, KH_MAP_UPN, NULL);
	expect_map(&noat, KH_MAP_UPN, NULL);
}

/* The local part alone names a local user only within trust.domains (#13). */
static void
test_map_domains(void **state)
{
	struct cert_spec partner = { .subject = { { "CN", "x" } },
				     .san = "email:alice@partner.example" };
	struct cert_spec upcase = { .subject = { { "CN", "x" } },
				    .san = "otherName:msUPN;UTF8:alice@CORP.Example" };
	struct cert_spec suffix = { .subject = { { "CN", "x" } },
				    .san = "email:alice@evil.example.org" };
	struct cert_spec prefix = { .subject = { { "CN", "x" } },
				    .san = "email:alice@example.org.evil" };
	X509 *x = leaf(&partner);
	kh_error err = { 0 };
	char *name = NULL;

	(void)state;
	expect_map(&partner, KH_MAP_EMAIL, NULL);
	assert_int_equal(kh_x509_map_user(x, KH_MAP_EMAIL, test_domains, 2, &name, &err), -1);
	assert_non_null(strstr(err.msg, "domain 'partner.example' is not one of trust.domains"));
	assert_int_equal(kh_x509_map_user(x, KH_MAP_EMAIL, NULL, 0, &name, &err), -1);
	assert_null(name);
	X509_free(x);
	expect_map(&upcase, KH_MAP_UPN, "alice");
	expect_map(&suffix, KH_MAP_EMAIL, NULL);
	expect_map(&prefix, KH_MAP_EMAIL, NULL);
}

/* ---- groups ---- */

static void
test_subject_groups(void **state)
{
	struct cert_spec s = { .subject = { { "CN", "alice" }, { "O", "dev" }, { "OU", "team 1" },
					    { "O", "ops" } } };
	struct cert_spec none = { .subject = { { "CN", "alice" } } };
	X509 *x = leaf(&s), *y = leaf(&none), *z;
	kh_error err = { 0 };
	char **v = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(kh_x509_subject_values(x, "O", &v, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0], "dev");
	assert_string_equal(v[1], "ops");
	kh_x509_strv_free(v, n);
	assert_int_equal(kh_x509_subject_values(x, "OU", &v, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0], "team 1");
	kh_x509_strv_free(v, n);
	assert_int_equal(kh_x509_subject_values(y, "O", &v, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_null(v);
	assert_int_equal(kh_x509_subject_values(x, "CN", &v, &n, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	X509_free(x);
	X509_free(y);

	/* One bad value (control character) refuses the certificate. */
	{
		struct cert_spec bad = { .subject = { { "CN", "a" }, { "O", "dev" }, { "O", "x\ty" } } };

		z = leaf(&bad);
		assert_int_equal(kh_x509_subject_values(z, "O", &v, &n, &err), -1);
		assert_int_equal(err.code, KH_ERR_REFUSED);
		assert_null(v);
		X509_free(z);
	}
}

/* ---- a software CA and issuer for minting and validation ---- */

struct pki {
	EVP_PKEY *ca_key, *issuer_key, *user_key;
	X509 *ca, *issuer;
	char dir[64];
	char ca_file[96];
};

static int
setup_pki(void **state)
{
	struct pki *p = calloc(1, sizeof(*p));
	struct cert_spec ca = { .subject = { { "CN", "Test Users CA" } }, .ca = true,
				.not_after = 3650L * DAY };
	struct cert_spec iss = { .subject = { { "CN", "kubehsm issuer" } }, .ca = true,
				 .not_after = 365L * DAY };
	FILE *f;

	assert_non_null(p);
	p->ca_key = ec_key();
	p->issuer_key = ec_key();
	p->user_key = ec_key();
	p->ca = make_cert(&ca, p->ca_key, NULL, NULL);
	p->issuer = make_cert(&iss, p->issuer_key, p->ca, p->ca_key);
	strcpy(p->dir, "/tmp/kh-test-x509.XXXXXX");
	assert_non_null(mkdtemp(p->dir));
	snprintf(p->ca_file, sizeof(p->ca_file), "%s/ca.pem", p->dir);
	f = fopen(p->ca_file, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509(f, p->ca), 1);
	fclose(f);
	*state = p;
	return 0;
}

static int
teardown_pki(void **state)
{
	struct pki *p = *state;
	char cmd[128];

	EVP_PKEY_free(p->ca_key);
	EVP_PKEY_free(p->issuer_key);
	EVP_PKEY_free(p->user_key);
	X509_free(p->ca);
	X509_free(p->issuer);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p->dir);
	if (system(cmd) != 0)
		return -1;
	free(p);
	return 0;
}

static void
write_pem(const char *path, X509 *const *certs, int n)
{
	FILE *f = fopen(path, "w");
	int i;

	assert_non_null(f);
	for (i = 0; i < n; i++)
		assert_int_equal(PEM_write_X509(f, certs[i]), 1);
	fclose(f);
}

/* ---- minting ---- */

static int
ext_critical(X509 *x, int nid)
{
	int idx = X509_get_ext_by_NID(x, nid, -1);

	assert_true(idx >= 0);
	return X509_EXTENSION_get_critical(X509_get_ext(x, idx));
}

static void
check_minted(struct pki *p, X509 *x, EVP_PKEY *session, time_t now, time_t not_after, bool rsa)
{
	X509_NAME *subj = X509_get_subject_name(x);
	const ASN1_INTEGER *serial = X509_get0_serialNumber(x);
	BIGNUM *bn = ASN1_INTEGER_to_BN(serial, NULL);
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	STACK_OF(X509) *untrusted = sk_X509_new_null();
	BASIC_CONSTRAINTS *bc;
	ASN1_OCTET_STRING *ski;
	AUTHORITY_KEYID *akid;
	const ASN1_OCTET_STRING *issuer_ski;
	time_t t;
	char buf[64];

	/* signature by the issuer, chain to the CA, purpose client auth */
	assert_int_equal(X509_verify(x, p->issuer_key), 1);
	assert_int_equal(X509_STORE_add_cert(store, p->ca), 1);
	assert_true(sk_X509_push(untrusted, p->issuer) > 0);
	assert_int_equal(X509_STORE_CTX_init(ctx, store, x, untrusted), 1);
	assert_int_equal(X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT), 1);
	if (X509_verify_cert(ctx) != 1)
		fail_msg("minted cert does not verify: %s",
			 X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	sk_X509_free(untrusted);

	assert_int_equal(X509_get_version(x), X509_VERSION_3);
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(x), session), 1);
	assert_int_equal(X509_NAME_cmp(X509_get_issuer_name(x), X509_get_subject_name(p->issuer)), 0);

	/* subject: CN=user, then one O per group, nothing else */
	assert_int_equal(X509_NAME_entry_count(subj), 3);
	assert_true(X509_NAME_get_text_by_NID(subj, NID_commonName, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "alice");
	assert_int_equal(OBJ_obj2nid(X509_NAME_ENTRY_get_object(X509_NAME_get_entry(subj, 1))),
			 NID_organizationName);
	assert_int_equal(ASN1_STRING_length(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, 1))), 6);
	assert_memory_equal(ASN1_STRING_get0_data(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, 1))),
			    "system", 6);
	assert_memory_equal(ASN1_STRING_get0_data(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, 2))),
			    "k8s-dev", 7);

	/* serial: positive, about 128 bits */
	assert_non_null(bn);
	assert_false(BN_is_negative(bn));
	assert_false(BN_is_zero(bn));
	assert_true(BN_num_bits(bn) > 64 && BN_num_bits(bn) <= 127);
	BN_free(bn);

	/* validity: now - 5 minutes .. not_after */
	assert_int_equal(kh_x509_not_after(x, &t, NULL), 0);
	assert_int_equal((long)t, (long)not_after);
	assert_int_equal(X509_cmp_time(X509_get0_notBefore(x), &(time_t){ now - KH_X509_BACKDATE + 1 }), -1);
	assert_int_equal(X509_cmp_time(X509_get0_notBefore(x), &(time_t){ now - KH_X509_BACKDATE - 1 }), 1);

	/* extensions */
	bc = X509_get_ext_d2i(x, NID_basic_constraints, NULL, NULL);
	assert_non_null(bc);
	assert_false(bc->ca);
	BASIC_CONSTRAINTS_free(bc);
	assert_int_equal(ext_critical(x, NID_basic_constraints), 1);
	assert_int_equal(ext_critical(x, NID_key_usage), 1);
	assert_int_equal(ext_critical(x, NID_ext_key_usage), 0);
	assert_true(X509_get_key_usage(x) & KU_DIGITAL_SIGNATURE);
	assert_int_equal(!!(X509_get_key_usage(x) & KU_KEY_ENCIPHERMENT), rsa);
	assert_false(X509_get_key_usage(x) & KU_KEY_CERT_SIGN);
	assert_int_equal(X509_get_extended_key_usage(x), XKU_SSL_CLIENT);
	ski = X509_get_ext_d2i(x, NID_subject_key_identifier, NULL, NULL);
	assert_non_null(ski);
	ASN1_OCTET_STRING_free(ski);
	akid = X509_get_ext_d2i(x, NID_authority_key_identifier, NULL, NULL);
	assert_non_null(akid);
	issuer_ski = X509_get0_subject_key_id(p->issuer);
	assert_non_null(issuer_ski);
	assert_int_equal(ASN1_OCTET_STRING_cmp(akid->keyid, issuer_ski), 0);
	AUTHORITY_KEYID_free(akid);
	assert_int_equal(X509_check_ca(x), 0);
}

static void
mint_with(struct pki *p, enum kh_key_type type, bool rsa)
{
	static const char *const groups[] = { "system", "k8s-dev" };
	time_t now = time(NULL);
	EVP_PKEY *session;
	kh_error err = { 0 };
	struct kh_mint_request req = { 0 };
	char *pem = NULL;
	X509 *x;
	BIO *b;

	session = kh_x509_keygen(type, &err);
	assert_non_null(session);
	req.issuer_cert = p->issuer;
	req.issuer_key = p->issuer_key;
	req.session_key = session;
	req.username = "alice";
	req.groups = groups;
	req.ngroups = 2;
	req.not_after = now + 8 * 3600;
	req.now = now;
	if (kh_x509_mint(&req, &pem, &err) != 0)
		fail_msg("mint: %s", err.msg);
	assert_non_null(strstr(pem, "-----BEGIN CERTIFICATE-----"));
	b = BIO_new_mem_buf(pem, -1);
	x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	assert_non_null(x);
	check_minted(p, x, session, now, req.not_after, rsa);
	X509_free(x);
	free(pem);
	EVP_PKEY_free(session);
}

static void
test_mint_ec(void **state)
{
	mint_with(*state, KH_KEY_EC_P256, false);
	mint_with(*state, KH_KEY_EC_P384, false);
}

static void
test_mint_rsa(void **state)
{
	mint_with(*state, KH_KEY_RSA_2048, true);
}

static void
test_mint_serials_differ(void **state)
{
	struct pki *p = *state;
	struct kh_mint_request req = { .issuer_cert = p->issuer, .issuer_key = p->issuer_key,
				       .session_key = p->user_key, .username = "bob",
				       .not_after = time(NULL) + 3600 };
	kh_error err = { 0 };
	X509 *a, *b;

	assert_int_equal(kh_x509_mint_cert(&req, &a, &err), 0);
	assert_int_equal(kh_x509_mint_cert(&req, &b, &err), 0);
	assert_int_not_equal(ASN1_INTEGER_cmp(X509_get0_serialNumber(a), X509_get0_serialNumber(b)), 0);
	/* no groups: the subject is CN only */
	assert_int_equal(X509_NAME_entry_count(X509_get_subject_name(a)), 1);
	X509_free(a);
	X509_free(b);
}

static void
test_mint_refusals(void **state)
{
	struct pki *p = *state;
	static const char *const bad_group[] = { "ok", "bad\ngroup" };
	struct kh_mint_request req = { .issuer_cert = p->issuer, .issuer_key = p->issuer_key,
				       .session_key = p->user_key, .username = "alice",
				       .not_after = time(NULL) + 3600 };
	kh_error err = { 0 };
	X509 *x = NULL;

	/* ends before it starts */
	req.not_after = time(NULL) - 1;
	assert_int_equal(kh_x509_mint_cert(&req, &x, &err), -1);
	assert_null(x);
	/* outlives the issuer */
	req.not_after = time(NULL) + 400L * DAY;
	assert_int_equal(kh_x509_mint_cert(&req, &x, &err), -1);
	assert_non_null(strstr(err.msg, "issuer"));
	req.not_after = time(NULL) + 3600;
	/* bad names */
	req.username = "ali ce";
	assert_int_equal(kh_x509_mint_cert(&req, &x, &err), -1);
	req.username = "";
	assert_int_equal(kh_x509_mint_cert(&req, &x, &err), -1);
	req.username = "alice";
	req.groups = bad_group;
	req.ngroups = 2;
	assert_int_equal(kh_x509_mint_cert(&req, &x, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	req.ngroups = 0;
	/* issuer key not matching the issuer certificate */
	req.issuer_key = p->ca_key;
	assert_int_equal(kh_x509_mint_cert(&req, &x, &err), -1);
	assert_int_equal(err.code, KH_ERR_CONFIG);
	assert_null(x);
}

/* identity.uid: the subject's 1.3.6.1.4.1.57683.2, a UTF8String, with %s
 * the certificate's own serial; what cannot be a UID is refused. */
static void
test_mint_uid(void **state)
{
	struct pki *p = *state;
	static const struct kh_template_var vars[] = { { 'h', "bastion1" }, { 'u', "alice" } };
	struct kh_mint_request req = { .issuer_cert = p->issuer, .issuer_key = p->issuer_key,
				       .session_key = p->user_key, .username = "alice",
				       .not_after = time(NULL) + 3600,
				       .uid_template = "%h:%u:%s", .uid_vars = vars, .nuid_vars = 2 };
	char want[128], *uid = NULL, *hex, long_uid[300];
	ASN1_OBJECT *obj = OBJ_txt2obj("1.3.6.1.4.1.57683.2", 1);
	X509_NAME *name;
	BIGNUM *bn;
	kh_error err = { 0 };
	X509 *x = NULL;
	size_t i;
	int idx;

	assert_int_equal(kh_x509_mint_cert(&req, &x, &err), 0);
	bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	hex = BN_bn2hex(bn);
	for (i = 0; hex[i] != '\0'; i++)
		hex[i] = (char)tolower((unsigned char)hex[i]);
	snprintf(want, sizeof(want), "bastion1:alice:%s", hex);
	assert_int_equal(kh_x509_kube_uid(x, &uid, &err), 0);
	assert_string_equal(uid, want);
	name = X509_get_subject_name(x);
	idx = X509_NAME_get_index_by_OBJ(name, obj, -1);
	assert_true(idx >= 0);
	assert_int_equal(ASN1_STRING_type(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx))),
			 V_ASN1_UTF8STRING);
	free(uid);
	OPENSSL_free(hex);
	BN_free(bn);
	ASN1_OBJECT_free(obj);
	X509_free(x);
	/* No template: no attribute. */
	req.uid_template = "";
	assert_int_equal(kh_x509_mint_cert(&req, &x, &err), 0);
	assert_int_equal(kh_x509_kube_uid(x, &uid, &err), 0);
	assert_null(uid);
	X509_free(x);
	/* UTF-8 is fine; control characters, bad UTF-8, too long are not. */
	assert_int_equal(kh_x509_uid_check("bastion-\xc3\xa9:alice", &err), 0);
	assert_int_equal(kh_x509_uid_check("a\tb", &err), -1);
	assert_int_equal(kh_x509_uid_check("a\x7f", &err), -1);
	assert_int_equal(kh_x509_uid_check("a\xc2\x85" "b", &err), -1);   /* NEL, C1 */
	assert_int_equal(kh_x509_uid_check("a\xff", &err), -1);
	assert_int_equal(kh_x509_uid_check("", &err), -1);
	memset(long_uid, 'x', 257);
	long_uid[257] = '\0';
	assert_int_equal(kh_x509_uid_check(long_uid, &err), -1);
	long_uid[256] = '\0';
	assert_int_equal(kh_x509_uid_check(long_uid, &err), 0);
	/* An escape with no value, or one it does not know: refused. */
	req.uid_template = "%h:%U";
	x = NULL;
	assert_int_equal(kh_x509_mint_cert(&req, &x, &err), -1);
	assert_null(x);
	req.uid_vars = (const struct kh_template_var[]){ { 'h', "bad\nhost" } };
	req.nuid_vars = 1;
	req.uid_template = "%h";
	assert_int_equal(kh_x509_mint_cert(&req, &x, &err), -1);
	assert_int_equal(err.code, KH_ERR_INPUT);
	assert_null(x);
}

/* ---- keys ---- */

static void
test_keygen(void **state)
{
	static const struct { enum kh_key_type t; int id, bits; } cases[] = {
		{ KH_KEY_EC_P256, EVP_PKEY_EC, 256 },
		{ KH_KEY_EC_P384, EVP_PKEY_EC, 384 },
		{ KH_KEY_RSA_2048, EVP_PKEY_RSA, 2048 },
		{ KH_KEY_RSA_3072, EVP_PKEY_RSA, 3072 },
	};
	kh_error err = { 0 };
	size_t i, len;
	char *pem;
	EVP_PKEY *k, *back;
	BIO *b;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		k = kh_x509_keygen(cases[i].t, &err);
		assert_non_null(k);
		assert_int_equal(EVP_PKEY_get_base_id(k), cases[i].id);
		assert_int_equal(EVP_PKEY_get_bits(k), cases[i].bits);
		assert_int_equal(kh_x509_key_to_pem(k, &pem, &len, &err), 0);
		assert_int_equal(strlen(pem), len);
		assert_non_null(strstr(pem, "-----BEGIN PRIVATE KEY-----"));
		b = BIO_new_mem_buf(pem, (int)len);
		back = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
		BIO_free(b);
		assert_non_null(back);
		assert_int_equal(EVP_PKEY_eq(k, back), 1);
		EVP_PKEY_free(back);
		kh_secure_free(pem, len);
		EVP_PKEY_free(k);
	}
	assert_null(kh_x509_keygen((enum kh_key_type)99, &err));
}

/* ---- chain files ---- */

static void
test_load_chain(void **state)
{
	struct pki *p = *state;
	X509 *both[2] = { p->issuer, p->ca };
	X509 *wrong[1] = { p->ca };
	kh_error err = { 0 };
	STACK_OF(X509) *sk = NULL;
	char path[128], *pem = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/issuer.pem", p->dir);
	write_pem(path, both, 2);
	if (kh_x509_load_chain(path, p->issuer_key, &sk, &pem, &err) != 0)
		fail_msg("load_chain: %s", err.msg);
	assert_int_equal(sk_X509_num(sk), 2);
	assert_int_equal(X509_cmp(sk_X509_value(sk, 0), p->issuer), 0);
	assert_non_null(strstr(strstr(pem, "END CERTIFICATE"), "BEGIN CERTIFICATE"));
	sk_X509_pop_free(sk, X509_free);
	free(pem);

	/* the key is not the first certificate's */
	assert_int_equal(kh_x509_load_chain(path, p->user_key, &sk, &pem, &err), -1);
	assert_int_equal(err.code, KH_ERR_CONFIG);
	assert_null(sk);
	assert_null(pem);
	/* without a key only the shape is checked */
	assert_int_equal(kh_x509_load_chain(path, NULL, NULL, NULL, &err), 0);

	/* a CA-less first cert: the user certificate is no issuer */
	{
		struct cert_spec us = { .subject = { { "CN", "alice" } } };
		X509 *u = make_cert(&us, p->user_key, p->ca, p->ca_key);

		write_pem(path, &u, 1);
		assert_int_equal(kh_x509_load_chain(path, p->user_key, &sk, NULL, &err), -1);
		assert_non_null(strstr(err.msg, "CA"));
		X509_free(u);
	}
	(void)wrong;

	/* empty, garbage, missing */
	f = fopen(path, "w");
	fclose(f);
	assert_int_equal(kh_x509_load_chain(path, NULL, &sk, NULL, &err), -1);
	f = fopen(path, "w");
	fputs("-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n", f);
	fclose(f);
	assert_int_equal(kh_x509_load_chain(path, NULL, &sk, NULL, &err), -1);
	assert_int_equal(kh_x509_load_chain("/nonexistent/issuer.pem", NULL, &sk, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "/nonexistent/issuer.pem"));
}

/* ---- validation ---- */

static X509 *
user_cert(struct pki *p, const struct cert_spec *s)
{
	return make_cert(s, p->user_key, p->ca, p->ca_key);
}

static void
expect_valid(struct pki *p, X509 *x, time_t now, enum kh_errcode want, const char *needle)
{
	kh_error err = { 0 };
	int rc = kh_x509_validate(x, p->ca_file, NULL, now, &err);

	if (want == KH_OK) {
		if (rc != 0)
			fail_msg("validate: %s", err.msg);
		return;
	}
	assert_int_equal(rc, -1);
	assert_int_equal(err.code, want);
	if (strstr(err.msg, needle) == NULL)
		fail_msg("message '%s' lacks '%s'", err.msg, needle);
}

static void
test_validate(void **state)
{
	struct pki *p = *state;
	struct cert_spec good = { .subject = { { "CN", "alice" } }, .ku = "critical,digitalSignature",
				  .eku = "clientAuth" };
	struct cert_spec plain = { .subject = { { "CN", "alice" } } };
	struct cert_spec expired = { .subject = { { "CN", "alice" } }, .not_before = -10 * DAY,
				     .not_after = -DAY };
	struct cert_spec future = { .subject = { { "CN", "alice" } }, .not_before = 2 * DAY,
				    .not_after = 10 * DAY };
	struct cert_spec server = { .subject = { { "CN", "alice" } }, .eku = "serverAuth" };
	struct cert_spec keyenc = { .subject = { { "CN", "alice" } }, .ku = "keyEncipherment" };
	X509 *x;
	EVP_PKEY *rogue_key = ec_key();
	struct cert_spec rogue_ca = { .subject = { { "CN", "Test Users CA" } }, .ca = true };
	X509 *rogue = make_cert(&rogue_ca, rogue_key, NULL, NULL);

	x = user_cert(p, &good);
	expect_valid(p, x, 0, KH_OK, NULL);
	/* the clock can be moved: 60 days on, it has expired */
	expect_valid(p, x, time(NULL) + 60L * DAY, KH_ERR_EXPIRED, "expired");
	X509_free(x);
	x = user_cert(p, &plain);
	expect_valid(p, x, 0, KH_OK, NULL);
	X509_free(x);
	x = user_cert(p, &expired);
	expect_valid(p, x, 0, KH_ERR_EXPIRED, "expired");
	X509_free(x);
	x = user_cert(p, &future);
	expect_valid(p, x, 0, KH_ERR_REFUSED, "not yet valid");
	X509_free(x);
	x = user_cert(p, &server);
	expect_valid(p, x, 0, KH_ERR_REFUSED, "clientAuth");
	X509_free(x);
	x = user_cert(p, &keyenc);
	expect_valid(p, x, 0, KH_ERR_REFUSED, "digitalSignature");
	X509_free(x);
	/* same issuer name, other key: untrusted */
	x = make_cert(&good, p->user_key, rogue, rogue_key);
	expect_valid(p, x, 0, KH_ERR_REFUSED, "untrusted issuer");
	X509_free(x);
	/* self-signed */
	x = leaf(&good);
	expect_valid(p, x, 0, KH_ERR_REFUSED, "untrusted issuer");
	X509_free(x);
	X509_free(rogue);
	EVP_PKEY_free(rogue_key);

	/* unreadable CA file */
	{
		kh_error err = { 0 };

		x = user_cert(p, &good);
		assert_int_equal(kh_x509_validate(x, "/nonexistent/ca.pem", NULL, 0, &err), -1);
		assert_int_equal(err.code, KH_ERR_CONFIG);
		assert_int_equal(kh_x509_validate(x, p->ca_file, "/nonexistent/crl.pem", 0, &err), -1);
		assert_int_equal(err.code, KH_ERR_CONFIG);
		X509_free(x);
	}
}

/* ---- small parsers in kh_pkcs11 (no token needed) ---- */

static void
test_uri_parse(void **state)
{
	struct kh_p11_uri u;
	kh_error err = { 0 };
	static const char *const bad[] = {
		"pkcs11:object=issuer",                         /* no token */
		"pkcs11:token=host",                            /* no key */
		"pkcs11:token=host;object=a;object=b",           /* twice */
		"pkcs11:token=host;object=a;library-version=1",  /* unknown */
		"pkcs11:token=host;object=a;slot-id=x1",         /* not decimal */
		"pkcs11:token=host;object=a?pin-value=1234",    /* query */
		"pkcs11:token=host;object=%4",                   /* bad escape */
		"pkcs11:token=host;object=%zz",
		"pkcs11:token=ho%00st;object=a",                 /* NUL */
		"pkcs11:token=host;;object=a",                   /* empty attr */
		"pkcs11:token=host;object",                      /* no = */
		"pkcs11:token=;object=a",                        /* empty */
		"pkcs11:token=host;object=a;type=cert",
		"file:///etc/issuer.key",
		"",
	};
	size_t i;

	(void)state;
	assert_int_equal(kh_p11_uri_parse("pkcs11:token=kubehsm-host;object=issuer", &u, &err), 0);
	assert_string_equal(u.token, "kubehsm-host");
	assert_string_equal(u.object, "issuer");
	assert_null(u.id);
	kh_p11_uri_clear(&u);
	assert_int_equal(kh_p11_uri_parse("pkcs11:token=My%20Token;id=%01%a2;serial=abc;type=private",
					  &u, &err), 0);
	assert_string_equal(u.token, "My Token");
	assert_null(u.object);
	assert_int_equal(u.id_len, 2);
	assert_memory_equal(u.id, "\x01\xa2", 2);
	assert_string_equal(u.serial, "abc");
	kh_p11_uri_clear(&u);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		kh_error_clear(&err);
		if (kh_p11_uri_parse(bad[i], &u, &err) == 0)
			fail_msg("accepted '%s'", bad[i]);
		assert_int_equal(err.code, KH_ERR_CONFIG);
		assert_null(u.token);
	}
}

static void
test_uri_format(void **state)
{
	kh_error err = { 0 };
	struct kh_p11_uri u;
	char *s;

	(void)state;
	s = kh_p11_uri_format("alice", "kube", "01ab", "9e66b95362d8ddae", &err);
	assert_string_equal(s, "pkcs11:token=alice;object=kube;id=%01%AB;serial=9e66b95362d8ddae");
	free(s);
	s = kh_p11_uri_format("a b;c", "x=y%", NULL, "", &err);
	assert_string_equal(s, "pkcs11:token=a%20b%3Bc;object=x%3Dy%25");
	/* round trip */
	assert_int_equal(kh_p11_uri_parse(s, &u, &err), 0);
	assert_string_equal(u.token, "a b;c");
	assert_string_equal(u.object, "x=y%");
	kh_p11_uri_clear(&u);
	free(s);
	assert_null(kh_p11_uri_format("a", "b", "0g", NULL, &err));
	assert_null(kh_p11_uri_format("a", "b", "012", NULL, &err));
}

static void
write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void
test_pin_file(void **state)
{
	struct pki *p = *state;
	char path[128], link[128], big[400];
	kh_error err = { 0 };
	char *pin = NULL;

	snprintf(path, sizeof(path), "%s/pin", p->dir);
	snprintf(link, sizeof(link), "%s/pin.link", p->dir);
	write_file(path, "1234\n", 5);
	/* A PIN file others can read is refused on the descriptor read (the
	 * loader's check of the path may be stale by then). */
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(kh_p11_read_pin_file(path, &pin, &err), -1);
	assert_non_null(strstr(err.msg, "0640"));
	assert_null(pin);
	if (geteuid() == 0) {          /* make check runs as root */
		assert_int_equal(chmod(path, 0600), 0);
		assert_int_equal(chown(path, 1, (gid_t)-1), 0);
		assert_int_equal(kh_p11_read_pin_file(path, &pin, &err), -1);
		assert_non_null(strstr(err.msg, "owned by uid 1"));
		assert_int_equal(chown(path, 0, (gid_t)-1), 0);
	}
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(kh_p11_read_pin_file(path, &pin, &err), 0);
	assert_string_equal(pin, "1234");
	kh_secure_strfree(pin);
	write_file(path, "12 34", 5);           /* no newline, inner space kept */
	assert_int_equal(kh_p11_read_pin_file(path, &pin, &err), 0);
	assert_string_equal(pin, "12 34");
	kh_secure_strfree(pin);
	pin = NULL;
	write_file(path, "1234\n\n", 6);        /* only one newline is stripped */
	assert_int_equal(kh_p11_read_pin_file(path, &pin, &err), -1);
	assert_null(pin);
	write_file(path, "12\0" "34", 5);
	assert_int_equal(kh_p11_read_pin_file(path, &pin, &err), -1);
	write_file(path, "\n", 1);
	assert_int_equal(kh_p11_read_pin_file(path, &pin, &err), -1);
	memset(big, '7', sizeof(big));
	write_file(path, big, KH_P11_PIN_MAX);
	assert_int_equal(kh_p11_read_pin_file(path, &pin, &err), 0);
	assert_int_equal(strlen(pin), KH_P11_PIN_MAX);
	kh_secure_strfree(pin);
	pin = NULL;
	write_file(path, big, KH_P11_PIN_MAX + 1);
	assert_int_equal(kh_p11_read_pin_file(path, &pin, &err), -1);
	write_file(path, big, sizeof(big));
	assert_int_equal(kh_p11_read_pin_file(path, &pin, &err), -1);
	write_file(path, "1234\n", 5);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(kh_p11_read_pin_file(link, &pin, &err), -1);
	assert_non_null(strstr(err.msg, "symbolic"));
	assert_int_equal(kh_p11_read_pin_file(p->dir, &pin, &err), -1);
	assert_int_equal(kh_p11_read_pin_file("/nonexistent/pin", &pin, &err), -1);
	assert_null(pin);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_cn),
		cmocka_unit_test(test_map_domains),
		cmocka_unit_test(test_map_cn_embedded_nul),
		cmocka_unit_test(test_map_uid),
		cmocka_unit_test(test_map_email),
		cmocka_unit_test(test_map_upn),
		cmocka_unit_test(test_subject_groups),
		cmocka_unit_test(test_mint_ec),
		cmocka_unit_test(test_mint_rsa),
		cmocka_unit_test(test_mint_serials_differ),
		cmocka_unit_test(test_mint_refusals),
		cmocka_unit_test(test_mint_uid),
		cmocka_unit_test(test_keygen),
		cmocka_unit_test(test_load_chain),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_uri_parse),
		cmocka_unit_test(test_uri_format),
		cmocka_unit_test(test_pin_file),
	};

	return cmocka_run_group_tests_name("x509", tests, setup_pki, teardown_pki);
}
