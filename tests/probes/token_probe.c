/*
 * token_probe — drives lib/kh_pkcs11 and lib/kh_x509 from the integration
 * tests (tests/integration/tokens/softhsm.sh) against real SoftHSM2 tokens.
 *
 *   token_probe [-m MODULE] find LABEL
 *   token_probe [-m MODULE] login LABEL PIN
 *   token_probe [-m MODULE] pop LABEL PIN KEYLABEL [KEYID]
 *   token_probe [-m MODULE] user LABEL PIN KEYLABEL KEYID CAFILE CRLFILE MAP
 *   token_probe validate CERTFILE CAFILE [CRLFILE]
 *   token_probe map CERTFILE cn|uid|email|upn [DOMAIN...]
 *     (trust.domains for email/upn: the DOMAINs, else $KH_PROBE_DOMAINS,
 *     comma-separated; the user flow reads $KH_PROBE_DOMAINS too)
 *   token_probe [-m MODULE] schemes LABEL PIN KEYLABEL
 *     (the token key signs a digest in every scheme kubehsm sign offers —
 *     ECDSA, or RSA PKCS#1 v1.5 and PSS — each with SHA-256/384/512, and
 *     OpenSSL verifies each signature with the certificate's public key)
 *   token_probe [-m MODULE] mint URI PINFILE CERTFILE USER GROUPS TTL KEYTYPE OUTCERT OUTKEY
 *   token_probe [-m MODULE] loop N LABEL PIN KEYLABEL
 *   token_probe uri TOKEN OBJECT KEYID SERIAL
 *   token_probe parse-uri URI
 *   token_probe pinfile PATH
 *   token_probe [-m MODULE] choose USER CAFILE MAP [KEYLABEL [KEYID [TOKENURI]]]
 *     (lib/kh_token: the user's token found by its certificate; prints the
 *     outcome, the token and certificate chosen, and what the key needs)
 *   token_probe [-m MODULE] reinsert WAITFILE
 *     (labels of the present tokens, whether the -e variables are still
 *     set after the module was loaded, then WAITFILE.ready is made and,
 *     once WAITFILE appears, the labels read again in the same process)
 *
 * Options before the command: -m MODULE, and -e NAME=VALUE (repeatable):
 * pkcs11.env, set around the module's initialisation only.
 *
 * Success prints what was found on stdout and exits 0; failure prints
 * "token_probe: <class>: <message>" on stderr and exits 1.  With
 * KH_PROBE_TIME=1 the steps are timed (milliseconds, on stderr).
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#include <sys/stat.h>
#include <unistd.h>

#include "lib/kh_challenge.h"
#include "lib/kh_env.h"
#include "lib/kh_mem.h"
#include "lib/kh_p11_issuer.h"
#include "lib/kh_pin_file.h"
#include "lib/kh_pkcs11.h"
#include "lib/kh_sign.h"
#include "lib/kh_token.h"
#include "lib/kh_words.h"
#include "lib/kh_x509.h"

static const char *module = "/usr/lib/softhsm/libsofthsm2.so";
/* pkcs11.env of the probe: -e NAME=VALUE options. */
static char *probe_env_names[KH_ENV_MAX], *probe_env_values[KH_ENV_MAX];
static struct kh_env probe_env = { probe_env_names, probe_env_values, 0 };
static struct timespec t0;

static void
tick(void)
{
	clock_gettime(CLOCK_MONOTONIC, &t0);
}

