/*
 * test_groups — the kube groups of a login (pam/kh_pam_groups.c): from
 * the certificate (cert:O, cert:OU), the user's unix groups through the
 * fake account database (unix:<glob>) and fixed names (static:), in rule
 * order and once each; identity.allow_groups/deny_groups, each refusal
 * logged; the KH_RECORD_MAX_GROUPS limit; group entries too large for a
 * first buffer.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/kh_record.h"
#include "pam/kh_pam.h"
#include "tests/fakepam/fakepam.h"
#include "tests/unit/pam/fakes.h"

#define BASE_IDENTITY "identity = { username = \"%u\"; groups = [ \"cert:O\" ]; };\n"

/* The base policy with its identity section replaced. */
static struct kh_policy *
policy(const char *identity)
{
	struct kh_policy_load_opts o = { .trusted_uid = geteuid(), .skip_file_checks = true };
	const char *at = strstr(fake_base_policy, BASE_IDENTITY);
	struct kh_policy *p;
	kh_error err = { 0 };
	char *text;

	assert_non_null(at);
	text = fake_asprintf("%.*s%s\n%s", (int)(at - fake_base_policy), fake_base_policy,
			     identity, at + strlen(BASE_IDENTITY));
	p = kh_policy_load_string(text, "test.conf", &o, &err);
	if (p == NULL)
		fail_msg("%s", err.msg);
	free(text);
	return p;
}

/* kh_pam_kube_groups for alice (gid 1001); fails the test unless the
 * result is `want` (NULL-terminated), in order. */
static void
expect_groups(const char *identity, X509 *cert, const char *const *want)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });
	struct kh_policy *p = policy(identity);
	char **groups = NULL;
	size_t n = 0, nwant = 0;
	kh_error err = { 0 };

	if (kh_pam_kube_groups(pamh, p, cert, FAKE_USER, FAKE_UID, &groups, &n, &err) != 0)
		fail_msg("kh_pam_kube_groups: %s", err.msg);
	while (want[nwant] != NULL)
		nwant++;
	for (size_t i = 0; i < n || i < nwant; i++)
		if (i >= n || i >= nwant || strcmp(groups[i], want[i]) != 0)
			fail_msg("group %zu: \"%s\", expected \"%s\"", i, i < n ? groups[i] : "",
				 i < nwant ? want[i] : "");
	kh_pam_groups_free(groups, n);
	kh_policy_free(p);
	fakepam_end(pamh);
}
#define GROUPS(...) ((const char *const[]){ __VA_ARGS__ NULL })

/* kh_pam_kube_groups must fail: its error. */
static kh_error
expect_failure(const char *identity, X509 *cert)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });
	struct kh_policy *p = policy(identity);
	char **groups = (char **)"unchanged";
	size_t n = 42;
	kh_error err = { 0 };

	assert_int_equal(kh_pam_kube_groups(pamh, p, cert, FAKE_USER, FAKE_UID, &groups, &n,
					    &err), -1);
	assert_ptr_equal(groups, "unchanged");
	assert_int_equal(n, 42);
	kh_policy_free(p);
	fakepam_end(pamh);
	return err;
}

static char *
refused(const char *group)
{
	return fake_asprintf("user 'alice': kube group '%s' is not allowed "
			     "(identity.allow_groups/deny_groups); left out of the session", group);
}

/* ---- sources and order --------------------------------------------------- */

static void
t_rule_order_once_each(void **state)
{
	X509 *cert = fake_cert_new(NULL, "CN", FAKE_USER, "O", "team-a", "O", "team-b",
				   "OU", "ops", NULL);

	fakepam_nss_group("k8s-dev", 2001);
	fakepam_nss_group("wheel", 10);
	fakepam_nss_group("k8s-ops", 2002);
	fakepam_nss_member(FAKE_USER, 2001);
	fakepam_nss_member(FAKE_USER, 10);
	fakepam_nss_member(FAKE_USER, 2002);
	expect_groups("identity = { username = \"%u\"; groups = [ \"cert:O\", \"cert:OU\", "
		      "\"unix:k8s-*\", \"static:viewers\", \"static:team-a\", \"cert:O\" ]; };",
		      cert, GROUPS("team-a", "team-b", "ops", "k8s-dev", "k8s-ops", "viewers",));
	expect_groups("identity = { username = \"%u\"; groups = [ \"static:viewers\", "
		      "\"unix:k8s-*\", \"cert:OU\" ]; };",
		      cert, GROUPS("viewers", "k8s-dev", "k8s-ops", "ops",));
	expect_groups("identity = { username = \"%u\"; groups = [ ]; };", cert, GROUPS());
	fakepam_expect_log(FAKEPAM_NO_LOG);
	X509_free(cert);
}

