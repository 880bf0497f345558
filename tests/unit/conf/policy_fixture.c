/*
 * policy_fixture — the policy tests' private directory, base policy and
 * assertions (policy_fixture.h says how they fit together).
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
#include <unistd.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tests/unit/conf/policy_fixture.h"

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

void
write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

char *
path_in(const struct fixture *fx, const char *name)
{
	char *p = NULL;

	assert_true(asprintf(&p, "%s/%s", fx->dir, name) > 0);
	return p;
}

/* Replace every @D@ with the fixture directory. */
char *
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
char *
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

struct kh_policy_load_opts
test_opts(void)
{
	struct kh_policy_load_opts o = { .trusted_uid = geteuid(), .skip_file_checks = false };

	return o;
}

struct kh_policy *
load_text(const char *text, kh_error *err)
{
	struct kh_policy_load_opts o = test_opts();

	return kh_policy_load_string(text, "test.conf", &o, err);
}

/* Error must be "<name>:<line>: ..." (line 0: "<name>: ...") and contain `want`. */
void
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

char *
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

int
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

int
teardown(void **state)
{
	struct fixture *fx = *state;

	/* Depth first, never following links the tests planted. */
	if (nftw(fx->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "# could not remove %s: %s\n", fx->dir, strerror(errno));
	free(fx);
	return 0;
}

void
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
