/*
 * test_token — lib/kh_token: which token is the user's, found by its
 * certificate.  The module's token list is fake (kh_p11_list_tokens and
 * kh_p11_use_token are replaced at link time with --wrap), the
 * certificates are real ones from an in-process CA, and validation and
 * mapping are the real kh_x509: the rules under test are the selection's,
 * not the module's.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "lib/kh_pkcs11.h"
#include "lib/kh_token.h"

#define DAY 86400

/* ---- a CA and certificates of users ---- */

static EVP_PKEY *ca_key, *rogue_key;
static X509 *ca_cert, *rogue_cert;
static char ca_file[64];

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

/* subject "UID=uid, CN=cn" (uid NULL: CN only), eku NULL: none; signed by
 * issuer (NULL: self-signed CA); valid from now-DAY for `days`. */
static X509 *
cert_new(const char *cn, const char *uid, const char *eku, X509 *issuer, EVP_PKEY *ikey,
	 long days)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new();
	static long serial = 100;

	assert_non_null(key);
	assert_non_null(x);
	assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), serial++), 1);
	if (uid != NULL)
		assert_int_equal(X509_NAME_add_entry_by_txt(name, "UID", MBSTRING_UTF8,
							    (const unsigned char *)uid, -1, -1, 0), 1);
	assert_int_equal(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
						    (const unsigned char *)cn, -1, -1, 0), 1);
	assert_int_equal(X509_set_subject_name(x, name), 1);
	assert_int_equal(X509_set_issuer_name(x, issuer != NULL ? X509_get_subject_name(issuer) :
					      name), 1);
	X509_NAME_free(name);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -DAY));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), days * DAY));
	assert_int_equal(X509_set_pubkey(x, key), 1);
	if (issuer == NULL) {
		add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE");
		add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign");
	} else {
		add_ext(x, issuer, NID_key_usage, "critical,digitalSignature");
		if (eku != NULL)
			add_ext(x, issuer, NID_ext_key_usage, eku);
	}
	assert_true(X509_sign(x, issuer != NULL ? ikey : key, EVP_sha256()) > 0);
	if (issuer == NULL) {
		if (ca_key == NULL)
			ca_key = key;
		else
			rogue_key = key;
	} else {
		EVP_PKEY_free(key);
	}
	return x;
}

/* A user certificate of the test CA, valid for a year, EKU clientAuth. */
static X509 *
user_cert(const char *cn, const char *uid)
{
	return cert_new(cn, uid, "clientAuth", ca_cert, ca_key, 365);
}

static int
group_setup(void **state)
{
	FILE *f;
	int fd;

	(void)state;
	ca_cert = cert_new("kubehsm test users CA", NULL, NULL, NULL, NULL, 3650);
	rogue_cert = cert_new("kubehsm test users CA", NULL, NULL, NULL, NULL, 3650);
	(void)snprintf(ca_file, sizeof(ca_file), "/tmp/khtoken-ca.XXXXXX");
	fd = mkstemp(ca_file);
	assert_true(fd >= 0);
	assert_non_null(f = fdopen(fd, "w"));
	assert_int_equal(PEM_write_X509(f, ca_cert), 1);
	assert_int_equal(fclose(f), 0);
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	(void)unlink(ca_file);
	X509_free(ca_cert);
	X509_free(rogue_cert);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(rogue_key);
	return 0;
}

/* ---- the module's token list, faked ---- */

#define MAX_TOKENS 4
#define MAX_CERTS 4

struct fake_cert {
	X509 *x509;             /* owned */
	const char *label;
	unsigned char id;
};

struct fake_tok {
	const char *label, *serial, *manufacturer;
	unsigned long slot_id;
	bool blank;             /* present, not initialised */
	unsigned flags;
	struct fake_cert certs[MAX_CERTS];
	size_t ncerts;
};

static struct {
	struct fake_tok t[MAX_TOKENS];
	size_t n;
	int used;               /* index selected for login, -1 none */
	int listings;
	bool read[MAX_TOKENS];  /* certificates read (kh_p11_read_certs) */
} fake;

