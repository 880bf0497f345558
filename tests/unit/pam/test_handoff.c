/*
 * test_handoff — what the session step and setcred accept as
 * PAM_KUBEHSM_HANDOFF, the handle of the auth → session stash
 * (pam/kh_pam_handoff.c): exactly 32 lower-case hex digits, removed from
 * the PAM environment whatever it is, never logged in full, a malformed
 * one never reaching the file system.  The stash directory is the test's
 * own (fakes.c).
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>
#include <keyutils.h>

#include "pam/kh_pam.h"
#include "tests/fakepam/fakepam.h"
#include "tests/unit/pam/fakes.h"

#define HANDLE "0123456789abcdef0123456789abcdef"
#define PEM "-----BEGIN CERTIFICATE-----\n"
#define NO_AUTH "user 'alice': no kubehsm authentication in this login; no kube " \
	"credentials cached"

/* Values that are not a handle kubehsm makes. */
static const char *const malformed[] = {
	"",
	"0123456789abcdef",                          /* short */
	HANDLE "0",                                  /* long */
	"0123456789ABCDEF0123456789ABCDEF",          /* upper case */
	"0123456789abcdef0123456789abcdeg",          /* not hex */
	"../../../../../../../../etc/shadow",        /* a path */
	"0123456789abcdef/123456789abcdef",
	"0123456789abcdef0123456789abcde\n",
	" 0123456789abcdef0123456789abcdef",
};
#define NMALFORMED (sizeof(malformed) / sizeof(malformed[0]))

/* A handle whose PAM environment has PAM_KUBEHSM_HANDOFF=value. */
static pam_handle_t *
with_handle(const char *value, const char *service)
{
	char *setting = fake_asprintf("%s=%s", KH_HANDOFF_ENV, value);
	pam_handle_t *pamh;

	pamh = fakepam_start(&(struct fakepam_config){
		.user = FAKE_USER, .service = service,
		.env = (const char *const[]){ setting, NULL } });
	free(setting);
	return pamh;
}

static bool
handoff_dir_exists(void)
{
	char path[256];
	struct stat st;

	(void)snprintf(path, sizeof(path), "%s/handoff", fake_rundir());
	return stat(path, &st) == 0;
}

/* The variable is gone from the environment the user's shell gets. */
static void
assert_handle_removed(pam_handle_t *pamh)
{
	char **env = pam_getenvlist(pamh);

	assert_null(pam_getenv(pamh, KH_HANDOFF_ENV));
	assert_non_null(env);
	for (size_t i = 0; env[i] != NULL; i++) {
		assert_null(strstr(env[i], KH_HANDOFF_ENV));
		free(env[i]);
	}
	free(env);
}

/* ---- the session step ---------------------------------------------------- */

/* open_session, without login state, of a handle with PAM_KUBEHSM_HANDOFF
 * set to `value`: the variable is dropped with the notice `why`, and the
 * login is one without kubehsm authentication. */
static void
expect_dropped(const char *value, const char *why)
{
	pam_handle_t *pamh = with_handle(value, NULL);
	const char *argv[] = { fake_policy_option(NULL) };

	assert_int_equal(pam_sm_open_session(pamh, 0, 1, argv), PAM_IGNORE);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, why }, { LOG_NOTICE, NO_AUTH }));
	assert_handle_removed(pamh);
	fakepam_end(pamh);
}

/* A malformed handle is dropped from the environment and logged without
 * its value; no file is looked for; the login is one without kubehsm
 * authentication. */
static void
t_session_malformed(void **state)
{
	for (size_t i = 0; i < NMALFORMED; i++) {
		expect_dropped(malformed[i], "ignoring a malformed PAM_KUBEHSM_HANDOFF in the "
			       "PAM environment");
		assert_false(handoff_dir_exists());
	}
	assert_int_equal(fake_cache.counts, (int)NMALFORMED);
}

/* A well-formed handle without a stash: dropped too, logged by its first 8
 * digits only. */
static void
t_session_unknown_handle(void **state)
{
	expect_dropped(HANDLE, "authentication hand-off 01234567...: already used or "
		       "expired; not used");
}

