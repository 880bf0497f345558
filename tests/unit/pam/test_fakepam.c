/*
 * test_fakepam — the harness the pam/ tests stand on (tests/fakepam).  It
 * must behave as Linux-PAM does where the module relies on it, and it must
 * fail a test that expects what did not happen, or a test would pass
 * vacuously.  The second half runs each such mistake in a child process
 * (this program again, asked for one case) and checks it failed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>
#include <security/pam_ext.h>

#include "tests/fakepam/fakepam.h"

static int
reset(void **state)
{
	fakepam_reset();
	return 0;
}

/* ---- Linux-PAM's behaviour ----------------------------------------------- */

static int cleanups, last_status;

static void
count_cleanup(pam_handle_t *pamh, void *data, int status)
{
	cleanups++;
	last_status = status;
}

static void
t_data(void **state)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = "u" });
	const void *got = NULL;
	static int a, b;

	cleanups = 0;
	assert_int_equal(pam_get_data(pamh, "x", &got), PAM_NO_MODULE_DATA);
	assert_int_equal(pam_set_data(pamh, "x", &a, count_cleanup), PAM_SUCCESS);
	assert_int_equal(pam_get_data(pamh, "x", &got), PAM_SUCCESS);
	assert_ptr_equal(got, &a);
	/* Replacing runs the old cleanup, flagged as a replacement. */
	assert_int_equal(pam_set_data(pamh, "x", &b, count_cleanup), PAM_SUCCESS);
	assert_int_equal(cleanups, 1);
	assert_int_equal(last_status, PAM_DATA_REPLACE | PAM_SUCCESS);
	/* A NULL datum is still there (the module's "done once" relies on it). */
	assert_int_equal(pam_set_data(pamh, "y", NULL, NULL), PAM_SUCCESS);
	got = &a;
	assert_int_equal(pam_get_data(pamh, "y", &got), PAM_SUCCESS);
	assert_null(got);
	fakepam_end(pamh);
	assert_int_equal(cleanups, 2);
	assert_int_equal(last_status, PAM_SUCCESS);
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

static void
t_environment(void **state)
{
	const char *const env[] = { "A=1", "B=2", NULL };
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .env = env });
	char **list;

	assert_string_equal(pam_getenv(pamh, "A"), "1");
	assert_null(pam_getenv(pamh, "AB"));
	assert_int_equal(pam_putenv(pamh, "A=3"), PAM_SUCCESS);
	assert_string_equal(pam_getenv(pamh, "A"), "3");
	assert_int_equal(pam_putenv(pamh, "A"), PAM_SUCCESS);
	assert_null(pam_getenv(pamh, "A"));
	assert_int_equal(pam_putenv(pamh, "A"), PAM_BAD_ITEM);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "pam_putenv: delete non-existent entry; A" }));
	assert_int_equal(pam_putenv(pamh, "C="), PAM_SUCCESS);
	assert_string_equal(pam_getenv(pamh, "C"), "");
	assert_non_null(list = pam_getenvlist(pamh));
	assert_string_equal(list[0], "B=2");
	assert_string_equal(list[1], "C=");
	assert_null(list[2]);
	for (size_t i = 0; list[i] != NULL; i++)
		free(list[i]);
	free(list);
	fakepam_end(pamh);
}

static void
t_items_and_user(void **state)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){
		.service = "sshd", .authtok = "pw",
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_ON, "login:", "bob" }) });
	const void *item = NULL;
	const char *user = NULL;

	assert_int_equal(pam_get_item(pamh, PAM_SERVICE, &item), PAM_SUCCESS);
	assert_string_equal(item, "sshd");
	assert_int_equal(pam_get_item(pamh, PAM_AUTHTOK, &item), PAM_SUCCESS);
	assert_string_equal(item, "pw");
	assert_int_equal(pam_get_item(pamh, PAM_USER, &item), PAM_SUCCESS);
	assert_null(item);
	/* No user yet: asked through the conversation, then kept. */
	assert_int_equal(pam_get_user(pamh, &user, NULL), PAM_SUCCESS);
	assert_string_equal(user, "bob");
	assert_int_equal(pam_get_user(pamh, &user, NULL), PAM_SUCCESS);
	assert_int_equal(pam_set_item(pamh, PAM_USER, "carol"), PAM_SUCCESS);
	assert_int_equal(pam_get_user(pamh, &user, NULL), PAM_SUCCESS);
	assert_string_equal(user, "carol");
	fakepam_end(pamh);
}