static struct fake_tok *
token(const char *label, const char *serial, unsigned long slot)
{
	struct fake_tok *t = &fake.t[fake.n++];

	assert_true(fake.n <= MAX_TOKENS);
	t->label = label;
	t->serial = serial;
	t->manufacturer = "piv_II";
	t->slot_id = slot;
	return t;
}

static void
cert(struct fake_tok *t, X509 *x, unsigned char id, const char *label)
{
	assert_true(t->ncerts < MAX_CERTS);
	t->certs[t->ncerts++] = (struct fake_cert){ x, label, id };
}

int __wrap_kh_p11_list_tokens(struct kh_p11 *p, struct kh_p11_token **tokens, size_t *n,
			      kh_error *err);
int __wrap_kh_p11_use_token(struct kh_p11 *p, const struct kh_p11_token *t, kh_error *err);
int __wrap_kh_p11_read_certs(struct kh_p11 *p, struct kh_p11_token *t, kh_error *err);

static char *
xdup(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

int
__wrap_kh_p11_list_tokens(struct kh_p11 *p, struct kh_p11_token **tokens, size_t *n,
			  kh_error *err)
{
	struct kh_p11_token *out = calloc(fake.n ? fake.n : 1, sizeof(*out));

	(void)p;
	(void)err;
	assert_non_null(out);
	fake.listings++;
	for (size_t i = 0; i < fake.n; i++) {
		struct fake_tok *f = &fake.t[i];
		struct kh_p11_token *t = &out[i];

		t->index = i;
		t->slot_id = f->slot_id;
		t->slot_description = xdup("Yubico Virtual PIV 00 00");
		t->slot_manufacturer = xdup("vpcd");
		t->present = true;
		t->initialized = !f->blank;
		t->label = xdup(f->label);
		t->manufacturer = xdup(f->manufacturer);
		t->model = xdup("PKCS#15 emulated");
		t->serial = xdup(f->serial);
		t->pin_flags = f->flags;
		if (f->ncerts > 0)
			assert_non_null(t->certs = calloc(f->ncerts, sizeof(*t->certs)));
		for (size_t j = 0; j < f->ncerts; j++, t->ncerts++) {
			assert_int_equal(X509_up_ref(f->certs[j].x509), 1);
			t->certs[j].x509 = f->certs[j].x509;
			t->certs[j].label = xdup(f->certs[j].label);
			t->certs[j].id[0] = f->certs[j].id;
			t->certs[j].id_len = 1;
		}
	}
	*tokens = out;
	*n = fake.n;
	return 0;
}

/* The list carries the certificates already; this records who asked. */
int
__wrap_kh_p11_read_certs(struct kh_p11 *p, struct kh_p11_token *t, kh_error *err)
{
	(void)p;
	(void)err;
	assert_true(t->index < MAX_TOKENS);
	fake.read[t->index] = true;
	t->certs_read = true;
	return 0;
}

int
__wrap_kh_p11_use_token(struct kh_p11 *p, const struct kh_p11_token *t, kh_error *err)
{
	(void)p;
	(void)err;
	fake.used = (int)t->index;
	return 0;
}

static int
setup(void **state)
{
	(void)state;
	memset(&fake, 0, sizeof(fake));
	fake.used = -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < fake.n; i++)
		for (size_t j = 0; j < fake.t[i].ncerts; j++)
			X509_free(fake.t[i].certs[j].x509);
	return 0;
}

/* The rules of a policy with map = uid (the CN is a display name). */
static struct kh_token_rules
rules(enum kh_map_rule map)
{
	return (struct kh_token_rules){ .ca_file = ca_file, .map = map };
}

/* The module stands in as an address only: every call on it is faked. */
static char module_stand_in;
#define P ((struct kh_p11 *)(void *)&module_stand_in)

