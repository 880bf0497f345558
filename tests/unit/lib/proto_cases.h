/*
 * proto_cases — what the protocol codecs' tests share.
 *
 * Malformed inputs are tables: every row is its own TAP line, named in
 * the table, so a refused case says which one.  The codecs' tests
 * (test_exec_proto, test_signer_proto) list their tables and their fixed
 * tests, and run_tables makes one cmocka group of them.
 */
#ifndef PROTO_CASES_H
#define PROTO_CASES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib/kh_error.h"

struct bad_case {
	const char *name;
	const char *json;    /* NULL: built by `build` */
	size_t len;          /* 0: strlen(json) */
	enum kh_errcode code;
	const char *needle;  /* must appear in the message */
	char *(*build)(size_t *len);
};

/* Parse c's input with parse: it must fail with c->code and a one-line
 * message containing c->needle. */
void run_bad(const struct bad_case *c, int (*parse)(const char *, size_t, kh_error *));

/* A string of n copies of c, NUL-terminated. */
char *repeat(char c, size_t n);
/* asprintf that cannot fail (caller frees). */
char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

/* Rows of a table, each struct starting with its name (const char *):
 * one test per row, run by fn with the row as its state. */
struct row_table {
	const void *rows;
	size_t n;
	size_t size;            /* of one row */
	CMUnitTestFunction fn;
};

/* Run fixed, then every row of every table, as one group. */
int run_tables(const char *group, const struct CMUnitTest *fixed, size_t nfixed,
	       const struct row_table *tables, size_t ntables);

#endif