static void
tock(const char *what)
{
	struct timespec t1;

	if (getenv("KH_PROBE_TIME") == NULL)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "time %s %.3f ms\n", what,
		(double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	tick();
}

static int
die(const kh_error *err)
{
	fprintf(stderr, "token_probe: %s: %s\n", kh_errcode_name(err->code), err->msg);
	return 1;
}

static int
usage(void)
{
	fprintf(stderr, "token_probe: usage: see the comment at the top of tests/probes/token_probe.c\n");
	return 2;
}

static void
print_flags(unsigned f)
{
	printf("flags=%s%s%s%s\n", f & KH_P11_PIN_COUNT_LOW ? "count_low," : "",
	       f & KH_P11_PIN_FINAL_TRY ? "final_try," : "",
	       f & KH_P11_PIN_LOCKED ? "locked," : "",
	       f & KH_P11_PIN_TO_BE_CHANGED ? "to_be_changed," : "");
}

static int
cmd_find(const char *label)
{
	kh_error err = { 0 };
	struct kh_p11_token_info info;
	struct kh_p11 *p = kh_p11_open(module, &probe_env, &err);

	if (p == NULL || kh_p11_find_token(p, label, &info, &err) != 0) {
		kh_p11_close(p);
		return die(&err);
	}
	printf("label=%s\nserial=%s\n", info.label, info.serial);
	print_flags(info.pin_flags);
	kh_p11_token_info_clear(&info);
	kh_p11_close(p);
	return 0;
}

static int
cmd_login(const char *label, const char *pin)
{
	kh_error err = { 0 };
	struct kh_p11 *p = kh_p11_open(module, &probe_env, &err);
	int rc;

	rc = p == NULL || kh_p11_find_token(p, label, NULL, &err) != 0 ||
	     kh_p11_login(p, pin, &err) != 0;
	kh_p11_close(p);
	if (rc)
		return die(&err);
	printf("login ok\n");
	return 0;
}

/* The PAM module's path: token, certificate, (validation), login, proof. */
/* trust.domains for the email/upn rules: $KH_PROBE_DOMAINS, comma-separated. */
static const char *probe_domains[16];
static size_t probe_ndomains;

/* A trust.map word to its rule, by the policy's own table (kh_map_words);
 * "cn" and anything unknown give the CN rule. */
static enum kh_map_rule
map_rule(const char *map)
{
	const struct kh_enum_word *w;

	for (w = kh_map_words; w->word != NULL; w++)
		if (strcmp(w->word, map) == 0)
			return (enum kh_map_rule)w->value;
	return KH_MAP_CN;
}

static void
domains_from_env(void)
{
	static char buf[1024];
	const char *env = getenv("KH_PROBE_DOMAINS");
	char *save = NULL, *d;

	if (env == NULL || probe_ndomains > 0)
		return;
	snprintf(buf, sizeof(buf), "%s", env);
	for (d = strtok_r(buf, ",", &save); d != NULL && probe_ndomains < 16;
	     d = strtok_r(NULL, ",", &save))
		probe_domains[probe_ndomains++] = d;
}

static int
user_flow(const char *label, const char *pin, const char *key_label, const char *key_id,
	  const char *ca_file, const char *crl_file, const char *map, bool quiet)
{
	kh_error err = { 0 };
	struct kh_p11_token_info info = { 0 };
	struct kh_p11 *p = NULL;
	X509 *cert = NULL;
	EVP_PKEY *key = NULL;
	char *name = NULL, *uri = NULL;
	enum kh_map_rule rule = KH_MAP_CN;
	int rc = 1;

	if (map != NULL)
		rule = map_rule(map);
	tick();
	p = kh_p11_open(module, &probe_env, &err);
	if (p == NULL)
		goto out;
	tock("load");
	if (kh_p11_find_token(p, label, &info, &err) != 0 ||
	    kh_p11_find_cert(p, key_label, key_id, &cert, &err) != 0)
		goto out;
	tock("find");
	if (ca_file != NULL && (kh_x509_validate(cert, ca_file, crl_file, 0, &err) != 0 ||
				kh_x509_map_user(cert, rule, probe_domains, probe_ndomains,
						 &name, &err) != 0))
		goto out;
	tock("validate");
	if (kh_p11_login(p, pin, &err) != 0)
		goto out;
	tock("login");
	if (kh_p11_find_key(p, key_label, key_id, &key, &err) != 0 ||
	    kh_p11_prove_possession(key, cert, &err) != 0)
		goto out;
	tock("sign");
	uri = kh_p11_uri_format(info.label, key_label, key_id, info.serial, &err);
	if (uri == NULL)
		goto out;
	if (!quiet) {
		printf("pop ok\nkey=%s\nuri=%s\n",
		       EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA ? "rsa" : "ec", uri);
		if (name != NULL)
			printf("user=%s\n", name);
	}
	rc = 0;
out:
	EVP_PKEY_free(key);
	X509_free(cert);
	kh_p11_close(p);
	kh_p11_token_info_clear(&info);
	free(name);
	free(uri);
	return rc ? die(&err) : 0;
}

/* OpenSSL's verdict on sig over digest, in the scheme o. */
static bool
scheme_verifies(EVP_PKEY *pub, const struct kh_sign_opts *o, const unsigned char *digest,
		size_t dlen, const unsigned char *sig, size_t slen)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(pub, NULL);
	bool ok = ctx != NULL && EVP_PKEY_verify_init(ctx) == 1 &&
		  EVP_PKEY_CTX_set_signature_md(ctx, kh_go_hash_md(o->hash)) == 1;

	if (ok && o->scheme == KH_SIGN_PSS)
		ok = EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PSS_PADDING) == 1 &&
		     EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, RSA_PSS_SALTLEN_AUTO) == 1;
	ok = ok && EVP_PKEY_verify(ctx, sig, slen, digest, dlen) == 1;
	EVP_PKEY_CTX_free(ctx);
	return ok;
}