/* choose for user; the outcome must be `want` */
static int
choose(const struct kh_token_rules *r, const char *user, struct kh_token_choice *c,
       enum kh_token_outcome want, kh_error *err)
{
	int rc = kh_token_choose(P, r, user, c, err);

	if (c->outcome != want)
		fail_msg("outcome %d, expected %d (%s)", c->outcome, want, err->msg);
	assert_int_equal(rc, want == KH_TOKEN_CHOSEN ? 0 : -1);
	return rc;
}

/* ---- the rules ---- */

/* A card whose CN is a display name: found by UID, whatever its label. */
static void
t_found_by_certificate_not_label(void **state)
{
	struct kh_token_rules r = rules(KH_MAP_UID);
	struct kh_token_choice c;
	kh_error err = { 0 };

	(void)state;
	cert(token("Alice Smith", "0000000012345678", 0), user_cert("Alice Smith", "alice"), 1,
	     "Certificate for PIV Authentication");
	choose(&r, "alice", &c, KH_TOKEN_CHOSEN, &err);
	assert_string_equal(kh_token_chosen(&c)->label, "Alice Smith");
	assert_int_equal(kh_token_chosen_cert(&c)->id[0], 1);
	assert_int_equal(fake.used, 0);
	kh_token_choice_free(&c);
	/* cn would map it to "Alice Smith", who is nobody here. */
	r = rules(KH_MAP_CN);
	choose(&r, "alice", &c, KH_TOKEN_NONE, &err);
	assert_int_equal(err.code, KH_ERR_NOTFOUND);
	assert_non_null(strstr(err.msg, "no token holds a valid certificate of 'alice'"));
	kh_token_choice_free(&c);
}

/* Two cards of two users: each gets their own, neither is ever selected
 * for the other. */
static void
t_two_users_two_cards(void **state)
{
	struct kh_token_rules r = rules(KH_MAP_UID);
	struct kh_token_choice c;
	kh_error err = { 0 };

	(void)state;
	cert(token("Alice Smith", "01", 0), user_cert("Alice Smith", "alice"), 1, "a");
	cert(token("Bob Jones", "02", 1), user_cert("Bob Jones", "bob"), 1, "b");
	choose(&r, "alice", &c, KH_TOKEN_CHOSEN, &err);
	assert_int_equal(fake.used, 0);
	assert_int_equal(c.evals[1].certs[0].verdict, KH_CERT_OTHERS);
	assert_string_equal(c.evals[1].certs[0].user, "bob");
	kh_token_choice_free(&c);
	choose(&r, "bob", &c, KH_TOKEN_CHOSEN, &err);
	assert_int_equal(fake.used, 1);
	kh_token_choice_free(&c);
	fake.used = -1;
	choose(&r, "carol", &c, KH_TOKEN_NONE, &err);
	assert_int_equal(fake.used, -1);
	assert_non_null(strstr(err.msg, "2 tokens looked at"));
	kh_token_choice_free(&c);
}

/* Two tokens that both hold the user's certificate: refused, both named,
 * nothing selected — never a guess. */
static void
t_two_cards_of_one_user_refused(void **state)
{
	struct kh_token_rules r = rules(KH_MAP_UID);
	struct kh_token_choice c;
	kh_error err = { 0 };

	(void)state;
	cert(token("Alice Smith", "0000000000000011", 0), user_cert("Alice Smith", "alice"), 1, "a");
	cert(token("YubiKey PIV #123", "123", 1), user_cert("Alice S.", "alice"), 1, "a");
	choose(&r, "alice", &c, KH_TOKEN_AMBIGUOUS, &err);
	assert_int_equal(err.code, KH_ERR_REFUSED);
	assert_int_equal(fake.used, -1);
	assert_non_null(strstr(err.msg, "2 tokens hold a certificate of 'alice'"));
	assert_non_null(strstr(err.msg, "'Alice Smith' (serial 0000000000000011, slot 0)"));
	assert_non_null(strstr(err.msg, "'YubiKey PIV #123' (serial 123, slot 1)"));
	kh_token_choice_free(&c);
	/* token.uri settles it, as the message says. */
	{
		struct kh_p11_uri u = { 0 };

		assert_int_equal(kh_p11_uri_parse_token("pkcs11:serial=123", &u, &err), 0);
		r.uri = &u;
		memset(fake.read, 0, sizeof(fake.read));
		choose(&r, "alice", &c, KH_TOKEN_CHOSEN, &err);
		assert_int_equal(fake.used, 1);
		assert_string_equal(c.evals[0].skip, "token.uri leaves it out");
		/* A token left out is not even read. */
		assert_false(fake.read[0]);
		assert_true(fake.read[1]);
		kh_token_choice_free(&c);
		kh_p11_uri_clear(&u);
	}
}