static void
t_prompt(void **state)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){
		.script = FAKEPAM_SCRIPT(
			{ PAM_PROMPT_ECHO_OFF, "PIN: ", "1234" },
			{ PAM_TEXT_INFO, "hello 7" },
			{ PAM_PROMPT_ECHO_OFF, "again: ", NULL },
			{ PAM_ERROR_MSG, "broken", NULL, PAM_CONV_ERR }) });
	char *resp = NULL;

	assert_int_equal(pam_prompt(pamh, PAM_PROMPT_ECHO_OFF, &resp, "PIN: "), PAM_SUCCESS);
	assert_string_equal(resp, "1234");
	free(resp);
	assert_int_equal(pam_info(pamh, "hello %d", 7), PAM_SUCCESS);
	assert_int_equal(fakepam_script_left(pamh), 2);
	/* A conversation answering nothing: success with no response. */
	resp = (char *)"x";
	assert_int_equal(pam_prompt(pamh, PAM_PROMPT_ECHO_OFF, &resp, "again: "), PAM_SUCCESS);
	assert_null(resp);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	/* A failing one is logged as libpam logs it. */
	assert_int_equal(pam_error(pamh, "broken"), PAM_CONV_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "conversation failed" }));
	fakepam_end(pamh);

	pamh = fakepam_start(&(struct fakepam_config){ .no_conv = true });
	assert_int_equal(pam_info(pamh, "nobody hears this"), PAM_SYSTEM_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "no conversation function" }));
	fakepam_end(pamh);
}

static void
t_log_prefix(void **state)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ 0 });

	pam_syslog(pamh, LOG_NOTICE, "policy: %s: %d", "/x.conf", 3);
	assert_int_equal(fakepam_log_count(), 1);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, "policy: /x.conf", true }));
	assert_int_equal(fakepam_log_count(), 0);
	fakepam_end(pamh);
}

/* The account database answers only what was added, as glibc would. */
static void
t_nss(void **state)
{
	struct passwd pw, *res = NULL;
	struct group gr, *gres = NULL;
	char small[16], buf[256];
	gid_t gids[2];
	int n = 2;

	fakepam_nss_user("alice", 1001, 1001, "Alice");
	fakepam_nss_alias("ALICE", "alice");
	fakepam_nss_group("k8s-dev", 2001);
	fakepam_nss_member("alice", 2001);
	fakepam_nss_member("alice", 2002);
	assert_int_equal(getpwnam_r("ALICE", &pw, buf, sizeof(buf), &res), 0);
	assert_ptr_equal(res, &pw);
	assert_string_equal(pw.pw_name, "alice");
	assert_int_equal(pw.pw_uid, 1001);
	assert_int_equal(getpwnam_r("alice", &pw, small, sizeof(small), &res), ERANGE);
	assert_null(res);
	assert_int_equal(getpwnam_r("root", &pw, buf, sizeof(buf), &res), 0);
	assert_null(res);
	assert_int_equal(getgrouplist("alice", 1001, gids, &n), -1);
	assert_int_equal(n, 3);
	assert_int_equal(gids[0], 1001);
	assert_int_equal(gids[1], 2001);
	assert_int_equal(getgrgid_r(2001, &gr, buf, sizeof(buf), &gres), 0);
	assert_string_equal(gres->gr_name, "k8s-dev");
	assert_null(gres->gr_mem[0]);
	assert_int_equal(getgrgid_r(2001, &gr, small, 8, &gres), ERANGE);
	assert_int_equal(getgrgid_r(2002, &gr, buf, sizeof(buf), &gres), 0);
	assert_null(gres);
}

/* ---- mistakes a test can make, each of which must fail it ---------------- */

/* The handle of a mistake, ended by its teardown after the failure. */
static pam_handle_t *mh;

static pam_handle_t *
mistake_start(const struct fakepam_config *cfg)
{
	return mh = fakepam_start(cfg);
}

static int
mistake_end(void **state)
{
	if (mh != NULL)
		(void)pam_end(mh, PAM_SUCCESS);
	mh = NULL;
	fakepam_reset();
	return 0;
}

static void
c_log_differs(void **state)
{
	pam_handle_t *pamh = mistake_start(&(struct fakepam_config){ 0 });

	pam_syslog(pamh, LOG_ERR, "what happened");
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "what was expected" }));
}

static void
c_log_priority_differs(void **state)
{
	pam_handle_t *pamh = mistake_start(&(struct fakepam_config){ 0 });

	pam_syslog(pamh, LOG_ERR, "line");
	fakepam_expect_log(FAKEPAM_LOG({ LOG_NOTICE, "line" }));
}

static void
c_log_extra_line(void **state)
{
	pam_handle_t *pamh = mistake_start(&(struct fakepam_config){ 0 });

	pam_syslog(pamh, LOG_ERR, "line");
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

static void
c_log_missing_line(void **state)
{
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "never logged" }));
}

