/*
 * Unit tests for what kubehsm-relayd writes itself: its HTTP answers
 * (relay/kh_rdeny: a Status body and a Warning header kubectl prints) and
 * its audit lines (relay/kh_raudit: one JSON object per line that no path
 * can break or forge).
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
#include <jansson.h>

#include "relay/kh_raudit.h"
#include "relay/kh_rdeny.h"

static void
test_deny_has_warning_and_status(void **state)
{
	char buf[KH_RDENY_MAX];
	const char *body;
	json_t *j;
	int n;

	(void)state;
	n = kh_rdeny_format(401, "kubehsm-relayd: uid 1001 has no kube session for cluster prod",
			    buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(strncmp(buf, "HTTP/1.1 401 Unauthorized\r\n", 27), 0);
	assert_non_null(strstr(buf, "\r\nWarning: 299 - \"kubehsm-relayd: uid 1001 has no kube "
				    "session for cluster prod\"\r\n"));
	assert_non_null(strstr(buf, "\r\nConnection: close\r\n"));
	body = strstr(buf, "\r\n\r\n") + 4;
	j = json_loads(body, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "kind")), "Status");
	assert_string_equal(json_string_value(json_object_get(j, "reason")), "Unauthorized");
	assert_int_equal(json_integer_value(json_object_get(j, "code")), 401);
	json_decref(j);
	n = kh_rdeny_format(400, "bad", buf, sizeof(buf));
	assert_int_equal(strncmp(buf, "HTTP/1.1 400 Bad Request\r\n", 26), 0);
	assert_non_null(strstr(buf, "\"reason\":\"BadRequest\""));
	n = kh_rdeny_format(503, "down", buf, sizeof(buf));
	assert_int_equal(strncmp(buf, "HTTP/1.1 503 Service Unavailable\r\n", 34), 0);
}

static void
test_deny_warning_cannot_break_the_header(void **state)
{
	char buf[KH_RDENY_MAX];
	const char *w, *end;

	(void)state;
	assert_true(kh_rdeny_format(503, "a \"quoted\" \\ thing\r\nX-Evil: 1", buf,
				    sizeof(buf)) > 0);
	w = strstr(buf, "Warning: 299 - \"");
	assert_non_null(w);
	end = strstr(w, "\r\n");
	/* One header line: quotes and backslashes escaped, CR LF gone. */
	assert_null(memmem(w, (size_t)(end - w), "X-Evil: 1\r", 10));
	assert_non_null(strstr(w, "a \\\"quoted\\\" \\\\ thing??X-Evil: 1\"\r\n"));
	assert_null(strstr(buf, "\r\nX-Evil"));
	/* Too small a buffer is an error, not a cut answer. */
	assert_int_equal(kh_rdeny_format(401, "x", buf, 40), -1);
}

static struct kh_raudit_rec
sample(void)
{
	static const struct kh_relay_origin o = { .service = "sshd", .rhost = "203.0.113.7",
						  .tty = "ssh" };
	static const struct kh_rprog prog = { .pid = 4711, .exe = "/usr/bin/kubectl",
					      .cmdline = "kubectl delete ns prod" };
	struct kh_raudit_rec r = {
		.kube_uid = "bastion1:alice:3f2a", .prog = &prog,
		.start = { .tv_sec = 1800000000, .tv_nsec = 123456789 },
		.duration_ns = 2310000, .uid = 1001, .user = "alice", .cluster = "prod",
		.method = "GET", .path = "/api/v1/namespaces/default/pods?limit=500",
		.status = 200, .bytes_in = 120, .bytes_out = 1834, .origin = &o,
	};
	return r;
}