/* With the login state in the handle (auth ran in this process), the
 * hand-off is still consumed, and the state is what the session uses. */
static void
t_session_consumes_handle_beside_state(void **state)
{
	pam_handle_t *pamh = with_handle(HANDLE, NULL);
	const char *argv[] = { fake_policy_option(NULL) };

	assert_int_equal(kh_pam_login_save(pamh, fake_login(PEM)), PAM_SUCCESS);
	assert_int_equal(pam_sm_open_session(pamh, 0, 1, argv), PAM_SESSION_ERR);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_NOTICE, "authentication hand-off 01234567...: already used or expired; "
			      "not used" },
		{ LOG_NOTICE, "user 'alice': issuer (default): session credential: PIN file "
			      "/nonexistent/issuer.pin: No such file or directory (config)" }));
	assert_handle_removed(pamh);
	fakepam_end(pamh);
}

/* ---- the stash behind a handle ------------------------------------------- */

/* Stash a login from a handle of `service`; the handle's value. */
static char *
put(const char *service)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){
		.user = FAKE_USER, .service = service });
	struct kh_pam_login *l = fake_login(PEM);
	const char *h;
	char *handle;

	assert_int_equal(kh_pam_handoff_put(pamh, l), PAM_SUCCESS);
	assert_non_null(h = pam_getenv(pamh, KH_HANDOFF_ENV));
	assert_int_equal(strlen(h), 32);
	assert_int_equal(strspn(h, "0123456789abcdef"), 32);
	assert_non_null(handle = strdup(h));
	kh_pam_login_free(l);
	fakepam_end(pamh);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	return handle;
}

static char *
stash_path(const char *handle)
{
	return fake_asprintf("%s/handoff/%s", fake_rundir(), handle);
}

/* The notice of a hand-off not used: the handle's first 8 digits only. */
static void
expect_not_used(const char *handle, const char *why)
{
	char *line = fake_asprintf("authentication hand-off %.8s...: %s; not used", handle, why);

	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, line }));
	free(line);
}

/* Beside the login state, a stash is removed unread, and its PIN key with
 * it; a malformed handle is dropped and logged as the session step logs it
 * without state. */
static void
t_session_discards_stash_beside_state(void **state)
{
	char *handle = put("sshd"), *path = stash_path(handle);
	const char *argv[] = { fake_policy_option(NULL) };
	pam_handle_t *pamh = with_handle(handle, "sshd");
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(kh_pam_login_save(pamh, fake_login(PEM)), PAM_SUCCESS);
	assert_int_equal(pam_sm_open_session(pamh, 0, 1, argv), PAM_SESSION_ERR);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_NOTICE, "user 'alice': issuer (default): session credential: PIN file "
			      "/nonexistent/issuer.pin: No such file or directory (config)" }));
	assert_int_not_equal(stat(path, &st), 0);
	assert_handle_removed(pamh);
	fakepam_end(pamh);

	pamh = with_handle(malformed[5], NULL);
	assert_int_equal(kh_pam_login_save(pamh, fake_login(PEM)), PAM_SUCCESS);
	assert_int_equal(pam_sm_open_session(pamh, 0, 1, argv), PAM_SESSION_ERR);
	fakepam_expect_log(FAKEPAM_LOG(
		{ LOG_NOTICE, "ignoring a malformed PAM_KUBEHSM_HANDOFF in the PAM environment" },
		{ LOG_NOTICE, "user 'alice': issuer (default): session credential: PIN file "
			      "/nonexistent/issuer.pin: No such file or directory (config)" }));
	assert_handle_removed(pamh);
	fakepam_end(pamh);
	free(path);
	free(handle);
}