/* A PIV card's 9A and 9C certificates, same subject: clientAuth first,
 * then the lowest CKA_ID. */
static void
t_piv_9a_before_9c(void **state)
{
	struct kh_token_rules r = rules(KH_MAP_UID);
	struct kh_token_choice c;
	struct fake_tok *t;
	kh_error err = { 0 };

	(void)state;
	t = token("Alice Smith", "01", 0);
	/* 9C (id 02) listed first, and with no EKU at all: 9A still wins. */
	cert(t, cert_new("Alice Smith", "alice", NULL, ca_cert, ca_key, 365), 2,
	     "Certificate for Digital Signature");
	cert(t, user_cert("Alice Smith", "alice"), 1, "Certificate for PIV Authentication");
	choose(&r, "alice", &c, KH_TOKEN_CHOSEN, &err);
	assert_int_equal(kh_token_chosen_cert(&c)->id[0], 1);
	assert_true(c.evals[0].certs[1].client_auth);
	assert_false(c.evals[0].certs[0].client_auth);
	assert_int_equal(c.evals[0].nusers, 2);
	kh_token_choice_free(&c);
}

static void
t_lowest_id_among_equals(void **state)
{
	struct kh_token_rules r = rules(KH_MAP_UID);
	struct kh_token_choice c;
	struct fake_tok *t;
	kh_error err = { 0 };

	(void)state;
	t = token("Alice Smith", "01", 0);
	cert(t, user_cert("Alice Smith", "alice"), 4, "Certificate for Card Authentication");
	cert(t, user_cert("Alice Smith", "alice"), 2, "Certificate for Digital Signature");
	choose(&r, "alice", &c, KH_TOKEN_CHOSEN, &err);
	assert_int_equal(kh_token_chosen_cert(&c)->id[0], 2);
	kh_token_choice_free(&c);
}

/* Two different certificates of the user's under one CKA_ID: no rule
 * orders them; refused, with the way out. */
static void
t_tie_refused(void **state)
{
	struct kh_token_rules r = rules(KH_MAP_UID);
	struct kh_token_choice c;
	struct fake_tok *t;
	kh_error err = { 0 };

	(void)state;
	t = token("Alice Smith", "01", 0);
	cert(t, user_cert("Alice Smith", "alice"), 1, "x");
	cert(t, user_cert("Alice Smith", "alice"), 1, "y");
	choose(&r, "alice", &c, KH_TOKEN_AMBIGUOUS, &err);
	assert_non_null(strstr(err.msg, "cannot tell apart; name one with token.key_id"));
	assert_int_equal(fake.used, -1);
	kh_token_choice_free(&c);
}

/* token.key_id (and key_label) narrow which certificate is the user's:
 * a 9C key chosen on purpose. */
