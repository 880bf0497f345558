/*
 * policy_fixture — what the policy loader's tests share.
 *
 * Every test gets a private directory holding stand-ins for the files a
 * policy names (module, CA, issuer certificate, a 0600 PIN file), owned by
 * whoever runs the test; the loader is told to trust that uid.  Bad
 * configurations are written as one valid base policy with one line
 * replaced, so each case states exactly which line the error must name.
 *
 * The base policy, one line a section:
 *   1 version  2 pkcs11  3 token  4 trust  5 identity  6-8 issuer
 *   9 session  10 signer  11 polkit
 */
#ifndef POLICY_FIXTURE_H
#define POLICY_FIXTURE_H

#include <sys/types.h>

#include "conf/kh_policy.h"
#include "lib/kh_error.h"

#define PIN_SECRET "PIN-CONTENT-4711-never-printed"

struct fixture {
	char dir[64];
	char sub[96];   /* dir/etc: where config files under test live */
};

/* cmocka set-up and tear-down: the private directory and its files. */
int setup(void **state);
int teardown(void **state);

/* Write text to path and chmod it to mode. */
void write_file(const char *path, const char *text, mode_t mode);
/* fx->dir/name (caller frees). */
char *path_in(const struct fixture *fx, const char *name);
/* text with every @D@ replaced by the fixture directory (caller frees). */
char *subst_dir(const struct fixture *fx, const char *text);
/* The base policy with line `line` (1-based) replaced; 0 replaces nothing. */
char *base_with(const struct fixture *fx, int line, const char *replacement);

/* Load options that trust the uid running the test. */
struct kh_policy_load_opts test_opts(void);
/* kh_policy_load_string as "test.conf" with test_opts(). */
struct kh_policy *load_text(const char *text, kh_error *err);
/* Error must be "<name>:<line>: ..." (line 0: "<name>: ...") and contain `want`. */
void assert_error_at(const kh_error *err, const char *name, int line, const char *want);
/* kh_policy_print into a new string (caller frees). */
char *print_policy(const struct kh_policy *p);

/* A policy that must be refused, and what the error must say. */
struct bad_case {
	int replace;            /* base line replaced (1-based); 0 = whole text given */
	const char *text;
	int line;               /* line the error must name; 0 = none */
	const char *want;       /* substring of the message */
};

/* Refused with c->line and c->want (idx names the case when it is not). */
void check_bad(const struct fixture *fx, const struct bad_case *c, size_t idx);

#endif
