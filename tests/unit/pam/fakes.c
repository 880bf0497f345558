/*
 * fakes — see fakes.h.  Each __wrap_X stands in for X at link time
 * (ld --wrap); __real_X is the real one.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "cache/kh_cache.h"
#include "cache/kh_record.h"
#include "conf/kh_policy.h"
#include "lib/kh_pkcs11.h"
#include "lib/kh_rundir.h"
#include "lib/kh_x509.h"
#include "pam/kh_pam.h"
#include "tests/fakepam/fakepam.h"
#include "tests/unit/pam/fakes.h"

struct fake_token fake_token;
struct fake_others fake_others;
struct fake_cache fake_cache;

static char test_dir[64];
static char config_option[sizeof(test_dir) + 32];

const char fake_base_policy[] =
	"version = 1;\n"
	"pkcs11 = { module = \"/nonexistent/module.so\"; };\n"
	"token = { label = \"%u\"; key_label = \"kube\"; key_id = \"\"; };\n"
	"trust = { ca_file = \"/nonexistent/ca.pem\"; crl_file = \"\"; map = \"cn\"; };\n"
	"identity = { username = \"%u\"; groups = [ \"cert:O\" ]; };\n"
	"issuer = { key = \"pkcs11:token=host;object=issuer\";\n"
	"  cert_file = \"/nonexistent/issuer.pem\"; pin_file = \"/nonexistent/issuer.pin\";\n"
	"  key_type = \"ec-p256\"; };\n"
	"session = { ttl = \"8h\"; scope = \"user\"; revoke_on_logout = true;\n"
	"  cache_pin = false; };\n"
	"signer = { key = \"session\"; };\n"
	"polkit = { mode = \"off\"; };\n";

/* ---- a certificate ------------------------------------------------------- */

X509 *
fake_cert_new(EVP_PKEY **keyp, ...)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *cert = X509_new();
	X509_NAME *name = X509_NAME_new();
	const char *field;
	va_list ap;

	assert_non_null(key);
	assert_non_null(cert);
	assert_non_null(name);
	va_start(ap, keyp);
	while ((field = va_arg(ap, const char *)) != NULL) {
		const char *value = va_arg(ap, const char *);

		assert_int_equal(X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
							    (const unsigned char *)value,
							    -1, -1, 0), 1);
	}
	va_end(ap);
	assert_int_equal(X509_set_version(cert, X509_VERSION_3), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(cert), 1), 1);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(cert), -60));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600));
	assert_int_equal(X509_set_subject_name(cert, name), 1);
	assert_int_equal(X509_set_issuer_name(cert, name), 1);
	assert_int_equal(X509_set_pubkey(cert, key), 1);
	assert_true(X509_sign(cert, key, EVP_sha256()) > 0);
	X509_NAME_free(name);
	if (keyp != NULL)
		*keyp = key;
	else
		EVP_PKEY_free(key);
	return cert;
}

/* ---- the user's token ---------------------------------------------------- */

struct kh_p11 *__wrap_kh_pam_open_token_module(pam_handle_t *pamh,
					       const struct kh_pam_opts *opts,
					       const struct kh_policy *policy,
					       const char *user, uid_t uid,
					       char **forward_path, kh_error *err);
int __wrap_kh_p11_list_tokens(struct kh_p11 *p, struct kh_p11_token **tokens, size_t *n,
			      kh_error *err);
int __wrap_kh_p11_use_token(struct kh_p11 *p, const struct kh_p11_token *t, kh_error *err);
int __wrap_kh_p11_refresh_token(struct kh_p11 *p, struct kh_p11_token *t, kh_error *err);
int __wrap_kh_x509_validate(X509 *cert, const char *ca_file, const char *crl_file,
			    time_t now, kh_error *err);
int __wrap_kh_p11_login(struct kh_p11 *p, const char *pin, kh_error *err);
int __wrap_kh_p11_find_key_by_id(struct kh_p11 *p, const unsigned char *id, size_t id_len,
				 const char *key_label, EVP_PKEY **key, kh_error *err);
int __wrap_kh_p11_find_key(struct kh_p11 *p, const char *key_label, const char *key_id,
			   EVP_PKEY **key, kh_error *err);
int __wrap_kh_p11_find_cert_key(struct kh_p11 *p, const struct kh_p11_cert *cert,
				const char *key_label, const char *token_label, EVP_PKEY **key,
				kh_error *err);
void __wrap_kh_p11_close(struct kh_p11 *p);

/* The one module the fake opens: only its address is ever used. */
static char fake_module;

struct kh_p11 *
__wrap_kh_pam_open_token_module(pam_handle_t *pamh, const struct kh_pam_opts *opts,
				const struct kh_policy *policy, const char *user, uid_t uid,
				char **forward_path, kh_error *err)
{
	*forward_path = NULL;
	fake_token.opens++;
	return (struct kh_p11 *)(void *)&fake_module;
}