static void
t_key_id_names_9c(void **state)
{
	struct kh_token_rules r = rules(KH_MAP_UID);
	struct kh_token_choice c;
	struct fake_tok *t;
	static const unsigned char id02[] = { 0x02 };
	kh_error err = { 0 };

	(void)state;
	t = token("Alice Smith", "01", 0);
	cert(t, user_cert("Alice Smith", "alice"), 1, "Certificate for PIV Authentication");
	cert(t, user_cert("Alice Smith", "alice"), 2, "Certificate for Digital Signature");
	r.key_id = id02;
	r.key_id_len = 1;
	choose(&r, "alice", &c, KH_TOKEN_CHOSEN, &err);
	assert_int_equal(kh_token_chosen_cert(&c)->id[0], 2);
	assert_int_equal(c.evals[0].certs[0].verdict, KH_CERT_NOT_NAMED);
	kh_token_choice_free(&c);
	r.key_id = NULL;
	r.key_label = "Certificate for PIV Authentication";
	choose(&r, "alice", &c, KH_TOKEN_CHOSEN, &err);
	assert_int_equal(kh_token_chosen_cert(&c)->id[0], 1);
	kh_token_choice_free(&c);
	r.key_label = "kube";
	choose(&r, "alice", &c, KH_TOKEN_NONE, &err);
	kh_token_choice_free(&c);
}

/* The user's certificate is there but not valid: rejected with the
 * certificate's own reason, never passed over in silence. */
static void
t_invalid_certificate_of_user(void **state)
{
	struct kh_token_rules r = rules(KH_MAP_UID);
	struct kh_token_choice c;
	kh_error err = { 0 };

	(void)state;
	cert(token("Alice Smith", "01", 0),
	     cert_new("Alice Smith", "alice", "clientAuth", ca_cert, ca_key, -1), 1, "a");
	choose(&r, "alice", &c, KH_TOKEN_REJECTED, &err);
	assert_int_equal(err.code, KH_ERR_EXPIRED);
	assert_non_null(strstr(err.msg, "token 'Alice Smith' (serial 01, slot 0): certificate"));
	assert_int_equal(fake.used, -1);
	assert_false(c.evals[0].certs[0].valid);
	assert_string_equal(c.evals[0].certs[0].user, "alice");
	kh_token_choice_free(&c);
	teardown(state);
	setup(state);
	/* another CA's, with the same CA name */
	cert(token("Alice Smith", "01", 0),
	     cert_new("Alice Smith", "alice", "clientAuth", rogue_cert, rogue_key, 365), 1, "a");
	choose(&r, "alice", &c, KH_TOKEN_REJECTED, &err);
	assert_int_equal(err.code, KH_ERR_REFUSED);
	assert_non_null(strstr(err.msg, "untrusted issuer"));
	kh_token_choice_free(&c);
	teardown(state);
	setup(state);
	/* EKU that does not allow client authentication */
	cert(token("Alice Smith", "01", 0),
	     cert_new("Alice Smith", "alice", "emailProtection", ca_cert, ca_key, 365), 2, "s");
	choose(&r, "alice", &c, KH_TOKEN_REJECTED, &err);
	assert_non_null(strstr(err.msg, "clientAuth"));
	kh_token_choice_free(&c);
}

/* A valid certificate beats an expired one of the same user elsewhere. */
static void
t_valid_card_beats_expired_card(void **state)
{
	struct kh_token_rules r = rules(KH_MAP_UID);
	struct kh_token_choice c;
	kh_error err = { 0 };

	(void)state;
	cert(token("old card", "01", 0),
	     cert_new("Alice Smith", "alice", "clientAuth", ca_cert, ca_key, -1), 1, "a");
	cert(token("new card", "02", 1), user_cert("Alice Smith", "alice"), 1, "a");
	choose(&r, "alice", &c, KH_TOKEN_CHOSEN, &err);
	assert_int_equal(fake.used, 1);
	kh_token_choice_free(&c);
}

/* label = "%u" stays a narrower choice; the token it names holding
 * someone else's certificate is refused (the admin said it is the user's). */
