/*
 * fakepam — a stand-in for Linux-PAM that the unit tests of pam/ link
 * instead of libpam, so the module's logic runs with no root, no
 * /etc/pam.d, no token daemon and no login program.  The model is Russ
 * Allbery's tests/fakepam in pam-krb5; this one is kubehsm's own.
 *
 * It implements what the module calls (pam_get_item/pam_set_item,
 * pam_get_user, pam_set_data/pam_get_data, pam_getenv/pam_putenv/
 * pam_getenvlist, pam_prompt, pam_syslog, pam_strerror) plus pam_start
 * and pam_end for the tests, following Linux-PAM's documented behaviour:
 * pam_get_data answers a NULL datum as present, pam_set_data calls the
 * replaced datum's cleanup, pam_putenv("NAME") deletes, pam_prompt logs
 * what libpam logs when the conversation fails.  The tests call the
 * module's functions (and its pam_sm_* entry points) directly.
 *
 * What the module says is captured, not sent: syslog lines into a list a
 * test compares against what it expects, and conversation messages checked
 * one by one against a script that also gives the user's answers.  A
 * string registered with fakepam_secret that shows up in a log line, a
 * message or the PAM environment fails the test on the spot.
 *
 * The harness uses cmocka to fail a test; it is not thread-safe.
 */
#ifndef KH_FAKEPAM_H
#define KH_FAKEPAM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <security/pam_appl.h>
#include <security/pam_modules.h>

/* ---- the conversation ---------------------------------------------------- */

/*
 * One message the module must send, exactly, and what the conversation
 * does with it.  A script is an array ended by an entry with text NULL.
 */
struct fakepam_prompt {
	int style;              /* PAM_PROMPT_ECHO_OFF, PAM_ERROR_MSG, ... */
	const char *text;       /* the message, compared exactly */
	const char *reply;      /* prompts: the answer; NULL answers no response
				 * at all (a conversation returning NULL) */
	int rc;                 /* what the conversation returns; 0 is
				 * PAM_SUCCESS (a failing one answers nothing) */
};

#define FAKEPAM_SCRIPT(...) \
	((const struct fakepam_prompt[]){ __VA_ARGS__, { 0, NULL, NULL, 0 } })

/* ---- a PAM handle -------------------------------------------------------- */

struct fakepam_config {
	const char *service;            /* PAM_SERVICE; NULL is "kubehsm-test" */
	const char *user;               /* PAM_USER; NULL leaves it unset */
	const char *authtok;            /* PAM_AUTHTOK; NULL leaves it unset */
	const char *const *env;         /* "NAME=value", NULL-terminated */
	const struct fakepam_prompt *script;  /* NULL: the module must send nothing */
	bool no_conv;                   /* no conversation function at all */
};

/* pam_start with cfg applied; fails the test if it cannot. */
pam_handle_t *fakepam_start(const struct fakepam_config *cfg);

/* Fail the test unless the module sent every scripted message, then
 * pam_end(pamh, PAM_SUCCESS): cleanups run, as at the end of a login. */
void fakepam_end(pam_handle_t *pamh);

/* Messages of the script not sent yet. */
size_t fakepam_script_left(const pam_handle_t *pamh);

/* Replace the conversation script (between two module calls). */
void fakepam_set_script(pam_handle_t *pamh, const struct fakepam_prompt *script);

/* ---- the log ------------------------------------------------------------- */

/* One line the module (or libpam for it) must have logged. */
struct fakepam_line {
	int priority;           /* LOG_ERR, LOG_NOTICE, ... */
	const char *text;       /* compared exactly ... */
	bool prefix;            /* ... or, when set, as the line's beginning */
};

#define FAKEPAM_LOG(...) \
	((const struct fakepam_line[]){ __VA_ARGS__, { 0, NULL, false } })
#define FAKEPAM_NO_LOG ((const struct fakepam_line *)NULL)

/* Fail the test unless the lines logged since the last call (or reset)
 * are exactly `want`, in order; then forget them. */
void fakepam_expect_log(const struct fakepam_line *want);

/* The lines logged so far, for tests that look at them another way. */
size_t fakepam_log_count(void);
const char *fakepam_log_text(size_t i, int *priority);

/* A string that must never appear in a log line, a message to the user or
 * the PAM environment (a PIN, a key).  Kept until fakepam_reset. */
void fakepam_secret(const char *secret);

/* Forget the log, the secrets and the fake account database: the state of
 * a fresh test. */
void fakepam_reset(void);

/* ---- the account database (getpwnam_r, getgrouplist, getgrgid_r) --------- */

/*
 * Linked with $(fakepam_ldflags) (tests/fakepam/local.mk), the module's
 * account and group lookups go to these entries instead of NSS: nothing
 * but what a test adds exists.
 */

/* An account; gecos NULL is "".  A long gecos makes the entry large. */
void fakepam_nss_user(const char *name, uid_t uid, gid_t gid, const char *gecos);

/* getpwnam_r(typed) answers the account `name`, as a case-insensitive or
 * qualified-name directory does. */
void fakepam_nss_alias(const char *typed, const char *name);

/* A group (gid → name). */
void fakepam_nss_group(const char *name, gid_t gid);

/* user is a member of gid (a supplementary group). */
void fakepam_nss_member(const char *user, gid_t gid);

#endif