static void
fake_describe(struct kh_p11_token *t, size_t index, const char *label, const char *serial,
	      unsigned flags, X509 *cert)
{
	t->index = index;
	t->slot_id = index;
	t->present = t->initialized = true;
	assert_non_null(t->slot_description = strdup("fake reader"));
	assert_non_null(t->slot_manufacturer = strdup("fake"));
	assert_non_null(t->label = strdup(label));
	assert_non_null(t->manufacturer = strdup("fake"));
	assert_non_null(t->model = strdup("fake"));
	assert_non_null(t->serial = strdup(serial));
	t->pin_flags = flags;
	assert_non_null(t->certs = calloc(1, sizeof(*t->certs)));
	assert_int_equal(X509_up_ref(cert), 1);
	t->certs[0].x509 = cert;
	assert_non_null(t->certs[0].label = strdup("kube"));
	t->certs[0].id[0] = 0x01;
	t->certs[0].id_len = 1;
	t->ncerts = 1;
	t->certs_read = true;
}

/* The user's token (fake_token), then the others (fake_others). */
int
__wrap_kh_p11_list_tokens(struct kh_p11 *p, struct kh_p11_token **tokens, size_t *n,
			  kh_error *err)
{
	size_t count = (fake_token.label != NULL) + fake_others.n, i = 0;
	struct kh_p11_token *t;

	assert_ptr_equal(p, &fake_module);
	fake_token.lists++;
	*tokens = NULL;
	*n = 0;
	if (count == 0)
		return 0;
	assert_non_null(t = calloc(count, sizeof(*t)));
	if (fake_token.label != NULL) {
		fake_describe(&t[i], i, fake_token.label, fake_token.serial,
			      fake_token.pin_flags, fake_token.cert);
		i++;
	}
	for (size_t j = 0; j < fake_others.n; j++, i++)
		fake_describe(&t[i], i, fake_others.t[j].label, fake_others.t[j].serial, 0,
			      fake_others.t[j].cert);
	*tokens = t;
	*n = count;
	return 0;
}

int
__wrap_kh_p11_use_token(struct kh_p11 *p, const struct kh_p11_token *t, kh_error *err)
{
	assert_ptr_equal(p, &fake_module);
	fake_token.used = strcmp(t->label, fake_token.label != NULL ? fake_token.label : "") == 0;
	if (!fake_token.used)
		fail_msg("a token that is not the user's was selected for login: '%s'", t->label);
	return 0;
}

/* The flags as the token reports them after a wrong PIN. */
int
__wrap_kh_p11_refresh_token(struct kh_p11 *p, struct kh_p11_token *t, kh_error *err)
{
	assert_ptr_equal(p, &fake_module);
	t->pin_flags = fake_token.pin_flags;
	return 0;
}

int
__wrap_kh_x509_validate(X509 *cert, const char *ca_file, const char *crl_file,
			time_t now, kh_error *err)
{
	if (fake_token.cert_rejected)
		return kh_fail(err, KH_ERR_REFUSED, "certificate has expired");
	return 0;
}

/* Like kh_p11_login: a locked PIN is not tried; a wrong one is. */
int
__wrap_kh_p11_login(struct kh_p11 *p, const char *pin, kh_error *err)
{
	assert_non_null(pin);
	assert_true(fake_token.used);
	if (fake_token.pin_flags & KH_P11_PIN_LOCKED)
		return kh_fail(err, KH_ERR_LOCKED, "token '%s' is locked", fake_token.label);
	assert_true(fake_token.ntried < FAKE_TRIES_MAX);
	assert_non_null(fake_token.tried[fake_token.ntried++] = strdup(pin));
	if (strcmp(pin, fake_token.pin) == 0)
		return 0;
	fake_token.pin_flags = fake_token.flags_after_wrong;
	return kh_fail(err, KH_ERR_AUTH, "wrong PIN for token '%s'", fake_token.label);
}

int
__wrap_kh_p11_find_key_by_id(struct kh_p11 *p, const unsigned char *id, size_t id_len,
			     const char *key_label, EVP_PKEY **key, kh_error *err)
{
	assert_int_equal(id_len, 1);
	assert_int_equal(id[0], 0x01);
	assert_int_equal(EVP_PKEY_up_ref(fake_token.key), 1);
	*key = fake_token.key;
	return 0;
}

int
__wrap_kh_p11_find_key(struct kh_p11 *p, const char *key_label, const char *key_id,
		       EVP_PKEY **key, kh_error *err)
{
	fail_msg("the key is found by its certificate's CKA_ID, not by label");
	return -1;
}

