/*
 * Unit tests for the policy loader (conf/kh_policy.c).
 *
 * Every test gets a private directory holding stand-ins for the files a
 * policy names (module, CA, issuer certificate, a 0600 PIN file), owned by
 * whoever runs the test; the loader is told to trust that uid.  Bad
 * configurations are written as one valid base policy with one line
 * replaced, so each case states exactly which line the error must name.
 */
#include "config.h"

#include <errno.h>
#include <ftw.h>
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

#include "conf/kh_policy.h"

#ifndef KH_TEST_SRCDIR
#define KH_TEST_SRCDIR "."
#endif

#define PIN_SECRET "PIN-CONTENT-4711-never-printed"

struct fixture {
	char dir[64];
	char sub[96];   /* dir/etc: where config files under test live */
};

/* The valid base policy; @D@ becomes the fixture directory. */
static const char *const base_lines[] = {
	/*  1 */ "version = 1;",
	/*  2 */ "pkcs11 = { module = \"@D@/module.so\"; };",
	/*  3 */ "token = { label = \"%u\"; key_label = \"kube\"; key_id = \"\"; };",
	/*  4 */ "trust = { ca_file = \"@D@/ca.pem\"; crl_file = \"\"; map = \"cn\"; };",
	/*  5 */ "identity = { username = \"%u\"; groups = [ \"cert:O\", \"unix:k8s-*\" ]; };",
	/*  6 */ "issuer = { key = \"pkcs11:token=host;object=issuer\";",
	/*  7 */ "  cert_file = \"@D@/issuer.pem\"; pin_file = \"@D@/issuer.pin\";",
	/*  8 */ "  key_type = \"ec-p256\"; };",
	/*  9 */ "session = { ttl = \"8h\"; scope = \"user\"; revoke_on_logout = true; cache_pin = false; };",
	/* 10 */ "signer = { key = \"session\"; };",
	/* 11 */ "polkit = { mode = \"if-available\"; };",
	NULL,
};

/* ------------------------------------------------------------------ */
/* helpers                                                             */

static void
write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static char *
path_in(const struct fixture *fx, const char *name)
{
	char *p = NULL;

	assert_true(asprintf(&p, "%s/%s", fx->dir, name) > 0);
	return p;
}