static void
test_audit_line(void **state)
{
	struct kh_raudit_rec r = sample();
	char line[KH_RAUDIT_LINE_MAX];
	json_t *j;
	int n;

	(void)state;
	n = kh_raudit_format(&r, line, sizeof(line));
	assert_true(n > 0);
	assert_int_equal(line[n - 1], '\n');
	assert_null(memchr(line, '\n', (size_t)n - 1));
	assert_string_equal(line, "{\"time\":\"2027-01-15T08:00:00.123Z\",\"uid\":1001,"
			    "\"user\":\"alice\",\"cluster\":\"prod\",\"method\":\"GET\","
			    "\"path\":\"/api/v1/namespaces/default/pods?limit=500\",\"status\":200,"
			    "\"bytesIn\":120,\"bytesOut\":1834,\"durationMs\":2.31,\"watch\":false,"
			    "\"upgrade\":false,\"origin\":{\"service\":\"sshd\",\"rhost\":"
			    "\"203.0.113.7\",\"tty\":\"ssh\"},\"kubeUid\":\"bastion1:alice:3f2a\","
			    "\"pid\":4711,\"exe\":\"/usr/bin/kubectl\","
			    "\"cmdline\":\"kubectl delete ns prod\"}\n");
	j = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(j);
	json_decref(j);
}

static void
test_audit_line_cannot_be_forged(void **state)
{
	struct kh_raudit_rec r = sample();
	char line[KH_RAUDIT_LINE_MAX];
	json_t *j;
	int n;

	(void)state;
	/* A path that tries to close the object and start a line of its own. */
	r.path = "/x\"}\n{\"uid\":0,\"user\":\"root\",\"path\":\"\xff\"";
	r.user = NULL;
	r.origin = NULL;
	r.relay_note = "no session";
	r.status = 401;
	n = kh_raudit_format(&r, line, sizeof(line));
	assert_true(n > 0);
	assert_null(memchr(line, '\n', (size_t)n - 1));
	j = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "uid")), 1001);
	assert_true(json_is_null(json_object_get(j, "user")));
	assert_string_equal(json_string_value(json_object_get(j, "path")),
			    "/x\"}%0A{\"uid\":0,\"user\":\"root\",\"path\":\"%FF\"");
	assert_string_equal(json_string_value(json_object_get(j, "relay")), "no session");
	json_decref(j);
	/* Too small: an error, never half a line. */
	assert_int_equal(kh_raudit_format(&r, line, 64), -1);
}

static void
test_audit_program_cannot_forge(void **state)
{
	struct kh_raudit_rec r = sample();
	struct kh_rprog p = { .pid = 99, .cmdline_cut = true };
	char line[KH_RAUDIT_LINE_MAX];
	json_t *j;
	int n;

	(void)state;
	/* A command line (the user's to choose) that tries to end the line,
	 * with a byte that is not UTF-8; no UID. */
	snprintf(p.exe, sizeof(p.exe), "/tmp/x\"\n");
	snprintf(p.cmdline, sizeof(p.cmdline), "sh -c x\"}\n{\"uid\":0 \xff");
	r.prog = &p;
	r.kube_uid = NULL;
	n = kh_raudit_format(&r, line, sizeof(line));
	assert_true(n > 0);
	assert_null(memchr(line, '\n', (size_t)n - 1));
	j = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "uid")), 1001);
	assert_int_equal(json_integer_value(json_object_get(j, "pid")), 99);
	assert_string_equal(json_string_value(json_object_get(j, "exe")), "/tmp/x\"\n");
	assert_string_equal(json_string_value(json_object_get(j, "cmdline")),
			    "sh -c x\"}\n{\"uid\":0 ?");
	assert_true(json_is_true(json_object_get(j, "cmdlineCut")));
	assert_true(json_is_null(json_object_get(j, "kubeUid")));
	json_decref(j);
	/* Not found (pid 0) or not looked up: null, said so. */
	p.pid = 0;
	n = kh_raudit_format(&r, line, sizeof(line));
	j = n > 0 ? json_loads(line, JSON_REJECT_DUPLICATES, NULL) : NULL;
	assert_non_null(j);
	assert_true(json_is_null(json_object_get(j, "pid")));
	assert_true(json_is_null(json_object_get(j, "exe")));
	assert_true(json_is_null(json_object_get(j, "cmdline")));
	json_decref(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deny_has_warning_and_status),
		cmocka_unit_test(test_deny_warning_cannot_break_the_header),
		cmocka_unit_test(test_audit_line),
		cmocka_unit_test(test_audit_line_cannot_be_forged),
		cmocka_unit_test(test_audit_program_cannot_forge),
	};

	return cmocka_run_group_tests_name("relay/kh_rdeny+kh_raudit", tests, NULL, NULL);
}