/* The real one's rule (lib/kh_pkcs11.c), over the fakes above: --wrap
 * cannot reach its calls inside kh_pkcs11.o. */
int
__wrap_kh_p11_find_cert_key(struct kh_p11 *p, const struct kh_p11_cert *cert,
			    const char *key_label, const char *token_label, EVP_PKEY **key,
			    kh_error *err)
{
	(void)token_label;
	if (cert->id_len > 0)
		return __wrap_kh_p11_find_key_by_id(p, cert->id, cert->id_len, key_label, key, err);
	return __wrap_kh_p11_find_key(p, key_label, "", key, err);
}

void
__wrap_kh_p11_close(struct kh_p11 *p)
{
	if (p != NULL)
		fake_token.closes++;
}

/* The fake token sits in a card reader: auth always closes its module
 * (keeping it for the issuer is tests/integration/pam/pam_module.sh's,
 * on SoftHSM). */
bool __wrap_kh_p11_token_removable(const struct kh_p11 *p);

bool
__wrap_kh_p11_token_removable(const struct kh_p11 *p)
{
	(void)p;
	return true;
}

/* ---- the keyring cache --------------------------------------------------- */

int __wrap_kh_cache_list(uid_t uid, struct kh_cache_entry **out, size_t *n, kh_error *err);
int __wrap_kh_cache_login(struct kh_record *rec, const char *pin, enum kh_login_kind kind,
			  int32_t *serial, kh_error *err);
int __wrap_kh_cache_login_count(uid_t uid, const char *user, kh_error *err);
int __wrap_kh_cache_logout(uid_t uid, const char *user, const int32_t *serials,
			   size_t nserials, bool revoke_on_logout, kh_cache_ending_fn ending,
			   void *ctx, kh_error *err);

/* Rows as kh_cache_list makes them, so the real kh_cache_entries_free
 * frees them. */
int
__wrap_kh_cache_list(uid_t uid, struct kh_cache_entry **out, size_t *n, kh_error *err)
{
	struct kh_cache_entry *e;

	fake_cache.lists++;
	if (fake_cache.list_fails)
		return kh_fail(err, KH_ERR_UNSUPPORTED, "the kernel refuses keyring calls");
	assert_non_null(e = calloc(fake_cache.n + 1, sizeof(*e)));
	for (size_t i = 0; i < fake_cache.n; i++) {
		const struct fake_entry *f = &fake_cache.entries[i];

		e[i].uid = uid;
		e[i].serial = (int32_t)(100 + i);
		e[i].state = f->state;
		if (f->no_record)
			continue;
		assert_non_null(e[i].rec = calloc(1, sizeof(*e[i].rec)));
		e[i].rec->uid = uid;
		assert_non_null(e[i].rec->user = strdup(f->user));
		assert_non_null(e[i].rec->token_cert_pem = strdup(f->token_cert_pem));
	}
	*out = e;
	*n = fake_cache.n;
	return 0;
}

int
__wrap_kh_cache_login(struct kh_record *rec, const char *pin, enum kh_login_kind kind,
		      int32_t *serial, kh_error *err)
{
	fail_msg("a unit test reached kh_cache_login: nothing may be minted here");
	return -1;
}

int
__wrap_kh_cache_login_count(uid_t uid, const char *user, kh_error *err)
{
	fake_cache.counts++;
	fake_cache.counted_uid = uid;
	(void)snprintf(fake_cache.counted_user, sizeof(fake_cache.counted_user), "%s", user);
	return 0;
}

int
__wrap_kh_cache_logout(uid_t uid, const char *user, const int32_t *serials,
		       size_t nserials, bool revoke_on_logout, kh_cache_ending_fn ending,
		       void *ctx, kh_error *err)
{
	fake_cache.logouts++;
	/* As the real one: the hook before the keyring step, whatever it does. */
	if ((fake_cache.logout_result == 1 || fake_cache.logout_ends) && ending != NULL)
		ending(ctx);
	fake_cache.logout_uid = uid;
	(void)snprintf(fake_cache.logout_user, sizeof(fake_cache.logout_user), "%s", user);
	if (fake_cache.logout_result < 0)
		return kh_fail(err, KH_ERR_INTERNAL, "the index is damaged");
	return fake_cache.logout_result;
}

/* ---- the runtime directory and the policy -------------------------------- */

int __wrap_kh_rundir_sub(const char *sub, char *buf, size_t size, kh_error *err);
int __wrap_kh_rundir_file(const char *sub, const char *name, char *buf, size_t size,
			  kh_error *err);
struct kh_policy *__wrap_kh_policy_load(const char *path,
					const struct kh_policy_load_opts *opts,
					kh_error *err);
struct kh_policy *__real_kh_policy_load(const char *path,
					const struct kh_policy_load_opts *opts,
					kh_error *err);