/* An attribute the certificate lacks adds nothing. */
static void
t_cert_attribute_absent(void **state)
{
	expect_groups("identity = { username = \"%u\"; groups = [ \"cert:OU\", \"cert:O\" ]; };",
		      fake_token.cert, GROUPS());
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* unix: the primary group counts, a gid without a name is skipped, more
 * groups than a first getgrouplist call has room for are all seen. */
static void
t_unix_groups(void **state)
{
	char name[40][16];

	fakepam_nss_group("k8s-primary", 1500);
	fakepam_nss_user("carol", 1003, 1500, NULL);
	fakepam_nss_member("carol", 2999);      /* no such group */
	for (int i = 0; i < 40; i++) {
		(void)snprintf(name[i], sizeof(name[i]), "k8s-g%02d", i);
		fakepam_nss_group(name[i], (gid_t)(3000 + i));
		fakepam_nss_member("carol", (gid_t)(3000 + i));
	}
	{
		pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = "carol" });
		struct kh_policy *p = policy("identity = { username = \"%u\"; groups = "
					     "[ \"unix:k8s-*\" ]; };");
		char **groups = NULL;
		size_t n = 0;
		kh_error err = { 0 };

		assert_int_equal(kh_pam_kube_groups(pamh, p, fake_token.cert, "carol", 1500,
						    &groups, &n, &err), 0);
		assert_int_equal(n, 41);
		assert_string_equal(groups[0], "k8s-primary");
		for (int i = 0; i < 40; i++)
			assert_string_equal(groups[i + 1], name[i]);
		kh_pam_groups_free(groups, n);
		kh_policy_free(p);
		fakepam_end(pamh);
	}
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* A group entry larger than the first 8 KiB buffer is still read; one
 * over 1 MiB fails the mapping, naming the gid. */
static void
t_large_group_entries(void **state)
{
	size_t big = 20000, huge = (1u << 20) + 16;
	char *name = malloc(huge + 1);

	assert_non_null(name);
	memcpy(name, "k8s-", 4);
	memset(name + 4, 'x', big - 4);
	name[big] = '\0';
	fakepam_nss_group(name, 3001);
	fakepam_nss_member(FAKE_USER, 3001);
	expect_groups("identity = { username = \"%u\"; groups = [ \"unix:k8s-*\" ]; };",
		      fake_token.cert, GROUPS(name,));

	memset(name + 4, 'y', huge - 4);
	name[huge] = '\0';
	fakepam_nss_group(name, 3002);
	fakepam_nss_member(FAKE_USER, 3002);
	{
		kh_error err = expect_failure("identity = { username = \"%u\"; groups = "
					      "[ \"unix:k8s-*\" ]; };", fake_token.cert);

		assert_int_equal(err.code, KH_ERR_INTERNAL);
		assert_string_equal(err.msg, "group 3002 of 'alice' does not fit in 1 MiB or "
			"memory ran out");
	}
	fakepam_expect_log(FAKEPAM_NO_LOG);
	free(name);
}

/* ---- allow and deny ------------------------------------------------------ */

/* By default no certificate O= becomes a system: group (system:masters is
 * cluster admin). */
static void
t_default_deny_system(void **state)
{
	X509 *cert = fake_cert_new(NULL, "CN", FAKE_USER, "O", "system:masters", "O", "dev",
				   "O", "system:nodes", NULL);
	char *l1 = refused("system:masters"), *l2 = refused("system:nodes");

	expect_groups(BASE_IDENTITY, cert, GROUPS("dev",));
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, l1 }, { LOG_NOTICE, l2 }));
	free(l1);
	free(l2);
	X509_free(cert);
}