/* The handle names a private file that only root's may be: single use. */
static void
t_stash_round_trip(void **state)
{
	char *handle = put("sshd"), *path = stash_path(handle);
	pam_handle_t *pamh = with_handle(handle, "sshd");
	struct kh_pam_login *l = NULL;
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	if (geteuid() != 0) {
		/* An unprivileged test owns its stash: refused, as anyone's but
		 * root's must be. */
		assert_int_equal(kh_pam_handoff_take(pamh, &l), -1);
		expect_not_used(handle, "not a root-only file");
	} else {
		assert_int_equal(kh_pam_handoff_take(pamh, &l), 1);
		assert_string_equal(l->user, FAKE_USER);
		assert_int_equal(l->uid, FAKE_UID);
		assert_string_equal(l->token_uri, "pkcs11:token=alice;object=kube");
		assert_int_equal(l->ngroups, 2);
		assert_string_equal(l->groups[1], "team-a");
		assert_null(l->pin);
		kh_pam_login_free(l);
		assert_int_not_equal(stat(path, &st), 0);
		fakepam_expect_log(FAKEPAM_NO_LOG);
	}
	assert_handle_removed(pamh);
	fakepam_end(pamh);

	/* Used once: gone (a refused one stays refused). */
	pamh = with_handle(handle, "sshd");
	assert_int_equal(kh_pam_handoff_take(pamh, &l), -1);
	expect_not_used(handle, geteuid() == 0 ? "already used or expired" :
			"not a root-only file");
	fakepam_end(pamh);
	free(path);
	free(handle);
}

/* A second authentication in one handle replaces the first stash, and the
 * first PIN key (session.cache_pin) with it: nothing would take that key,
 * and it would sit in root's user keyring until it timed out.  Root only:
 * only root's hand-off keeps a PIN key. */
static void
t_second_auth_drops_first_pin(void **state)
{
	pam_handle_t *pamh;
	struct kh_pam_login *l;
	char *first, *desc;

	if (geteuid() != 0)
		skip();
	pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER, .service = "sshd" });
	l = fake_login(PEM);
	assert_non_null(l->pin = strdup("4711"));
	assert_int_equal(kh_pam_handoff_put(pamh, l), PAM_SUCCESS);
	assert_non_null(first = strdup(pam_getenv(pamh, KH_HANDOFF_ENV)));
	desc = fake_asprintf("kubehsm:handoff-pin:%s", first);
	assert_true(keyctl_search(KEY_SPEC_USER_KEYRING, "user", desc, 0) > 0);
	assert_int_equal(kh_pam_handoff_put(pamh, l), PAM_SUCCESS);
	assert_string_not_equal(pam_getenv(pamh, KH_HANDOFF_ENV), first);
	assert_true(keyctl_search(KEY_SPEC_USER_KEYRING, "user", desc, 0) < 0);
	kh_pam_handoff_discard(pamh);      /* the second stash and its key */
	fakepam_expect_log(FAKEPAM_NO_LOG);
	kh_pam_login_free(l);
	fakepam_end(pamh);
	free(desc);
	free(first);
}

/* Made by one PAM service, it is no use to another. */
static void
t_stash_other_service(void **state)
{
	char *handle = put("sshd");
	pam_handle_t *pamh = with_handle(handle, "su");
	struct kh_pam_login *l = NULL;

	assert_int_equal(kh_pam_handoff_take(pamh, &l), -1);
	expect_not_used(handle, geteuid() == 0 ? "made by another PAM service" :
			"not a root-only file");
	fakepam_end(pamh);
	free(handle);
}

/* A stash others may read, or a link in its place, is refused. */
static void
t_stash_not_private(void **state)
{
	char *handle = put("sshd"), *path = stash_path(handle);
	pam_handle_t *pamh;
	struct kh_pam_login *l = NULL;

	assert_int_equal(chmod(path, 0640), 0);
	pamh = with_handle(handle, "sshd");
	assert_int_equal(kh_pam_handoff_take(pamh, &l), -1);
	expect_not_used(handle, "not a root-only file");
	fakepam_end(pamh);

	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	pamh = with_handle(handle, "sshd");
	assert_int_equal(kh_pam_handoff_take(pamh, &l), -1);
	expect_not_used(handle, strerror(ELOOP));
	fakepam_end(pamh);
	free(path);
	free(handle);
}

/* ---- setcred ------------------------------------------------------------- */