const char *
fake_rundir(void)
{
	return test_dir;
}

int
__wrap_kh_rundir_sub(const char *sub, char *buf, size_t size, kh_error *err)
{
	int n = snprintf(buf, size, "%s/%s", test_dir, sub);

	assert_true(n > 0 && (size_t)n < size);
	if (mkdir(buf, 0700) != 0 && errno != EEXIST)
		return kh_fail(err, KH_ERR_INTERNAL, "mkdir %s: %s", buf, strerror(errno));
	return 0;
}

int
__wrap_kh_rundir_file(const char *sub, const char *name, char *buf, size_t size,
		      kh_error *err)
{
	char dir[sizeof(test_dir) + 64];
	int n;

	if (__wrap_kh_rundir_sub(sub, dir, sizeof(dir), err) != 0)
		return -1;
	n = snprintf(buf, size, "%s/%s", dir, name);
	assert_true(n > 0 && (size_t)n < size);
	return 0;
}

/* The module trusts only root's files; the test's are its own. */
struct kh_policy *
__wrap_kh_policy_load(const char *path, const struct kh_policy_load_opts *opts,
		      kh_error *err)
{
	struct kh_policy_load_opts o = *opts;

	assert_int_equal(opts->trusted_uid, 0);
	o.trusted_uid = geteuid();
	o.skip_file_checks = true;
	return __real_kh_policy_load(path, &o, err);
}

const char *
fake_policy_option(const char *text)
{
	char path[sizeof(test_dir) + 16];
	FILE *f;

	(void)snprintf(path, sizeof(path), "%s/kubehsm.conf", test_dir);
	assert_non_null(f = fopen(path, "w"));
	assert_true(fputs(text != NULL ? text : fake_base_policy, f) >= 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0600), 0);
	(void)snprintf(config_option, sizeof(config_option), "config=%s", path);
	return config_option;
}

/* ---- small helpers ------------------------------------------------------- */

struct kh_pam_login *
fake_login(const char *pem)
{
	struct kh_pam_login *l = calloc(1, sizeof(*l));

	assert_non_null(l);
	l->uid = FAKE_UID;
	assert_non_null(l->user = strdup(FAKE_USER));
	assert_non_null(l->token_label = strdup(FAKE_USER));
	assert_non_null(l->token_serial = strdup("0001"));
	assert_non_null(l->token_uri = strdup("pkcs11:token=alice;object=kube"));
	assert_non_null(l->token_cert_pem = strdup(pem));
	assert_non_null(l->kube_user = strdup(FAKE_USER));
	l->token_not_after = 4102444800;        /* 2100 */
	assert_non_null(l->groups = calloc(2, sizeof(char *)));
	assert_non_null(l->groups[0] = strdup("k8s-dev"));
	assert_non_null(l->groups[1] = strdup("team-a"));
	l->ngroups = 2;
	return l;
}

char *
fake_asprintf(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	assert_true(n >= 0);
	return s;
}

/* ---- fixtures ------------------------------------------------------------ */

/* The test directory holds files and one level of subdirectories. */
static void
remove_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char sub[512];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		(void)snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		if (unlink(sub) != 0 && errno == EISDIR)
			remove_tree(sub);
	}
	closedir(d);
	(void)rmdir(path);
}

int
fakes_setup(void **state)
{
	const char *tmp = getenv("TMPDIR");

	fakepam_reset();
	memset(&fake_cache, 0, sizeof(fake_cache));
	memset(&fake_token, 0, sizeof(fake_token));
	memset(&fake_others, 0, sizeof(fake_others));
	fake_token.label = FAKE_USER;
	fake_token.serial = "0001";
	fake_token.pin = FAKE_PIN;
	fake_token.cert = fake_cert_new(&fake_token.key, "CN", FAKE_USER, NULL);
	fakepam_secret(FAKE_PIN);
	fakepam_nss_user(FAKE_USER, FAKE_UID, FAKE_UID, NULL);
	fakepam_nss_group(FAKE_USER, FAKE_UID);
	(void)snprintf(test_dir, sizeof(test_dir), "%s/khpam.XXXXXX",
		       tmp != NULL && tmp[0] == '/' && strlen(tmp) < 40 ? tmp : "/tmp");
	assert_non_null(mkdtemp(test_dir));
	return 0;
}

int
fakes_teardown(void **state)
{
	for (size_t i = 0; i < fake_token.ntried; i++)
		free(fake_token.tried[i]);
	X509_free(fake_token.cert);
	EVP_PKEY_free(fake_token.key);
	for (size_t i = 0; i < fake_others.n; i++)
		X509_free(fake_others.t[i].cert);
	remove_tree(test_dir);
	fakepam_reset();
	return 0;
}
