/*
 * proto_cases — the table runner and string builders the protocol codecs'
 * tests share (proto_cases.h).
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

#include "tests/unit/lib/proto_cases.h"

char *
repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

char *
fmt(const char *f, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, f);
	assert_true(vasprintf(&s, f, ap) >= 0);
	va_end(ap);
	return s;
}

void
run_bad(const struct bad_case *c, int (*parse)(const char *, size_t, kh_error *))
{
	kh_error err;
	char *built = NULL;
	const char *json = c->json;
	size_t len = c->len;

	if (c->build != NULL)
		json = built = c->build(&len);
	else if (len == 0)
		len = strlen(json);
	kh_error_clear(&err);
	assert_int_equal(parse(json, len, &err), -1);
	if (err.code != c->code)
		fail_msg("code %s, want %s (%s)", kh_errcode_name(err.code),
		         kh_errcode_name(c->code), err.msg);
	if (strstr(err.msg, c->needle) == NULL)
		fail_msg("message '%s' lacks '%s'", err.msg, c->needle);
	assert_null(strchr(err.msg, '\n'));
	free(built);
}

int
run_tables(const char *group, const struct CMUnitTest *fixed, size_t nfixed,
	   const struct row_table *tables, size_t ntables)
{
	size_t total = nfixed, i, j, k = 0;
	struct CMUnitTest *tests;
	int rc;

	for (i = 0; i < ntables; i++)
		total += tables[i].n;
	tests = calloc(total, sizeof(*tests));
	if (tests == NULL)
		return 1;
	for (i = 0; i < nfixed; i++)
		tests[k++] = fixed[i];
	for (i = 0; i < ntables; i++) {
		for (j = 0; j < tables[i].n; j++) {
			const void *row = (const char *)tables[i].rows + j * tables[i].size;

			tests[k++] = (struct CMUnitTest){ *(const char *const *)row, tables[i].fn,
			                                  NULL, NULL, (void *)row };
		}
	}
	rc = _cmocka_run_group_tests(group, tests, total, NULL, NULL);
	free(tests);
	return rc;
}
