/*
 * Unit tests for helper/kh_scan_yaml: the kubeconfig loader `kubehsm admin
 * scan` runs as root over users' files — YAML and JSON alike, aliases,
 * duplicate keys and deep nesting refused, reasons that never quote the
 * file, and a tree wiped before it is freed.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "helper/kh_scan.h"

static json_t *
load_ok(const char *text)
{
	json_t *doc = NULL;
	kh_error err;

	if (kh_scan_yaml_load(text, strlen(text), &doc, &err) != 0) {
		print_error("refused: %s\n", err.msg);
		fail();
	}
	assert_non_null(doc);
	return doc;
}

/* The token of users[0], as a string. */
static const char *
first_token(json_t *doc)
{
	return json_string_value(json_object_get(
		json_object_get(json_array_get(json_object_get(doc, "users"), 0), "user"), "token"));
}

static void
test_yaml_and_json(void **state)
{
	static const char *const docs[] = {
		"apiVersion: v1\nkind: Config\nusers:\n- name: a\n  user:\n    token: tok-1\n",
		"{\"apiVersion\": \"v1\", \"users\": [{\"name\": \"a\", \"user\": {\"token\": \"tok-1\"}}]}",
		"{\n\t\"users\": [\n\t\t{\"name\": \"a\", \"user\": {\"token\": \"tok-1\"}}\n\t]\n}\n",
		"users: [{name: a, user: {token: 'tok-1'}}]\n---\nusers: [{name: b}]\n",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		json_t *doc = load_ok(docs[i]);

		assert_string_equal(first_token(doc), "tok-1");
		kh_scan_json_wipe_free(doc);
	}
}

static void
test_scalars_are_strings(void **state)
{
	json_t *doc = load_ok("a: 1\nb: true\nc: null\nd: ~\n");

	(void)state;
	assert_string_equal(json_string_value(json_object_get(doc, "a")), "1");
	assert_string_equal(json_string_value(json_object_get(doc, "b")), "true");
	assert_string_equal(json_string_value(json_object_get(doc, "c")), "null");
	kh_scan_json_wipe_free(doc);
	doc = load_ok("");
	assert_true(json_is_null(doc));
	json_decref(doc);
}

static void
test_refused(void **state)
{
	static const struct { const char *in, *why; } bad[] = {
		{ "a: &x s3cr3t-value\nb: *x\n", "aliases" },
		{ "token: s3cr3t-value\ntoken: other\n", "a key given twice" },
		{ "? [s3cr3t-value]\n: v\n", "not a scalar" },
		{ "users: [ {token: s3cr3t-value\n", "not YAML: line " },
		{ "token: \"s3cr3t-value\n", "not YAML: line " },
		{ "\tusers: s3cr3t-value\n", "not YAML: line " },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *doc = (json_t *)0x1;
		kh_error err;

		kh_error_clear(&err);
		if (kh_scan_yaml_load(bad[i].in, strlen(bad[i].in), &doc, &err) == 0) {
			print_error("accepted: %s\n", bad[i].in);
			fail();
		}
		assert_null(doc);
		assert_int_equal(err.code, KH_ERR_INPUT);
		if (strstr(err.msg, bad[i].why) == NULL) {
			print_error("'%s': '%s' lacks '%s'\n", bad[i].in, err.msg, bad[i].why);
			fail();
		}
		/* The reason says where, never what. */
		assert_null(strstr(err.msg, "s3cr3t"));
	}
}

static void
test_depth_bound(void **state)
{
	char deep[4 * (KH_SCAN_YAML_MAX_DEPTH + 2) + 1];
	json_t *doc = NULL;
	kh_error err;
	size_t i, n = 0;

	(void)state;
	/* KH_SCAN_YAML_MAX_DEPTH levels load, one more does not. */
	for (i = 0; i < KH_SCAN_YAML_MAX_DEPTH; i++)
		deep[n++] = '[';
	for (i = 0; i < KH_SCAN_YAML_MAX_DEPTH; i++)
		deep[n++] = ']';
	assert_int_equal(kh_scan_yaml_load(deep, n, &doc, &err), 0);
	kh_scan_json_wipe_free(doc);
	n = 0;
	for (i = 0; i <= KH_SCAN_YAML_MAX_DEPTH; i++)
		deep[n++] = '[';
	for (i = 0; i <= KH_SCAN_YAML_MAX_DEPTH; i++)
		deep[n++] = ']';
	assert_int_equal(kh_scan_yaml_load(deep, n, &doc, &err), -1);
	assert_non_null(strstr(err.msg, "nested deeper"));
}

static void
test_wipe(void **state)
{
	json_t *doc = load_ok("users:\n- user: {token: tok-wipe-me, password: pw-wipe-me}\n");
	json_t *user = json_object_get(json_array_get(json_object_get(doc, "users"), 0), "user");
	json_t *tok = json_object_get(user, "token"), *pw = json_object_get(user, "password");
	size_t tl = json_string_length(tok), pl = json_string_length(pw);
	static const char zeros[32];

	(void)state;
	/* Hold the strings past the tree's free to see what was left in them. */
	json_incref(tok);
	json_incref(pw);
	kh_scan_json_wipe_free(doc);
	assert_memory_equal(json_string_value(tok), zeros, tl);
	assert_memory_equal(json_string_value(pw), zeros, pl);
	json_decref(tok);
	json_decref(pw);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yaml_and_json),
		cmocka_unit_test(test_scalars_are_strings),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_depth_bound),
		cmocka_unit_test(test_wipe),
	};

	return cmocka_run_group_tests_name("scan_yaml", tests, NULL, NULL);
}