/* Replace every @D@ with the fixture directory. */
static char *
subst_dir(const struct fixture *fx, const char *text)
{
	size_t dlen = strlen(fx->dir), n = 0;
	const char *p;
	char *out, *o;

	for (p = text; (p = strstr(p, "@D@")) != NULL; p += 3)
		n++;
	out = malloc(strlen(text) + n * dlen + 1);
	assert_non_null(out);
	for (o = out, p = text; *p != '\0';) {
		if (strncmp(p, "@D@", 3) == 0) {
			memcpy(o, fx->dir, dlen);
			o += dlen;
			p += 3;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return out;
}

/* The base policy with line `line` (1-based) replaced; 0 replaces nothing. */
static char *
base_with(const struct fixture *fx, int line, const char *replacement)
{
	size_t cap = 4096, len = 0, add;
	char *text = malloc(cap), *out;
	int i;

	assert_non_null(text);
	text[0] = '\0';
	for (i = 0; base_lines[i] != NULL; i++) {
		const char *l = (i + 1 == line) ? replacement : base_lines[i];

		add = strlen(l) + 1;
		assert_true(len + add < cap);
		memcpy(text + len, l, add - 1);
		len += add;
		text[len - 1] = '\n';
		text[len] = '\0';
	}
	out = subst_dir(fx, text);
	free(text);
	return out;
}

static struct kh_policy_load_opts
test_opts(void)
{
	struct kh_policy_load_opts o = { .trusted_uid = geteuid(), .skip_file_checks = false };

	return o;
}

static struct kh_policy *
load_text(const char *text, kh_error *err)
{
	struct kh_policy_load_opts o = test_opts();

	return kh_policy_load_string(text, "test.conf", &o, err);
}

/* Error must be "<name>:<line>: ..." (line 0: "<name>: ...") and contain `want`. */
static void
assert_error_at(const kh_error *err, const char *name, int line, const char *want)
{
	char prefix[256];

	if (line > 0)
		snprintf(prefix, sizeof(prefix), "%s:%d: ", name, line);
	else
		snprintf(prefix, sizeof(prefix), "%s: ", name);
	if (strncmp(err->msg, prefix, strlen(prefix)) != 0 || strstr(err->msg, want) == NULL) {
		print_error("error:    %s\nexpected: %s...%s\n", err->msg, prefix, want);
		fail();
	}
	assert_int_equal(err->code, KH_ERR_CONFIG);
}

static char *
print_policy(const struct kh_policy *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(kh_policy_print(p, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static char *
read_sample(void)
{
	const char *src = getenv("KH_SRCDIR");
	char *path = NULL, *buf;
	FILE *f;
	long n;

	assert_true(asprintf(&path, "%s/conf/kubehsm.conf",
			     src != NULL && src[0] != '\0' ? src : KH_TEST_SRCDIR) > 0);
	f = fopen(path, "r");
	if (f == NULL)
		print_error("cannot open %s: %s\n", path, strerror(errno));
	assert_non_null(f);
	free(path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* ------------------------------------------------------------------ */
/* fixture                                                             */

static int
setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char *p;

	assert_non_null(fx);
	snprintf(fx->dir, sizeof(fx->dir), "%s/kh-policy.XXXXXX", "/tmp");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->sub, sizeof(fx->sub), "%s/etc", fx->dir);
	assert_int_equal(mkdir(fx->sub, 0755), 0);
	assert_int_equal(chmod(fx->sub, 0755), 0);
	p = path_in(fx, "module.so");
	write_file(p, "not really a module\n", 0755);
	free(p);
	p = path_in(fx, "ca.pem");
	write_file(p, "-----BEGIN CERTIFICATE-----\n", 0644);
	free(p);
	p = path_in(fx, "crl.pem");
	write_file(p, "-----BEGIN X509 CRL-----\n", 0644);
	free(p);
	p = path_in(fx, "issuer.pem");
	write_file(p, "-----BEGIN CERTIFICATE-----\n", 0644);
	free(p);
	p = path_in(fx, "issuer.pin");
	write_file(p, PIN_SECRET "\n", 0600);
	free(p);
	*state = fx;
	return 0;
}

static int
remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path) == 0 ? 0 : -1;
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;

	/* Depth first, never following links the tests planted. */
	if (nftw(fx->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "# could not remove %s: %s\n", fx->dir, strerror(errno));
	free(fx);
	return 0;
}

/* ------------------------------------------------------------------ */
/* good policies                                                       */

static void
test_base_loads(void **state)
{
	struct fixture *fx = *state;
	char *text = base_with(fx, 0, NULL);
	kh_error err;
	struct kh_policy *p = load_text(text, &err);

	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	assert_int_equal(p->version, 1);
	assert_int_equal(p->nissuers, 1);
	assert_string_equal(p->issuers[0].id, "");
	assert_int_equal(p->identity.ngroups, 2);
	assert_int_equal(p->identity.groups[0].source, KH_GROUP_CERT);
	assert_string_equal(p->identity.groups[0].arg, "O");
	assert_int_equal(p->identity.groups[1].source, KH_GROUP_UNIX);
	assert_string_equal(p->identity.groups[1].arg, "k8s-*");
	assert_int_equal(p->session.ttl, 8 * 3600);
	kh_policy_free(p);
	free(text);
}

/* pkcs11.forward: the per-uid socket expands %U and %%; nothing else. */
static void
test_forward_socket(void **state)
{
	struct fixture *fx = *state;
	char *text = base_with(fx, 2, "pkcs11 = { module = \"@D@/module.so\"; forward = { "
			       "module = \"@D@/module.so\"; socket = \"/run/%%/%U/x-%U\"; }; };");
	kh_error err;
	struct kh_policy *p = load_text(text, &err);
	char *path;

	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	path = kh_policy_forward_socket(p, 4294967294u, &err);
	assert_non_null(path);
	assert_string_equal(path, "/run/%/4294967294/x-4294967294");
	free(path);
	path = kh_policy_forward_socket(p, 0, &err);
	assert_string_equal(path, "/run/%/0/x-0");
	free(path);
	kh_policy_free(p);
	free(text);

	/* Without a forward section there is no socket. */
	text = base_with(fx, 0, NULL);
	p = load_text(text, &err);
	assert_non_null(p);
	assert_null(p->pkcs11.forward_module);
	assert_null(kh_policy_forward_socket(p, 1000, &err));
	assert_int_equal(err.code, KH_ERR_CONFIG);
	kh_policy_free(p);
	free(text);

	/* Refused: no %U, another escape, a trailing %, not a group. */
	static const char *const bad[] = {
		"socket = \"/run/p11\";", "must name each user's own socket with %U",
		"socket = \"/run/%u/%U\";", "'%u' is not a template escape",
		"socket = \"/run/%U/%\";", "is not a template escape",
		"socket = \"run/%U\";", "absolute path",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i += 2) {
		char line[256];

		snprintf(line, sizeof(line), "pkcs11 = { module = \"@D@/module.so\"; forward = { "
			 "module = \"@D@/module.so\"; %s }; };", bad[i]);
		text = base_with(fx, 2, line);
		p = load_text(text, &err);
		if (p != NULL)
			print_error("accepted: %s\n", bad[i]);
		assert_null(p);
		assert_error_at(&err, "test.conf", 2, bad[i + 1]);
		free(text);
	}
	text = base_with(fx, 2, "pkcs11 = { module = \"@D@/module.so\"; forward = \"x\"; };");
	assert_null(load_text(text, &err));
	assert_error_at(&err, "test.conf", 2, "pkcs11.forward must be a group");
	free(text);
}

static void
test_sample_loads(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = { .trusted_uid = geteuid(), .skip_file_checks = true };
	char *text = read_sample(), *path = NULL;
	struct kh_policy *p;
	kh_error err;

	/* From memory ... */
	p = kh_policy_load_string(text, "kubehsm.conf", &o, &err);
	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	assert_string_equal(p->pkcs11.module, "/usr/lib/softhsm/libsofthsm2.so");
	assert_string_equal(p->trust.ca_file, "/etc/kubehsm/users-ca.pem");
	assert_string_equal(p->issuers[0].module, p->pkcs11.module);
	assert_string_equal(p->issuers[0].pin_file, "/etc/kubehsm/issuer.pin");
	assert_int_equal(p->session.ttl, 28800);
	assert_int_equal(p->polkit.mode, KH_POLKIT_IF_AVAILABLE);
	kh_policy_free(p);

	/* ... and as a file in a directory the test owns, through every file check
	 * on the config itself. */
	assert_true(asprintf(&path, "%s/kubehsm.conf", fx->sub) > 0);
	write_file(path, text, 0644);
	p = kh_policy_load(path, &o, &err);
	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	assert_string_equal(p->path, path);
	kh_policy_free(p);
	free(path);
	free(text);
}

static void
test_defaults(void **state)
{
	struct fixture *fx = *state;
	char *text = subst_dir(fx,
		"version = 1;\n"
		"pkcs11 = { module = \"@D@/module.so\"; };\n"
		"trust = { ca_file = \"@D@/ca.pem\"; };\n"
		"issuer = { key = \"pkcs11:object=i\"; cert_file = \"@D@/issuer.pem\";\n"
		"           pin_file = \"@D@/issuer.pin\"; };\n");
	kh_error err;
	struct kh_policy *p = load_text(text, &err);

	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	assert_string_equal(p->token.label, "%u");
	assert_string_equal(p->token.key_label, "kube");
	assert_string_equal(p->token.key_id, "");
	assert_string_equal(p->trust.crl_file, "");
	assert_int_equal(p->trust.map, KH_MAP_CN);
	assert_string_equal(p->identity.username, "%u");
	assert_int_equal(p->identity.ngroups, 0);
	assert_null(p->identity.groups);
	assert_int_equal(p->nissuers, 1);
	assert_string_equal(p->issuers[0].id, "");
	assert_string_equal(p->issuers[0].module, p->pkcs11.module);
	assert_int_equal(p->issuers[0].key_type, KH_KEY_EC_P256);
	assert_int_equal(p->session.ttl, 8 * 3600);
	assert_int_equal(p->session.scope, KH_SCOPE_USER);
	assert_true(p->session.revoke_on_logout);
	assert_false(p->session.cache_pin);
	assert_int_equal(p->signer.key, KH_SIGNER_SESSION);
	assert_int_equal(p->polkit.mode, KH_POLKIT_IF_AVAILABLE);
	kh_policy_free(p);
	free(text);
}

static void
test_every_value_set(void **state)
{
	struct fixture *fx = *state;
	char *text = subst_dir(fx,
		"version = 1;\n"
		"pkcs11 = { module = \"@D@/module.so\"; };\n"
		"token = { label = \"card-%u\"; key_label = \"\"; key_id = \"A1b2\"; };\n"
		"trust = { ca_file = \"@D@/ca.pem\"; crl_file = \"@D@/crl.pem\"; map = \"upn\";\n"
		"  domains = [ \"Corp.Example.COM\", \"example.org\" ]; };\n"
		"identity = { username = \"oidc:%u\"; groups = ( \"static:devs\", \"cert:OU\" ); };\n"
		"issuer = { id = \"main\"; key = \"pkcs11:object=i\"; module = \"@D@/module.so\";\n"
		"  cert_file = \"@D@/issuer.pem\"; pin_file = \"@D@/issuer.pin\"; key_type = \"rsa-3072\"; };\n"
		"session = { ttl = \"1h30m\"; scope = \"session\"; revoke_on_logout = false; cache_pin = true; };\n"
		"signer = { key = \"token\"; };\n"
		"polkit = { mode = \"required\"; };\n");
	kh_error err;
	struct kh_policy *p = load_text(text, &err);

	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	assert_string_equal(p->token.label, "card-%u");
	assert_string_equal(p->token.key_label, "");
	assert_int_equal(p->trust.ndomains, 2);
	assert_string_equal(p->trust.domains[0], "corp.example.com");   /* lowered */
	assert_string_equal(p->trust.domains[1], "example.org");
	assert_string_equal(p->token.key_id, "A1b2");
	assert_int_equal(p->trust.map, KH_MAP_UPN);
	assert_int_equal(p->identity.groups[0].source, KH_GROUP_STATIC);
	assert_string_equal(p->identity.groups[0].arg, "devs");
	assert_string_equal(p->identity.groups[1].arg, "OU");
	assert_string_equal(p->issuers[0].id, "main");
	assert_int_equal(p->issuers[0].key_type, KH_KEY_RSA_3072);
	assert_int_equal(p->session.ttl, 5400);
	assert_int_equal(p->session.scope, KH_SCOPE_SESSION);
	assert_false(p->session.revoke_on_logout);
	assert_true(p->session.cache_pin);
	assert_int_equal(p->signer.key, KH_SIGNER_TOKEN);
	assert_int_equal(p->polkit.mode, KH_POLKIT_REQUIRED);
	assert_ptr_equal(kh_policy_issuer(p, NULL), &p->issuers[0]);
	assert_ptr_equal(kh_policy_issuer(p, "main"), &p->issuers[0]);
	assert_null(kh_policy_issuer(p, "other"));
	kh_policy_free(p);
	free(text);
}

static void
test_two_issuers(void **state)
{
	struct fixture *fx = *state;
	char *text = subst_dir(fx,
		"version = 1;\n"
		"pkcs11 = { module = \"@D@/module.so\"; };\n"
		"trust = { ca_file = \"@D@/ca.pem\"; };\n"
		"issuer = ( { id = \"prod\"; key = \"pkcs11:object=p\"; cert_file = \"@D@/issuer.pem\";\n"
		"             pin_file = \"@D@/issuer.pin\"; key_type = \"ec-p384\"; },\n"
		"           { id = \"stg-2.a_b\"; key = \"pkcs11:object=s\"; module = \"@D@/mod2.so\";\n"
		"             cert_file = \"@D@/issuer.pem\"; pin_file = \"@D@/issuer.pin\"; } );\n");
	char *mod2 = path_in(fx, "mod2.so");
	kh_error err;
	struct kh_policy *p;

	write_file(mod2, "another module\n", 0644);
	p = load_text(text, &err);
	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	assert_int_equal(p->nissuers, 2);
	assert_string_equal(p->issuers[0].id, "prod");
	assert_string_equal(p->issuers[0].module, p->pkcs11.module);
	assert_string_equal(p->issuers[1].module, mod2);
	assert_int_equal(p->issuers[0].key_type, KH_KEY_EC_P384);
	assert_int_equal(p->issuers[1].key_type, KH_KEY_EC_P256);
	assert_ptr_equal(kh_policy_issuer(p, ""), &p->issuers[0]);
	assert_ptr_equal(kh_policy_issuer(p, "stg-2.a_b"), &p->issuers[1]);
	assert_null(kh_policy_issuer(p, "prod2"));
	kh_policy_free(p);

	/* An issuer's own module is checked like pkcs11.module. */
	assert_int_equal(unlink(mod2), 0);
	assert_null(load_text(text, &err));
	assert_error_at(&err, "test.conf", 6, "issuer.module");
	assert_non_null(strstr(err.msg, "No such file or directory"));
	free(mod2);
	free(text);
}

/* ------------------------------------------------------------------ */
/* bad policies: each one rejected with the right line and message     */

struct bad_case {
	int replace;            /* base line replaced (1-based); 0 = whole text given */
	const char *text;
	int line;               /* line the error must name; 0 = none */
	const char *want;       /* substring of the message */
};

static const struct bad_case bad_cases[] = {
	/* typos and unknown keys */
	{ 9, "session = { ttll = \"8h\"; };", 9,
	  "unknown key 'ttll' in section 'session' (did you mean 'ttl'?)" },
	{ 11, "polkat = { mode = \"off\"; };", 11,
	  "unknown section 'polkat' (did you mean 'polkit'?)" },
	{ 7, "  cert_file = \"@D@/issuer.pem\"; pinfile = \"@D@/issuer.pin\";", 7,
	  "unknown key 'pinfile' in section 'issuer' (did you mean 'pin_file'?)" },
	{ 3, "token = { lable = \"%u\"; colour = \"red\"; };", 3, "unknown key 'lable'" },
	{ 4, "trust = { ca_file = \"@D@/ca.pem\";\n  totally_unrelated = 1; };", 5,
	  "unknown key 'totally_unrelated' in section 'trust'" },
	/* syntax and duplicates (libconfig) */
	{ 9, "session = { ttl = \"8h\"; ttl = \"9h\"; };", 9, "duplicate setting name" },
	{ 10, "signer = { key = };", 10, "syntax error" },
	{ 10, "signer = { key = \"session\"; };\nsigner = { key = \"session\"; };", 11,
	  "duplicate setting name" },
	{ 2, "@include \"/etc/passwd\"", 2, "@include is not allowed" },
	/* version */
	{ 1, "", 0, "missing 'version = 1;'" },
	{ 1, "version = 2;", 1, "version 2 is not supported" },
	{ 1, "version = \"1\";", 1, "version must be an integer" },
	/* wrong types */
	{ 9, "session = { revoke_on_logout = \"yes\"; };", 9,
	  "session.revoke_on_logout must be a boolean (true/false)" },
	{ 9, "session = { cache_pin = 1; };", 9, "session.cache_pin must be a boolean" },
	{ 9, "session = { ttl = 3600; };", 9, "session.ttl must be a duration string" },
	{ 9, "session = \"8h\";", 9, "session must be a group" },
	{ 2, "pkcs11 = { module = [ \"/a\" ]; };", 2, "pkcs11.module must be a string" },
	{ 4, "trust = { ca_file = \"@D@/ca.pem\"; map = 1; };", 4,
	  "trust.map must be a string, one of: cn, uid, email, upn" },
	{ 5, "identity = { groups = \"cert:O\"; };", 5, "identity.groups must be a list" },
	{ 5, "identity = { groups = [ 1, 2 ]; };", 5, "entries must be strings" },
	/* durations and ranges */
	{ 9, "session = { ttl = \"8x\"; };", 9, "unknown unit 'x' (use s, m, h or d)" },
	{ 9, "session = { ttl = \"90\"; };", 9, "missing unit" },
	{ 9, "session = { ttl = \"\"; };", 9, "empty duration" },
	{ 9, "session = { ttl = \"-1h\"; };", 9, "expected a number" },
	{ 9, "session = { ttl = \"1h 30m\"; };", 9, "expected a number" },
	{ 9, "session = { ttl = \"30m1h\"; };", 9, "largest to smallest" },
	{ 9, "session = { ttl = \"99999999999999999999s\"; };", 9, "number too large" },
	{ 9, "session = { ttl = \"59s\"; };", 9, "out of range (1m to 7d)" },
	{ 9, "session = { ttl = \"7d1s\"; };", 9, "out of range (1m to 7d)" },
	/* enums */
	{ 9, "session = { scope = \"global\"; };", 9,
	  "session.scope: unknown value \"global\"; valid: user, session" },
	{ 4, "trust = { ca_file = \"@D@/ca.pem\"; map = \"dn\"; };", 4,
	  "valid: cn, uid, email, upn" },
	{ 11, "polkit = { mode = \"maybe\"; };", 11, "valid: required, if-available, off" },
	{ 8, "  key_type = \"rsa-1024\"; };", 8, "valid: ec-p256, ec-p384, rsa-2048, rsa-3072" },
	{ 10, "signer = { key = \"hsm\"; };", 10, "valid: session, token" },
	/* cross-field rules */
	{ 10, "signer = { key = \"token\"; };", 10, "needs session.cache_pin = true" },
	{ 3, "token = { key_label = \"\"; key_id = \"\"; };", 3,
	  "key_label and key_id are both empty" },
	{ 3, "token = { key_id = \"xyz1\"; };", 3, "even number of hex digits" },
	{ 3, "token = { key_id = \"abc\"; };", 3, "even number of hex digits" },
	/* templates */
	{ 3, "token = { label = \"%x\"; };", 3, "'%x' is not a template escape" },
	{ 3, "token = { key_label = \"kube%\"; };", 3, "ends with a lone '%'" },
	{ 5, "identity = { username = \"%U\"; };", 5, "'%U' is not a template escape" },
	{ 5, "identity = { username = \"\"; };", 5, "identity.username must not be empty" },
	{ 5, "identity = { username = \"a\\nb\"; };", 5, "control character" },
	/* groups */
	{ 5, "identity = { groups = [ \"ldap:admins\" ]; };", 5,
	  "must start with cert:, unix: or static:" },
	{ 5, "identity = { groups = [ \"cert:CN\" ]; };", 5, "must be O or OU" },
	{ 5, "identity = { groups = [ \"static:\" ]; };", 5, "nothing after the ':'" },
	/* required values */
	{ 2, "pkcs11 = { };", 2, "pkcs11.module is required" },
	{ 2, "", 0, "missing required section 'pkcs11'" },
	{ 4, "trust = { map = \"cn\"; };", 4, "trust.ca_file is required" },
	{ 2, "pkcs11 = { module = \"module.so\"; };", 2, "must be an absolute path" },
	{ 4, "trust = { ca_file = \"@D@/ca.pem\"; crl_file = \"crl.pem\"; };", 4,
	  "trust.crl_file must be an absolute path" },
	/* issuers */
	{ 6, "issuer = { key = \"/dev/hsm0\";", 6, "must be a PKCS#11 URI" },
	{ 7, "  pin_file = \"@D@/issuer.pin\";", 6, "issuer.cert_file is required" },
	{ 6, "issuer = { id = \"a:b\"; key = \"pkcs11:object=i\";", 6, "issuer.id \"a:b\" must be" },
};

/* Whole-text bad cases that do not fit the one-line pattern. */
static const struct bad_case bad_texts[] = {
	{ 0, "version = 1;\n"
	     "pkcs11 = { module = \"@D@/module.so\"; };\n"
	     "trust = { ca_file = \"@D@/ca.pem\"; };\n", 0, "missing required section 'issuer'" },
	{ 0, "version = 1;\n"
	     "pkcs11 = { module = \"@D@/module.so\"; };\n"
	     "trust = { ca_file = \"@D@/ca.pem\"; };\n"
	     "issuer = ( );\n", 4, "issuer list is empty" },
	{ 0, "version = 1;\n"
	     "pkcs11 = { module = \"@D@/module.so\"; };\n"
	     "trust = { ca_file = \"@D@/ca.pem\"; };\n"
	     "issuer = ( { id = \"a\"; key = \"pkcs11:object=i\"; cert_file = \"@D@/issuer.pem\";\n"
	     "             pin_file = \"@D@/issuer.pin\"; },\n"
	     "           { id = \"a\"; key = \"pkcs11:object=j\"; cert_file = \"@D@/issuer.pem\";\n"
	     "             pin_file = \"@D@/issuer.pin\"; } );\n", 6,
	  "issuer.id \"a\" is used twice" },
	{ 0, "version = 1;\n"
	     "pkcs11 = { module = \"@D@/module.so\"; };\n"
	     "trust = { ca_file = \"@D@/ca.pem\"; };\n"
	     "issuer = ( { key = \"pkcs11:object=i\"; cert_file = \"@D@/issuer.pem\";\n"
	     "             pin_file = \"@D@/issuer.pin\"; } );\n", 4, "issuer.id is required" },
	{ 0, "version = 1;\n"
	     "pkcs11 = { module = \"@D@/module.so\"; };\n"
	     "trust = { ca_file = \"@D@/ca.pem\"; };\n"
	     "issuer = ( \"pkcs11:object=i\" );\n", 4, "issuer list entries must be groups" },
	{ 0, "version = 1;\n"
	     "pkcs11 = { module = \"@D@/module.so\"; };\n"
	     "trust = { ca_file = \"@D@/ca.pem\"; };\n"
	     "issuer = ( { id = \"this-id-is-far-too-long-for-a-key-desc\"; key = \"pkcs11:x\";\n"
	     "  cert_file = \"@D@/issuer.pem\"; pin_file = \"@D@/issuer.pin\"; } );\n", 4,
	  "must be 1 to 32 characters" },
	/* named files */
	{ 0, "version = 1;\n"
	     "pkcs11 = { module = \"@D@/module.so\"; };\n"
	     "trust = {\n"
	     "  ca_file = \"@D@/no-such-ca.pem\";\n"
	     "};\n", 4, "no-such-ca.pem: No such file or directory" },
	{ 0, "version = 1;\n"
	     "pkcs11 = { module = \"@D@\"; };\n", 2, "not a regular file" },
};

static void
check_bad(const struct fixture *fx, const struct bad_case *c, size_t idx)
{
	char *text = c->replace > 0 ? base_with(fx, c->replace, c->text) : subst_dir(fx, c->text);
	struct kh_policy *p;
	kh_error err;

	kh_error_clear(&err);
	p = load_text(text, &err);
	if (p != NULL) {
		print_error("case %zu was accepted:\n%s\n", idx, text);
		kh_policy_free(p);
		fail();
	}
	if (getenv("KH_TEST_VERBOSE") != NULL)
		print_message("# %s\n", err.msg);
	assert_error_at(&err, "test.conf", c->line, c->want);
	free(text);
}

static void
test_bad_configs(void **state)
{
	struct fixture *fx = *state;
	size_t i, n = sizeof(bad_cases) / sizeof(bad_cases[0]);

	for (i = 0; i < n; i++)
		check_bad(fx, &bad_cases[i], i);
	for (i = 0; i < sizeof(bad_texts) / sizeof(bad_texts[0]); i++)
		check_bad(fx, &bad_texts[i], 100 + i);
	/* Enough distinct rejections to cover the schema (the issue asks >= 25). */
	assert_true(n + sizeof(bad_texts) / sizeof(bad_texts[0]) >= 25);
}

/* ------------------------------------------------------------------ */
/* file modes and ownership                                            */

static char *
write_config(const struct fixture *fx, const char *dir, const char *text, mode_t mode)
{
	char *path = NULL;

	assert_true(asprintf(&path, "%s/kubehsm.conf", dir) > 0);
	write_file(path, text, mode);
	return path;
}

static void
test_pin_file_mode(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = test_opts();
	char *text = base_with(fx, 0, NULL), *pin = path_in(fx, "issuer.pin");
	char *conf = write_config(fx, fx->sub, text, 0644), want[512];
	struct kh_policy *p;
	kh_error err;

	assert_int_equal(chmod(pin, 0644), 0);
	p = kh_policy_load(conf, &o, &err);
	assert_null(p);
	snprintf(want, sizeof(want), "%s: mode 0644 lets group/others read the issuer PIN; "
		 "chmod 0600", pin);
	assert_error_at(&err, conf, 7, want);
	assert_null(strstr(err.msg, PIN_SECRET));

	assert_int_equal(chmod(pin, 0640), 0);
	assert_null(kh_policy_load(conf, &o, &err));
	assert_non_null(strstr(err.msg, "mode 0640"));

	/* 0400 is as good as 0600. */
	assert_int_equal(chmod(pin, 0400), 0);
	p = kh_policy_load(conf, &o, &err);
	assert_non_null(p);
	kh_policy_free(p);
	assert_int_equal(chmod(pin, 0600), 0);
	free(pin);
	free(conf);
	free(text);
}

static void
test_pin_file_symlink(void **state)
{
	struct fixture *fx = *state;
	char *link = path_in(fx, "pin-link"), *pin = path_in(fx, "issuer.pin");
	char *text = base_with(fx, 7,
		"  cert_file = \"@D@/issuer.pem\"; pin_file = \"@D@/pin-link\";");
	kh_error err;

	assert_int_equal(symlink(pin, link), 0);
	assert_null(load_text(text, &err));
	assert_error_at(&err, "test.conf", 7, "is a symbolic link");
	free(text);
	free(link);
	free(pin);
}

static void
test_config_file_modes(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = test_opts();
	char *text = base_with(fx, 0, NULL), *conf, *link = NULL;
	struct kh_policy *p;
	kh_error err;

	conf = write_config(fx, fx->sub, text, 0664);
	assert_null(kh_policy_load(conf, &o, &err));
	assert_error_at(&err, conf, 0, "mode 0664: group/others could change the policy");

	assert_int_equal(chmod(conf, 0602), 0);
	assert_null(kh_policy_load(conf, &o, &err));
	assert_non_null(strstr(err.msg, "mode 0602"));

	assert_int_equal(chmod(conf, 0600), 0);
	p = kh_policy_load(conf, &o, &err);
	assert_non_null(p);
	kh_policy_free(p);

	/* A writable parent directory is as bad as a writable file. */
	assert_int_equal(chmod(fx->sub, 0775), 0);
	assert_null(kh_policy_load(conf, &o, &err));
	assert_non_null(strstr(err.msg, "directory"));
	assert_non_null(strstr(err.msg, "mode 0775"));
	assert_int_equal(chmod(fx->sub, 0755), 0);

	/* A symlink is refused rather than followed. */
	assert_true(asprintf(&link, "%s/link.conf", fx->sub) > 0);
	assert_int_equal(symlink(conf, link), 0);
	assert_null(kh_policy_load(link, &o, &err));
	assert_error_at(&err, link, 0, "symbolic link");

	/* Missing file, directory. */
	assert_null(kh_policy_load("/nonexistent-kubehsm/kubehsm.conf", &o, &err));
	assert_non_null(strstr(err.msg, "No such file or directory"));
	assert_null(kh_policy_load(fx->sub, &o, &err));
	assert_non_null(strstr(err.msg, "not a regular file"));
	assert_null(kh_policy_load(NULL, &o, &err));
	assert_int_equal(err.code, KH_ERR_INPUT);
	free(link);
	free(conf);
	free(text);
}

/*
 * StrictModes for the directories above every file the policy trusts: a
 * writer of any of them could replace the file.  A sticky directory of
 * root's (or the trusted uid's), like /tmp, is safe: others may add
 * entries there but not rename or remove another owner's (#13).
 */
static void
test_parent_dirs(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = test_opts();
	char *text = base_with(fx, 0, NULL), *conf = write_config(fx, fx->sub, text, 0644);
	char *cadir = path_in(fx, "ca"), *ca = path_in(fx, "ca/ca.pem"), *catext;
	struct kh_policy *p;
	kh_error err;

	/* The policy's grandparent open to others, then to the group. */
	assert_int_equal(chmod(fx->dir, 0777), 0);
	assert_null(kh_policy_load(conf, &o, &err));
	assert_non_null(strstr(err.msg, fx->dir));
	assert_non_null(strstr(err.msg, "mode 0777"));
	assert_int_equal(chmod(fx->dir, 0770), 0);
	assert_null(kh_policy_load(conf, &o, &err));
	assert_non_null(strstr(err.msg, "mode 0770"));
	/* Sticky and the trusted uid's: safe (this is /tmp for every test). */
	assert_int_equal(chmod(fx->dir, 01777), 0);
	p = kh_policy_load(conf, &o, &err);
	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	kh_policy_free(p);
	assert_int_equal(chmod(fx->dir, 0700), 0);

	/* A named file (the users' CA) in a directory others may write. */
	assert_int_equal(mkdir(cadir, 0777), 0);
	assert_int_equal(chmod(cadir, 0777), 0);
	write_file(ca, "-----BEGIN CERTIFICATE-----\n", 0644);
	catext = base_with(fx, 4, "trust = { ca_file = \"@D@/ca/ca.pem\"; map = \"cn\"; };");
	assert_null(load_text(catext, &err));
	assert_error_at(&err, "test.conf", 4, "mode 0777");
	assert_non_null(strstr(err.msg, cadir));
	assert_int_equal(chmod(cadir, 0755), 0);
	p = load_text(catext, &err);
	assert_non_null(p);
	kh_policy_free(p);
	free(catext);
	free(ca);
	free(cadir);
	free(conf);
	free(text);
}

static void
test_config_owner(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = { .trusted_uid = 0 };
	char *text = base_with(fx, 0, NULL), *conf;
	kh_error err;

	if (geteuid() == 0) {
		/* Root can hand the file to someone else; the loader must notice. */
		conf = write_config(fx, fx->sub, text, 0644);
		assert_int_equal(chown(conf, 65534, (gid_t)-1), 0);
		assert_null(kh_policy_load(conf, &o, &err));
		assert_error_at(&err, conf, 0, "owned by uid 65534; it must be owned by root");
	} else {
		/* Unprivileged: our own file is not root's. */
		conf = write_config(fx, fx->sub, text, 0644);
		assert_null(kh_policy_load(conf, &o, &err));
		assert_non_null(strstr(err.msg, "must be owned by root"));
	}
	free(conf);
	free(text);
}

static void
test_all_or_nothing(void **state)
{
	struct fixture *fx = *state;
	/* The error is in the last section: everything before it was built and must be freed
	 * (the sanitizer/valgrind runs check there is no leak). */
	char *text = base_with(fx, 11, "polkit = { mode = \"sometimes\"; };");
	kh_error err;

	assert_null(load_text(text, &err));
	assert_int_equal(err.code, KH_ERR_CONFIG);
	free(text);
	kh_policy_free(NULL);
	assert_null(kh_policy_issuer(NULL, NULL));
	assert_null(kh_policy_load_string(NULL, "x", NULL, &err));
}

/* email/upn keep only the local part: the domains must be named (#13). */
static void
test_trust_domains(void **state)
{
	struct fixture *fx = *state;
	kh_error err;
	char *t;

	t = base_with(fx, 4, "trust = { ca_file = \"@D@/ca.pem\"; map = \"email\"; };");
	assert_null(load_text(t, &err));
	assert_error_at(&err, "test.conf", 4, "trust.domains is required with map = \"email\"");
	free(t);
	t = base_with(fx, 4, "trust = { ca_file = \"@D@/ca.pem\"; map = \"cn\"; domains = [ \"a.example\" ]; };");
	assert_null(load_text(t, &err));
	assert_error_at(&err, "test.conf", 4, "trust.domains applies only to map");
	free(t);
	t = base_with(fx, 4, "trust = { ca_file = \"@D@/ca.pem\"; map = \"upn\"; domains = [ \"@a.example\" ]; };");
	assert_null(load_text(t, &err));
	assert_error_at(&err, "test.conf", 4, "\"@a.example\" is not a domain name");
	free(t);
	t = base_with(fx, 4, "trust = { ca_file = \"@D@/ca.pem\"; map = \"upn\"; domains = \"a.example\"; };");
	assert_null(load_text(t, &err));
	assert_error_at(&err, "test.conf", 4, "must be a list of strings");
	free(t);
}

/* Kube groups from any source pass identity.allow_groups/deny_groups;
 * system: groups are denied by default (#13). */
static void
test_group_lists(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy *p;
	kh_error err;
	char *t = base_with(fx, 0, NULL), *out;

	p = load_text(t, &err);
	assert_non_null(p);
	assert_false(kh_policy_group_allowed(p, "system:masters"));
	assert_false(kh_policy_group_allowed(p, "system:nodes"));
	assert_true(kh_policy_group_allowed(p, "dev"));
	assert_true(kh_policy_group_allowed(p, "systems-team"));
	out = print_policy(p);
	assert_non_null(strstr(out, "allow_groups = [ \"*\" ];"));
	assert_non_null(strstr(out, "deny_groups = [ \"system:*\" ];"));
	free(out);
	kh_policy_free(p);
	free(t);

	t = base_with(fx, 5, "identity = { groups = [ \"cert:O\" ]; allow_groups = [ \"dev\", \"team-*\" ];"
		      " deny_groups = [ \"team-x\" ]; };");
	p = load_text(t, &err);
	assert_non_null(p);
	assert_true(kh_policy_group_allowed(p, "dev"));
	assert_true(kh_policy_group_allowed(p, "team-a"));
	assert_false(kh_policy_group_allowed(p, "team-x"));
	assert_false(kh_policy_group_allowed(p, "ops"));
	assert_false(kh_policy_group_allowed(p, "system:masters"));
	kh_policy_free(p);
	free(t);

	/* An admin who really means it may allow system: groups. */
	t = base_with(fx, 5, "identity = { deny_groups = [ ]; };");
	p = load_text(t, &err);
	assert_non_null(p);
	assert_true(kh_policy_group_allowed(p, "system:masters"));
	kh_policy_free(p);
	free(t);

	t = base_with(fx, 5, "identity = { deny_groups = [ 7 ]; };");
	assert_null(load_text(t, &err));
	assert_error_at(&err, "test.conf", 5, "entries must be strings");
	free(t);
}

/* A ttl over 24h needs session.allow_long_ttl (#13). */
static void
test_long_ttl(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy *p;
	kh_error err;
	char *t;

	t = base_with(fx, 9, "session = { ttl = \"25h\"; };");
	assert_null(load_text(t, &err));
	assert_error_at(&err, "test.conf", 9, "longer than 24h");
	assert_non_null(strstr(err.msg, "allow_long_ttl"));
	free(t);
	t = base_with(fx, 9, "session = { ttl = \"24h\"; };");
	p = load_text(t, &err);
	assert_non_null(p);
	kh_policy_free(p);
	free(t);
	t = base_with(fx, 9, "session = { ttl = \"3d\"; allow_long_ttl = true; };");
	p = load_text(t, &err);
	assert_non_null(p);
	assert_int_equal(p->session.ttl, 3 * 24 * 3600);
	kh_policy_free(p);
	free(t);
	t = base_with(fx, 9, "session = { ttl = \"8d\"; allow_long_ttl = true; };");
	assert_null(load_text(t, &err));
	free(t);
	/* Held by the relay alone, the key goes with a revocation: no override
	 * needed; "both" still hands it to the user. */
	t = base_with(fx, 9, "session = { ttl = \"3d\"; deliver = \"both\"; };");
	assert_null(load_text(t, &err));
	assert_non_null(strstr(err.msg, "deliver = \"both\""));
	free(t);
}

/* ------------------------------------------------------------------ */
/* printing                                                            */

static void
test_print(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = test_opts();
	char *text = base_with(fx, 9, "session = { ttl = \"1d90m\"; allow_long_ttl = true; };");
	char *out1, *out2, *out3;
	struct kh_policy *p, *q;
	kh_error err;

	p = load_text(text, &err);
	assert_non_null(p);
	out1 = print_policy(p);
	out2 = print_policy(p);
	assert_string_equal(out1, out2);            /* deterministic */
	assert_non_null(strstr(out1, "ttl = \"1d1h30m\";  # 91800 seconds"));
	assert_non_null(strstr(out1, "scope = \"user\";"));
	assert_non_null(strstr(out1, "revoke_on_logout = true;"));
	assert_non_null(strstr(out1, "mode = \"if-available\";"));
	assert_non_null(strstr(out1, "map = \"cn\";"));
	assert_non_null(strstr(out1, "key_type = \"ec-p256\";"));
	assert_non_null(strstr(out1, "issuer.pin\";"));
	assert_null(strstr(out1, PIN_SECRET));       /* the PIN is never read */

	/* What is printed is itself a valid policy that prints the same. */
	q = kh_policy_load_string(out1, "test.conf", &o, &err);
	if (q == NULL)
		print_error("%s\n%s\n", err.msg, out1);
	assert_non_null(q);
	out3 = print_policy(q);
	assert_string_equal(out1, out3);
	kh_policy_free(q);
	kh_policy_free(p);
	free(out1);
	free(out2);
	free(out3);
	free(text);
}

static void
test_print_two_issuers_escapes(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = test_opts();
	char *text = subst_dir(fx,
		"version = 1;\n"
		"pkcs11 = { module = \"@D@/module.so\"; };\n"
		"trust = { ca_file = \"@D@/ca.pem\"; };\n"
		"identity = { username = \"a\\\"b\\\\c%%%u\"; groups = [ \"static:x\\\"y\" ]; };\n"
		"issuer = ( { id = \"one\"; key = \"pkcs11:object=a\"; cert_file = \"@D@/issuer.pem\";\n"
		"             pin_file = \"@D@/issuer.pin\"; },\n"
		"           { id = \"two\"; key = \"pkcs11:object=b\"; cert_file = \"@D@/issuer.pem\";\n"
		"             pin_file = \"@D@/issuer.pin\"; key_type = \"rsa-2048\"; } );\n");
	struct kh_policy *p, *q;
	char *out, *out2;
	kh_error err;

	p = load_text(text, &err);
	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	assert_string_equal(p->identity.username, "a\"b\\c%%%u");
	out = print_policy(p);
	assert_non_null(strstr(out, "issuer = (\n"));
	assert_non_null(strstr(out, "username = \"a\\\"b\\\\c%%%u\";"));
	q = kh_policy_load_string(out, "test.conf", &o, &err);
	if (q == NULL)
		print_error("%s\n%s\n", err.msg, out);
	assert_non_null(q);
	out2 = print_policy(q);
	assert_string_equal(out, out2);
	assert_int_equal(q->nissuers, 2);
	assert_string_equal(q->identity.groups[0].arg, "x\"y");
	kh_policy_free(q);
	kh_policy_free(p);
	free(out);
	free(out2);
	free(text);
}

/* ------------------------------------------------------------------ */
/* relay section and session.deliver                                   */

#define POLKIT_LINE "polkit = { mode = \"if-available\"; };\n"
#define RELAY_OPEN "relay = { clusters = ( { name = \"prod\"; listen = 644;\n"
#define RELAY_CA "  ca_file = \"@D@/ca.pem\"; } ); };"

static void
test_relay_loads(void **state)
{
	struct fixture *fx = *state;
	char *text = base_with(fx, 11, POLKIT_LINE
		"relay = { run_as = \"kube-relay\"; rundir = \"/run/khr\"; handshake_timeout = \"5s\";\n"
		"  idle_timeout = \"30m\"; max_sessions = 10; max_connections = 100;\n"
		"  max_connections_per_user = 7;\n"
		"  clusters = ( { name = \"prod\"; listen = 644; server = \"https://10.0.0.1:6443\";\n"
		"                 ca_file = \"@D@/ca.pem\"; },\n"
		"               { name = \"stg.2\"; listen = 645; server = \"https://[::1]/\";\n"
		"                 ca_file = \"@D@/ca.pem\"; server_name = \"kubernetes.default\";\n"
		"                 issuer = \"\"; } ); };");
	struct kh_policy *p;
	kh_error err;
	char *out;

	p = load_text(text, &err);
	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	assert_true(p->relay.configured);
	assert_int_equal(p->session.deliver, KH_DELIVER_EXEC);
	assert_string_equal(p->relay.run_as, "kube-relay");
	assert_string_equal(p->relay.rundir, "/run/khr");
	assert_int_equal(p->relay.handshake_timeout, 5);
	assert_int_equal(p->relay.idle_timeout, 1800);
	assert_int_equal(p->relay.max_sessions, 10);
	assert_int_equal(p->relay.max_connections, 100);
	assert_int_equal(p->relay.max_connections_per_user, 7);
	assert_int_equal(p->relay.nclusters, 2);
	assert_string_equal(p->relay.clusters[0].server_host, "10.0.0.1");
	assert_int_equal(p->relay.clusters[0].server_port, 6443);
	assert_int_equal(p->relay.clusters[0].listen, 644);
	assert_string_equal(p->relay.clusters[0].server_name, "");
	assert_string_equal(p->relay.clusters[1].server_host, "::1");
	assert_int_equal(p->relay.clusters[1].server_port, 443);
	assert_string_equal(p->relay.clusters[1].server_name, "kubernetes.default");
	assert_ptr_equal(kh_policy_relay_cluster_for(p, ""), &p->relay.clusters[0]);
	assert_null(kh_policy_relay_cluster_for(p, "other"));
	assert_false(kh_policy_delivers_to_relay(p));
	assert_true(kh_policy_delivers_to_exec(p));
	out = print_policy(p);
	assert_non_null(strstr(out, "  deliver = \"exec\";\n"));
	assert_non_null(strstr(out, "relay = {\n  run_as = \"kube-relay\";\n"));
	assert_non_null(strstr(out, "  idle_timeout = \"30m\";\n"));
	assert_non_null(strstr(out, "      listen = 645;"));
	assert_non_null(strstr(out, "      server = \"https://[::1]/\";\n"));
	/* What config check prints loads again and prints the same. */
	{
		struct kh_policy *again = load_text(out, &err);
		char *out2;

		if (again == NULL)
			print_error("%s\n%s\n", err.msg, out);
		assert_non_null(again);
		out2 = print_policy(again);
		assert_string_equal(strchr(out, '\n'), strchr(out2, '\n'));
		free(out2);
		kh_policy_free(again);
	}
	free(out);
	kh_policy_free(p);
	free(text);

	/* Defaults, and deliver = relay. */
	text = base_with(fx, 9, "session = { deliver = \"relay\"; };\n" RELAY_OPEN
			 "  server = \"https://api.example.org\";\n" RELAY_CA);
	p = load_text(text, &err);
	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	assert_int_equal(p->session.deliver, KH_DELIVER_RELAY);
	assert_string_equal(p->relay.run_as, "kubehsm");
	assert_string_equal(p->relay.rundir, "/run/kubehsm-relayd");
	assert_int_equal(p->relay.handshake_timeout, 10);
	assert_int_equal(p->relay.idle_timeout, 3600);
	assert_int_equal(p->relay.max_sessions, 1024);
	assert_int_equal(p->relay.max_connections_per_user, 128);
	assert_string_equal(p->relay.clusters[0].server_host, "api.example.org");
	assert_int_equal(p->relay.clusters[0].server_port, 443);
	assert_true(kh_policy_delivers_to_relay(p));
	assert_false(kh_policy_delivers_to_exec(p));
	kh_policy_free(p);
	free(text);

	/* The relay alone holds the key: a ttl over 24h needs no override. */
	text = base_with(fx, 9, "session = { ttl = \"3d\"; deliver = \"relay\"; };\n" RELAY_OPEN
			 "  server = \"https://api.example.org\";\n" RELAY_CA);
	p = load_text(text, &err);
	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	kh_policy_free(p);
	free(text);

	/* No relay section: nothing configured, printed as a comment. */
	text = base_with(fx, 0, "");
	p = load_text(text, &err);
	assert_non_null(p);
	assert_false(p->relay.configured);
	assert_null(kh_policy_relay_cluster_for(p, ""));
	out = print_policy(p);
	assert_non_null(strstr(out, "# relay: not configured"));
	free(out);
	kh_policy_free(p);
	free(text);
}

static const struct bad_case relay_bad_cases[] = {
	{ 9, "session = { deliver = \"proxy\"; };", 9,
	  "session.deliver: unknown value \"proxy\"; valid: exec, relay, both" },
	{ 9, "session = { deliver = \"relay\"; };", 9,
	  "session.deliver = \"relay\" needs a relay section" },
	{ 9, "session = { scope = \"session\"; deliver = \"both\"; };\n" RELAY_OPEN
	  "  server = \"https://a\";\n" RELAY_CA, 9, "needs session.scope = \"user\"" },
	{ 11, POLKIT_LINE "relay = { clusters = ( ); };", 12, "1 to 64 clusters" },
	{ 11, POLKIT_LINE "relay = { run_as = \"root\"; };", 12, "dedicated system user (not root)" },
	{ 11, POLKIT_LINE "relay = { run_as = \"a b\"; };", 12, "relay.run_as \"a b\"" },
	{ 11, POLKIT_LINE "relay = { };", 12, "relay.clusters is required" },
	{ 11, POLKIT_LINE "relay = { clusters = { }; };", 12, "must be a list of groups" },
	{ 11, POLKIT_LINE "relay = { cluster = ( ); };", 12,
	  "unknown key 'cluster' in section 'relay' (did you mean 'clusters'?)" },
	{ 11, POLKIT_LINE "relay = { rundir = \"run\"; };", 12, "relay.rundir must be an absolute path" },
	{ 11, POLKIT_LINE "relay = { idle_timeout = \"1s\"; };", 12, "out of range" },
	{ 11, POLKIT_LINE "relay = { handshake_timeout = 10; };", 12, "duration string" },
	{ 11, POLKIT_LINE "relay = { max_connections = 20; max_connections_per_user = 21; };", 12,
	  "larger than relay.max_connections" },
	{ 11, POLKIT_LINE "relay = { max_sessions = 0; };", 12, "max_sessions = 0 is out of range" },
	{ 11, POLKIT_LINE "relay = { max_sessions = \"9\"; };", 12, "must be an integer" },
	{ 11, POLKIT_LINE "relay = { clusters = ( { name = \"p\"; listen = 1024;\n"
	  "  server = \"https://a\";\n" RELAY_CA, 12, "a privileged port" },
	{ 11, POLKIT_LINE "relay = { clusters = ( { name = \"p\";\n"
	  "  server = \"https://a\";\n" RELAY_CA, 12, "relay.clusters.listen is required" },
	{ 11, POLKIT_LINE "relay = { clusters = ( { name = \"p q\"; listen = 1;\n"
	  "  server = \"https://a\";\n" RELAY_CA, 12, "relay.clusters.name \"p q\"" },
	{ 11, POLKIT_LINE RELAY_OPEN "  server = \"http://a\";\n" RELAY_CA, 13,
	  "must start with https://" },
	{ 11, POLKIT_LINE RELAY_OPEN "  server = \"https://a/api\";\n" RELAY_CA, 13,
	  "no path, query or user" },
	{ 11, POLKIT_LINE RELAY_OPEN "  server = \"https://u@a\";\n" RELAY_CA, 13,
	  "is not a host name" },
	{ 11, POLKIT_LINE RELAY_OPEN "  server = \"https://a:0\";\n" RELAY_CA, 13, "bad port" },
	{ 11, POLKIT_LINE RELAY_OPEN "  server = \"https://a:65536\";\n" RELAY_CA, 13, "bad port" },
	{ 11, POLKIT_LINE RELAY_OPEN "  server = \"https://[::1\";\n" RELAY_CA, 13, "missing ']'" },
	{ 11, POLKIT_LINE RELAY_OPEN "  server = \"https://[zz]\";\n" RELAY_CA, 13,
	  "is not a host name" },
	{ 11, POLKIT_LINE RELAY_OPEN "  server = \"https://a\"; ca_file = \"@D@/none.pem\"; } ); };",
	  13, "relay.clusters.ca_file @D@/none.pem: No such file" },
	{ 11, POLKIT_LINE RELAY_OPEN "  server = \"https://a\"; server_name = \"a b\";\n" RELAY_CA, 13,
	  "server_name \"a b\" is not a host name" },
	{ 11, POLKIT_LINE RELAY_OPEN "  server = \"https://a\"; issuer = \"nope\";\n" RELAY_CA, 13,
	  "issuer \"nope\" names no configured issuer" },
	{ 11, POLKIT_LINE RELAY_OPEN "  server = \"https://a\"; sni = \"a\";\n" RELAY_CA, 13,
	  "unknown key 'sni' in section 'relay.clusters'" },
	{ 11, POLKIT_LINE RELAY_OPEN "  server = \"https://a\"; ca_file = \"@D@/ca.pem\"; },\n"
	  "  { name = \"prod\"; listen = 645; server = \"https://b\"; ca_file = \"@D@/ca.pem\"; } ); };",
	  14, "relay.clusters.name \"prod\" is used twice" },
	{ 11, POLKIT_LINE RELAY_OPEN "  server = \"https://a\"; ca_file = \"@D@/ca.pem\"; },\n"
	  "  { name = \"p2\"; listen = 644; server = \"https://b\"; ca_file = \"@D@/ca.pem\"; } ); };",
	  14, "relay.clusters.listen 644 is used twice" },
};

static void
test_relay_bad(void **state)
{
	struct fixture *fx = *state;
	size_t i, n = sizeof(relay_bad_cases) / sizeof(relay_bad_cases[0]);

	for (i = 0; i < n; i++) {
		struct bad_case c = relay_bad_cases[i];
		char *want = subst_dir(fx, c.want);

		c.want = want;
		check_bad(fx, &c, i);
		free(want);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_base_loads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sample_loads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forward_socket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_value_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_issuers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_configs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pin_file_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pin_file_symlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_file_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parent_dirs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trust_domains, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_lists, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_ttl, setup, teardown),
		cmocka_unit_test_setup_teardown(test_all_or_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_print, setup, teardown),
		cmocka_unit_test_setup_teardown(test_print_two_issuers_escapes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relay_loads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relay_bad, setup, teardown),
	};

	return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