static void
c_unexpected_message(void **state)
{
	pam_handle_t *pamh = mistake_start(&(struct fakepam_config){ 0 });

	(void)pam_info(pamh, "nobody expected this");
}

static void
c_message_differs(void **state)
{
	pam_handle_t *pamh = mistake_start(&(struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_TEXT_INFO, "expected" }) });

	(void)pam_error(pamh, "expected");      /* right text, wrong style */
}

static void
c_message_never_sent(void **state)
{
	pam_handle_t *pamh = mistake_start(&(struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, "PIN: ", "1" }) });

	fakepam_end(pamh);
	mh = NULL;
}

static void
c_secret_in_log(void **state)
{
	pam_handle_t *pamh = mistake_start(&(struct fakepam_config){ 0 });

	fakepam_secret("s3cret");
	pam_syslog(pamh, LOG_DEBUG, "pin was xs3cretx");
}

static void
c_secret_in_message(void **state)
{
	pam_handle_t *pamh = mistake_start(&(struct fakepam_config){
		.script = FAKEPAM_SCRIPT({ PAM_TEXT_INFO, "your PIN is s3cret" }) });

	fakepam_secret("s3cret");
	(void)pam_info(pamh, "your PIN is s3cret");
}

static void
c_secret_in_environment(void **state)
{
	pam_handle_t *pamh = mistake_start(&(struct fakepam_config){ 0 });

	fakepam_secret("s3cret");
	(void)pam_putenv(pamh, "PIN=s3cret");
}

static const struct CMUnitTest mistakes[] = {
	cmocka_unit_test_setup_teardown(c_log_differs, reset, mistake_end),
	cmocka_unit_test_setup_teardown(c_log_priority_differs, reset, mistake_end),
	cmocka_unit_test_setup_teardown(c_log_extra_line, reset, mistake_end),
	cmocka_unit_test_setup_teardown(c_log_missing_line, reset, mistake_end),
	cmocka_unit_test_setup_teardown(c_unexpected_message, reset, mistake_end),
	cmocka_unit_test_setup_teardown(c_message_differs, reset, mistake_end),
	cmocka_unit_test_setup_teardown(c_message_never_sent, reset, mistake_end),
	cmocka_unit_test_setup_teardown(c_secret_in_log, reset, mistake_end),
	cmocka_unit_test_setup_teardown(c_secret_in_message, reset, mistake_end),
	cmocka_unit_test_setup_teardown(c_secret_in_environment, reset, mistake_end),
};
#define NMISTAKES (sizeof(mistakes) / sizeof(mistakes[0]))

/* Run mistake i alone in a child, quietly: its exit status is cmocka's
 * count of failed tests.  A test that fails on purpose leaks what cmocka's
 * jump out of it skipped: in a sanitizer build LeakSanitizer would turn
 * that exit into its own (an abort under abort_on_error, as
 * scripts/test.sh runs it), so the child runs without leak checking. */
static int
run_mistake(size_t i)
{
	const char *asan = getenv("ASAN_OPTIONS");
	char arg[16], opts[1024];
	int status, devnull;
	pid_t pid;

	(void)snprintf(arg, sizeof(arg), "%zu", i);
	(void)snprintf(opts, sizeof(opts), "%s%sdetect_leaks=0", asan != NULL ? asan : "",
		       asan != NULL && asan[0] != '\0' ? ":" : "");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		devnull = open("/dev/null", O_WRONLY);
		if (devnull < 0 || dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0 ||
		    setenv("ASAN_OPTIONS", opts, 1) != 0)
			_exit(100);
		execl("/proc/self/exe", "test_fakepam", "--mistake", arg, (char *)NULL);
		_exit(101);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void
t_mistakes_fail(void **state)
{
	for (size_t i = 0; i < NMISTAKES; i++) {
		int failed = run_mistake(i);

		if (failed != 1)
			fail_msg("%s: %d failed test(s), expected 1", mistakes[i].name, failed);
	}
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(t_data, reset),
		cmocka_unit_test_setup(t_environment, reset),
		cmocka_unit_test_setup(t_items_and_user, reset),
		cmocka_unit_test_setup(t_prompt, reset),
		cmocka_unit_test_setup(t_log_prefix, reset),
		cmocka_unit_test_setup(t_nss, reset),
		cmocka_unit_test(t_mistakes_fail),
	};

	if (argc == 3 && strcmp(argv[1], "--mistake") == 0) {
		size_t i = strtoul(argv[2], NULL, 10);

		assert_true(i < NMISTAKES);
		return _cmocka_run_group_tests("mistake", &mistakes[i], 1, NULL, NULL);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