/* A group must match an allow glob and no deny glob, whatever its source:
 * deny wins. */
static void
t_allow_and_deny(void **state)
{
	X509 *cert = fake_cert_new(NULL, "CN", FAKE_USER, "O", "team-a", "O", "team-admin",
				   "O", "other", NULL);
	char *l1 = refused("team-admin"), *l2 = refused("other"), *l3 = refused("k8s-admin");

	expect_groups("identity = { username = \"%u\"; groups = [ \"cert:O\", "
		      "\"static:k8s-view\", \"static:k8s-admin\" ];\n"
		      "  allow_groups = [ \"team-*\", \"k8s-*\" ];\n"
		      "  deny_groups = [ \"*-admin\" ]; };",
		      cert, GROUPS("team-a", "k8s-view",));
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, l1 }, { LOG_NOTICE, l2 },
				       { LOG_NOTICE, l3 }));
	free(l1);
	free(l2);
	free(l3);
	X509_free(cert);
}

/* ---- the limit ----------------------------------------------------------- */

/* n distinct unix groups "k8s-NNN" for alice. */
static void
member_of(int n)
{
	for (int i = 0; i < n; i++) {
		char name[16];

		(void)snprintf(name, sizeof(name), "k8s-%03d", i);
		fakepam_nss_group(name, (gid_t)(4000 + i));
		fakepam_nss_member(FAKE_USER, (gid_t)(4000 + i));
	}
}

/* A record holds KH_RECORD_MAX_GROUPS groups; the mapping takes as many,
 * repeats not counted, and refuses one more rather than cut the list. */
static void
t_group_limit(void **state)
{
	const char *identity = "identity = { username = \"%u\"; groups = [ \"unix:k8s-*\", "
		"\"unix:k8s-0*\", \"static:k8s-000\" ]; };";
	const char *identity_more = "identity = { username = \"%u\"; groups = [ "
		"\"unix:k8s-*\", \"static:one-more\" ]; };";
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });
	struct kh_policy *p;
	char **groups = NULL, want[64];
	size_t n = 0;
	kh_error err = { 0 };

	member_of(KH_RECORD_MAX_GROUPS);
	p = policy(identity);
	assert_int_equal(kh_pam_kube_groups(pamh, p, fake_token.cert, FAKE_USER, FAKE_UID,
					    &groups, &n, &err), 0);
	assert_int_equal(n, KH_RECORD_MAX_GROUPS);
	kh_pam_groups_free(groups, n);
	kh_policy_free(p);
	fakepam_end(pamh);

	err = expect_failure(identity_more, fake_token.cert);
	assert_int_equal(err.code, KH_ERR_REFUSED);
	(void)snprintf(want, sizeof(want), "more than %d kube groups", KH_RECORD_MAX_GROUPS);
	assert_string_equal(err.msg, want);
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* The limit counts groups before allow/deny: refused groups take room
 * too (today's behaviour). */
static void
t_group_limit_before_filtering(void **state)
{
	kh_error err;

	member_of(KH_RECORD_MAX_GROUPS);
	err = expect_failure("identity = { username = \"%u\"; groups = [ \"unix:k8s-*\", "
			     "\"static:system:masters\" ]; };", fake_token.cert);
	assert_int_equal(err.code, KH_ERR_REFUSED);
	assert_non_null(strstr(err.msg, "kube groups"));
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

static void
t_free_nothing(void **state)
{
	kh_pam_groups_free(NULL, 0);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fakes_setup, fakes_teardown)
	const struct CMUnitTest tests[] = {
		T(t_rule_order_once_each),
		T(t_cert_attribute_absent),
		T(t_unix_groups),
		T(t_large_group_entries),
		T(t_default_deny_system),
		T(t_allow_and_deny),
		T(t_group_limit),
		T(t_group_limit_before_filtering),
		T(t_free_nothing),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