static int
cmd_schemes(const char *label, const char *pin, const char *key_label)
{
	static const int hashes[] = { KH_GO_SHA256, KH_GO_SHA384, KH_GO_SHA512 };
	static const int salts[] = { KH_PSS_SALT_EQUALS_HASH, KH_PSS_SALT_AUTO, 20 };
	kh_error err = { 0 };
	struct kh_p11 *p = kh_p11_open(module, &probe_env, &err);
	EVP_PKEY *key = NULL;
	X509 *cert = NULL;
	unsigned char digest[KH_DIGEST_MAX], *sig = NULL;
	size_t slen = 0, i, j, good = 0, tried = 0;
	int rc = 1;

	if (p == NULL || kh_p11_find_token(p, label, NULL, &err) != 0 ||
	    kh_p11_find_cert(p, key_label, "", &cert, &err) != 0 ||
	    kh_p11_login(p, pin, &err) != 0 || kh_p11_find_key(p, key_label, "", &key, &err) != 0)
		goto out;
	for (i = 0; i < sizeof(hashes) / sizeof(hashes[0]); i++) {
		size_t dlen = kh_go_hash_size(hashes[i]);
		bool rsa = EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA;

		for (j = 0; j < (rsa ? 4u : 1u); j++) {
			struct kh_sign_opts o = {
				.scheme = j == 0 ? KH_SIGN_HASH : KH_SIGN_PSS,
				.hash = hashes[i],
				.salt_len = j == 0 ? 0 : salts[j - 1],
			};

			if (RAND_bytes(digest, (int)dlen) != 1)
				goto out;
			tried++;
			if (kh_sign_digest(key, &o, digest, dlen, &sig, &slen, &err) != 0)
				goto out;
			if (scheme_verifies(X509_get0_pubkey(cert), &o, digest, dlen, sig, slen))
				good++;
			else
				printf("not verified: %s %s salt %d\n", j == 0 ? "hash" : "pss",
				       kh_go_hash_name(hashes[i]), o.salt_len);
			free(sig);
			sig = NULL;
		}
	}
	printf("schemes %s %zu of %zu verified\n",
	       EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA ? "rsa" : "ec", good, tried);
	rc = good == tried ? 0 : 1;
	if (rc != 0)
		kh_fail(&err, KH_ERR_AUTH, "a signature did not verify");
out:
	EVP_PKEY_free(key);
	X509_free(cert);
	kh_p11_close(p);
	return rc ? die(&err) : 0;
}

static int
cmd_validate(const char *cert_file, const char *ca_file, const char *crl_file)
{
	kh_error err = { 0 };
	X509 *cert = kh_x509_load_cert(cert_file, &err);
	int rc;

	if (cert == NULL)
		return die(&err);
	rc = kh_x509_validate(cert, ca_file, crl_file, 0, &err);
	X509_free(cert);
	if (rc != 0)
		return die(&err);
	printf("valid\n");
	return 0;
}