/* setcred says what auth did: nothing of kubehsm's here is
 * PAM_AUTHINFO_UNAVAIL (the stacks route that to the password path). */
static void
t_setcred_nothing(void **state)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });

	assert_int_equal(pam_sm_setcred(pamh, PAM_ESTABLISH_CRED, 0, NULL),
			 PAM_AUTHINFO_UNAVAIL);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	fakepam_end(pamh);
}

static void
t_setcred_after_auth_in_process(void **state)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });

	assert_int_equal(kh_pam_login_save(pamh, fake_login(PEM)), PAM_SUCCESS);
	assert_int_equal(pam_sm_setcred(pamh, PAM_ESTABLISH_CRED, 0, NULL), PAM_SUCCESS);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	fakepam_end(pamh);
}

/* sshd's monitor: auth ran in a child, its handle came back in the
 * environment.  setcred answers success and leaves the handle and its
 * stash for open_session.  (An unprivileged test owns its stash, which no
 * root-run module may trust: refused like anyone's but root's.) */
static void
t_setcred_after_auth_elsewhere(void **state)
{
	char *handle = put("sshd"), *path = stash_path(handle);
	pam_handle_t *pamh = with_handle(handle, "sshd");
	struct stat st;

	assert_int_equal(pam_sm_setcred(pamh, PAM_ESTABLISH_CRED, 0, NULL),
			 geteuid() == 0 ? PAM_SUCCESS : PAM_AUTHINFO_UNAVAIL);
	assert_string_equal(pam_getenv(pamh, KH_HANDOFF_ENV), handle);
	assert_int_equal(stat(path, &st), 0);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	fakepam_end(pamh);
	free(path);
	free(handle);
}

/* A handle with no stash behind it, or one the session step would refuse
 * (made by another service), is no authentication either: setcred says so
 * as open_session would, and logs nothing (open_session does, once). */
static void
t_setcred_no_stash(void **state)
{
	pam_handle_t *pamh = with_handle(HANDLE, "sshd");
	char *handle;

	assert_int_equal(pam_sm_setcred(pamh, PAM_ESTABLISH_CRED, 0, NULL),
			 PAM_AUTHINFO_UNAVAIL);
	assert_string_equal(pam_getenv(pamh, KH_HANDOFF_ENV), HANDLE);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	fakepam_end(pamh);

	handle = put("sshd");
	pamh = with_handle(handle, "su");
	assert_int_equal(pam_sm_setcred(pamh, PAM_ESTABLISH_CRED, 0, NULL),
			 PAM_AUTHINFO_UNAVAIL);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	fakepam_end(pamh);
	free(handle);
}

/*
 * A value that is no handle kubehsm makes is PAM_AUTHINFO_UNAVAIL, as no
 * value at all: the session step refuses the same values
 * (t_session_malformed), so a success here would let a stack skip the
 * password for a login that open_session then treats as unauthenticated
 * (issue 25).  setcred leaves the variable for open_session, which drops it
 * and logs once.
 */
static void
t_setcred_malformed(void **state)
{
	for (size_t i = 0; i < NMALFORMED; i++) {
		pam_handle_t *pamh = with_handle(malformed[i], "sshd");

		assert_int_equal(pam_sm_setcred(pamh, PAM_ESTABLISH_CRED, 0, NULL),
				 PAM_AUTHINFO_UNAVAIL);
		fakepam_expect_log(FAKEPAM_NO_LOG);
		fakepam_end(pamh);
	}
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fakes_setup, fakes_teardown)
	const struct CMUnitTest tests[] = {
		T(t_session_malformed),
		T(t_session_unknown_handle),
		T(t_session_consumes_handle_beside_state),
		T(t_session_discards_stash_beside_state),
		T(t_stash_round_trip),
		T(t_second_auth_drops_first_pin),
		T(t_stash_other_service),
		T(t_stash_not_private),
		T(t_setcred_nothing),
		T(t_setcred_after_auth_in_process),
		T(t_setcred_after_auth_elsewhere),
		T(t_setcred_no_stash),
		T(t_setcred_malformed),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