static void
t_label_narrows(void **state)
{
	struct kh_token_rules r = rules(KH_MAP_CN);
	struct kh_token_choice c;
	kh_error err = { 0 };

	(void)state;
	cert(token("mallory", "01", 0), user_cert("alice", NULL), 1, "kube");
	cert(token("alice", "02", 1), user_cert("alice", NULL), 1, "kube");
	r.label = "alice";
	choose(&r, "alice", &c, KH_TOKEN_CHOSEN, &err);
	assert_int_equal(fake.used, 1);
	assert_string_equal(c.evals[0].skip, "token.label names another token");
	kh_token_choice_free(&c);
	r.label = "mallory";
	fake.used = -1;
	choose(&r, "mallory", &c, KH_TOKEN_REJECTED, &err);
	assert_non_null(strstr(err.msg, "holds a certificate of 'alice' (trust.map = cn), not "
				"of 'mallory'"));
	assert_int_equal(fake.used, -1);
	kh_token_choice_free(&c);
	/* Without the label, alice's certificate on two tokens is ambiguous. */
	r.label = NULL;
	choose(&r, "alice", &c, KH_TOKEN_AMBIGUOUS, &err);
	kh_token_choice_free(&c);
}

/* Blank tokens and empty slots are never anyone's; a module with no token
 * at all is "none". */
static void
t_blank_and_empty(void **state)
{
	struct kh_token_rules r = rules(KH_MAP_UID);
	struct kh_token_choice c;
	struct fake_tok *t;
	kh_error err = { 0 };

	(void)state;
	choose(&r, "alice", &c, KH_TOKEN_NONE, &err);
	assert_int_equal(c.ntokens, 0);
	kh_token_choice_free(&c);
	t = token("", "0000000000000000", 7);
	t->blank = true;
	choose(&r, "alice", &c, KH_TOKEN_NONE, &err);
	assert_string_equal(c.evals[0].skip, "the token is not initialised");
	kh_token_choice_free(&c);
}

/* A broken trust.ca_file is nobody's failure but the admin's: the whole
 * choice fails as a configuration error. */
static void
t_unreadable_ca_is_config(void **state)
{
	struct kh_token_rules r = rules(KH_MAP_UID);
	struct kh_token_choice c;
	kh_error err = { 0 };

	(void)state;
	cert(token("Alice Smith", "01", 0), user_cert("Alice Smith", "alice"), 1, "a");
	r.ca_file = "/nonexistent/ca.pem";
	assert_int_equal(kh_token_choose(P, &r, "alice", &c, &err), -1);
	assert_int_equal(err.code, KH_ERR_CONFIG);
	assert_int_equal(fake.used, -1);
	kh_token_choice_free(&c);
}

/* kubehsm sign --key token: the token holding exactly the session's
 * certificate, by value, not by label. */
static void
t_find_cert(void **state)
{
	struct kh_token_choice c;
	X509 *alice = user_cert("Alice Smith", "alice"), *other;
	kh_error err = { 0 };

	(void)state;
	cert(token("Alice Smith", "01", 0), user_cert("Alice Smith", "alice"), 1, "a");
	assert_int_equal(X509_up_ref(alice), 1);
	cert(token("Alice Smith", "02", 1), alice, 2, "a");
	assert_int_equal(kh_token_find_cert(P, NULL, alice, &c, &err), 0);
	assert_int_equal(fake.used, 1);
	assert_int_equal(kh_token_chosen_cert(&c)->id[0], 2);
	kh_token_choice_free(&c);
	other = user_cert("Alice Smith", "alice");
	assert_int_equal(kh_token_find_cert(P, NULL, other, &c, &err), -1);
	assert_int_equal(err.code, KH_ERR_NOTFOUND);
	kh_token_choice_free(&c);
	X509_free(other);
	X509_free(alice);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(t_found_by_certificate_not_label),
		T(t_two_users_two_cards),
		T(t_two_cards_of_one_user_refused),
		T(t_piv_9a_before_9c),
		T(t_lowest_id_among_equals),
		T(t_tie_refused),
		T(t_key_id_names_9c),
		T(t_invalid_certificate_of_user),
		T(t_valid_card_beats_expired_card),
		T(t_label_narrows),
		T(t_blank_and_empty),
		T(t_unreadable_ca_is_config),
		T(t_find_cert),
#undef T
	};

	return cmocka_run_group_tests_name("token selection", tests, group_setup, group_teardown);
}
