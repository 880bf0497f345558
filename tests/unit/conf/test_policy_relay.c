/*
 * Unit tests for the relay section and session.deliver
 * (conf/kh_policy_relay.c): what loads, the defaults, the accessors, and
 * every way a relay section is refused.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/kh_policy.h"
#include "tests/unit/conf/policy_fixture.h"

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
		cmocka_unit_test_setup_teardown(test_relay_loads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relay_bad, setup, teardown),
	};

	return cmocka_run_group_tests_name("policy relay", tests, NULL, NULL);
}