static int
cmd_map(const char *cert_file, const char *rule)
{
	kh_error err = { 0 };
	X509 *cert = kh_x509_load_cert(cert_file, &err);
	enum kh_map_rule r = KH_MAP_CN;
	char *name = NULL;
	int rc;

	if (cert == NULL)
		return die(&err);
	r = map_rule(rule);
	rc = kh_x509_map_user(cert, r, probe_domains, probe_ndomains, &name, &err);
	X509_free(cert);
	if (rc != 0)
		return die(&err);
	printf("%s\n", name);
	free(name);
	return 0;
}

static enum kh_key_type
key_type(const char *s)
{
	if (strcmp(s, "ec-p384") == 0)
		return KH_KEY_EC_P384;
	if (strcmp(s, "rsa-2048") == 0)
		return KH_KEY_RSA_2048;
	if (strcmp(s, "rsa-3072") == 0)
		return KH_KEY_RSA_3072;
	return KH_KEY_EC_P256;
}

static int
write_file(const char *path, const char *data, kh_error *err)
{
	FILE *f = fopen(path, "w");

	if (f == NULL || fputs(data, f) < 0) {
		if (f != NULL)
			fclose(f);
		return kh_fail(err, KH_ERR_INTERNAL, "cannot write %s", path);
	}
	return fclose(f) == 0 ? 0 : kh_fail(err, KH_ERR_INTERNAL, "cannot write %s", path);
}

/* Split "a,b,c" into a vector (modified in place). */
static size_t
split_groups(char *s, const char **v, size_t max)
{
	size_t n = 0;
	char *save = NULL, *tok;

	for (tok = strtok_r(s, ",", &save); tok != NULL && n < max; tok = strtok_r(NULL, ",", &save))
		v[n++] = tok;
	return n;
}

static int
cmd_mint(char **a)
{
	kh_error err = { 0 };
	struct kh_p11 *p = NULL;
	EVP_PKEY *issuer_key = NULL, *session = NULL;
	STACK_OF(X509) *chain = NULL;
	char *pin = NULL, *chain_pem = NULL, *cert_pem = NULL, *key_pem = NULL, *all = NULL;
	char *groups_buf = strdup(a[4]);
	const char *groups[32];
	struct kh_mint_request req = { 0 };
	size_t key_len = 0;
	time_t issuer_end;
	int rc = 1;

	tick();
	if (groups_buf == NULL ||
	    kh_p11_read_pin_file(a[1], &pin, &err) != 0 ||
	    kh_p11_open_uri_key(module, &probe_env, a[0], pin, NULL, &p, &issuer_key, &err) != 0)
		goto out;
	tock("issuer-open");
	if (kh_x509_load_chain(a[2], issuer_key, &chain, &chain_pem, &err) != 0)
		goto out;
	session = kh_x509_keygen(key_type(a[6]), &err);
	if (session == NULL)
		goto out;
	tock("keygen");
	req.issuer_cert = sk_X509_value(chain, 0);
	req.issuer_key = issuer_key;
	req.session_key = session;
	req.username = a[3];
	req.groups = groups;
	req.ngroups = split_groups(groups_buf, groups, sizeof(groups) / sizeof(groups[0]));
	req.not_after = time(NULL) + atol(a[5]);
	if (kh_x509_not_after(req.issuer_cert, &issuer_end, &err) != 0)
		goto out;
	if (req.not_after > issuer_end)
		req.not_after = issuer_end;
	if (kh_x509_mint(&req, &cert_pem, &err) != 0)
		goto out;
	tock("mint");
	if (kh_x509_key_to_pem(session, &key_pem, &key_len, &err) != 0)
		goto out;
	all = malloc(strlen(cert_pem) + strlen(chain_pem) + 1);
	if (all == NULL) {
		kh_fail(&err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	strcpy(all, cert_pem);
	strcat(all, chain_pem);
	if (write_file(a[7], all, &err) != 0 || write_file(a[8], key_pem, &err) != 0)
		goto out;
	printf("minted\n");
	rc = 0;
out:
	EVP_PKEY_free(session);
	EVP_PKEY_free(issuer_key);
	kh_p11_close(p);
	sk_X509_pop_free(chain, X509_free);
	kh_secure_strfree(pin);
	kh_secure_free(key_pem, key_len);
	free(groups_buf);
	free(chain_pem);
	free(cert_pem);
	free(all);
	return rc ? die(&err) : 0;
}

static int
cmd_parse_uri(const char *uri)
{
	kh_error err = { 0 };
	struct kh_p11_uri u;
	size_t i;

	if (kh_p11_uri_parse(uri, &u, &err) != 0)
		return die(&err);
	printf("token=%s\nobject=%s\nserial=%s\nid=", u.token, u.object ? u.object : "",
	       u.serial ? u.serial : "");
	for (i = 0; i < u.id_len; i++)
		printf("%02x", u.id[i]);
	printf("\n");
	kh_p11_uri_clear(&u);
	return 0;
}

static int
cmd_uri(char **a)
{
	kh_error err = { 0 };
	char *s = kh_p11_uri_format(a[0], a[1], a[2], a[3], &err);

	if (s == NULL)
		return die(&err);
	printf("%s\n", s);
	free(s);
	return 0;
}

static int
cmd_pinfile(const char *path)
{
	kh_error err = { 0 };
	char *pin = NULL;

	if (kh_p11_read_pin_file(path, &pin, &err) != 0)
		return die(&err);
	printf("pin length %zu\n", strlen(pin));
	kh_secure_strfree(pin);
	return 0;
}

static int
cmd_choose(char **a, int n)
{
	kh_error err = { 0 };
	struct kh_p11 *p = kh_p11_open(module, &probe_env, &err);
	struct kh_token_choice c = { 0 };
	struct kh_p11_uri uri = { 0 };
	struct kh_p11_key_info ki;
	const struct kh_p11_cert *cert;
	unsigned char *id = NULL;
	char hex[2 * KH_P11_ID_MAX + 1];
	struct kh_token_rules r = {
		.uri = &uri, .ca_file = a[1], .map = map_rule(a[2]),
		.domains = probe_domains, .ndomains = probe_ndomains,
		.key_label = n > 3 ? a[3] : NULL,
	};
	int rc = 1;

	if (p == NULL)
		return die(&err);
	if ((n > 4 && a[4][0] != '\0' && kh_p11_hex_decode(a[4], &id, &r.key_id_len, &err) != 0) ||
	    (n > 5 && kh_p11_uri_parse_token(a[5], &uri, &err) != 0))
		goto out;
	r.key_id = id;
	tick();
	rc = kh_token_choose(p, &r, a[0], &c, &err);
	tock("choose");
	printf("outcome=%s\ntokens=%zu\n", kh_token_outcome_word(c.outcome), c.ntokens);
	if (rc != 0)
		goto out;
	cert = kh_token_chosen_cert(&c);
	printf("token=%s\nserial=%s\nslot=%lu\ncert_id=%s\n", c.tokens[c.token].label,
	       c.tokens[c.token].serial, c.tokens[c.token].slot_id,
	       kh_p11_hex_encode(cert->id, cert->id_len, hex, sizeof(hex)));
	print_flags(c.tokens[c.token].pin_flags);
	if (cert->id_len > 0 && kh_p11_key_info(p, &c.tokens[c.token], cert->id, cert->id_len,
						&ki, &err) == 0)
		printf("key_visible=%d\nalways_auth=%d\n", ki.visible, ki.always_auth);
	rc = 0;
out:
	kh_token_choice_free(&c);
	kh_p11_uri_clear(&uri);
	free(id);
	kh_p11_close(p);
	return rc ? die(&err) : 0;
}

static int
print_labels(struct kh_p11 *p, kh_error *err)
{
	struct kh_p11_token *t = NULL;
	size_t n = 0, i;

	if (kh_p11_list_tokens(p, &t, &n, err) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (t[i].initialized)
			printf("label=%s\n", t[i].label);
	kh_p11_tokens_free(t, n);
	return 0;
}

/* Is what pkcs11.env set at C_Initialize enough for the module's whole
 * life?  A card removed and inserted again after the variables were put
 * back must still be seen. */
static int
cmd_reinsert(const char *waitfile)
{
	kh_error err = { 0 };
	struct kh_p11 *p = kh_p11_open(module, &probe_env, &err);
	char ready[4096];
	struct stat st;
	int i;

	if (p == NULL)
		return die(&err);
	for (size_t k = 0; k < probe_env.n; k++)
		printf("env %s=%s\n", probe_env.names[k],
		       getenv(probe_env.names[k]) != NULL ? "set" : "unset");
	if (print_labels(p, &err) != 0)
		goto fail;
	fflush(stdout);
	(void)snprintf(ready, sizeof(ready), "%s.ready", waitfile);
	if (write_file(ready, "", &err) != 0)
		goto fail;
	for (i = 0; i < 1200 && stat(waitfile, &st) != 0; i++)
		usleep(50000);
	printf("again\n");
	if (print_labels(p, &err) != 0)
		goto fail;
	kh_p11_close(p);
	return 0;
fail:
	kh_p11_close(p);
	return die(&err);
}

int
main(int argc, char **argv)
{
	char **a;
	int n;

	for (;;) {
		if (argc > 2 && strcmp(argv[1], "-m") == 0) {
			module = argv[2];
		} else if (argc > 2 && strcmp(argv[1], "-e") == 0 && probe_env.n < KH_ENV_MAX &&
			   strchr(argv[2], '=') != NULL) {
			char *eq = strchr(argv[2], '=');

			*eq = '\0';
			probe_env_names[probe_env.n] = argv[2];
			probe_env_values[probe_env.n++] = eq + 1;
		} else {
			break;
		}
		argv += 2;
		argc -= 2;
	}
	if (argc < 2)
		return usage();
	a = argv + 2;
	n = argc - 2;
	domains_from_env();
	if (strcmp(argv[1], "find") == 0 && n == 1)
		return cmd_find(a[0]);
	if (strcmp(argv[1], "login") == 0 && n == 2)
		return cmd_login(a[0], a[1]);
	if (strcmp(argv[1], "pop") == 0 && (n == 3 || n == 4))
		return user_flow(a[0], a[1], a[2], n == 4 ? a[3] : NULL, NULL, NULL, NULL, false);
	if (strcmp(argv[1], "user") == 0 && n == 7)
		return user_flow(a[0], a[1], a[2], a[3], a[4], a[5], a[6], false);
	if (strcmp(argv[1], "validate") == 0 && (n == 2 || n == 3))
		return cmd_validate(a[0], a[1], n == 3 ? a[2] : NULL);
	if (strcmp(argv[1], "map") == 0 && n >= 2) {
		if (n > 2)
			probe_ndomains = 0;   /* the arguments, not $KH_PROBE_DOMAINS */
		for (int i = 2; i < n && probe_ndomains < 16; i++)
			probe_domains[probe_ndomains++] = a[i];
		return cmd_map(a[0], a[1]);
	}
	if (strcmp(argv[1], "schemes") == 0 && n == 3)
		return cmd_schemes(a[0], a[1], a[2]);
	if (strcmp(argv[1], "mint") == 0 && n == 9)
		return cmd_mint(a);
	if (strcmp(argv[1], "loop") == 0 && n == 4) {
		long i, count = atol(a[0]);

		for (i = 0; i < count; i++)
			if (user_flow(a[1], a[2], a[3], NULL, NULL, NULL, NULL, true) != 0)
				return 1;
		printf("loop ok %ld\n", count);
		return 0;
	}
	if (strcmp(argv[1], "uri") == 0 && n == 4)
		return cmd_uri(a);
	if (strcmp(argv[1], "parse-uri") == 0 && n == 1)
		return cmd_parse_uri(a[0]);
	if (strcmp(argv[1], "pinfile") == 0 && n == 1)
		return cmd_pinfile(a[0]);
	if (strcmp(argv[1], "choose") == 0 && n >= 3 && n <= 6)
		return cmd_choose(a, n);
	if (strcmp(argv[1], "reinsert") == 0 && n == 1)
		return cmd_reinsert(a[0]);
	return usage();
}
