/*
 * test_pcsc — lib/kh_pcsc: what the process is told when pcscd refuses it,
 * through the real client library (libpcsclite.so.1) against a socket that
 * does what a refusing pcscd 2.x does: accept, then close unread.
 *
 * The client library reads PCSCLITE_CSOCK_NAME once per process, so each
 * case runs in a child of its own.
 */
#include "config.h"

#include <dlfcn.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/kh_pcsc.h"

#define CHILD_SKIP 77

static char tmpdir[] = "/tmp/kh-test-pcsc.XXXXXX";

/* In the child: load the client library as a PC/SC module would. */
static int
child_load_pcsclite(const char *sock)
{
	if (setenv("PCSCLITE_CSOCK_NAME", sock, 1) != 0)
		return 1;
	if (dlopen("libpcsclite.so.1", RTLD_NOW | RTLD_LOCAL) == NULL)
		return CHILD_SKIP;
	return 0;
}

/* The child's hint must contain `want` (NULL: there must be none). */
static int
child_expect(const char *want)
{
	const char *hint = kh_pcsc_refusal();

	if (want == NULL)
		return hint == NULL ? 0 : 1;
	if (hint == NULL || strstr(hint, want) == NULL) {
		fprintf(stderr, "hint: %s\n", hint != NULL ? hint : "(none)");
		return 1;
	}
	return 0;
}

/* The child's verdict; skip the case when it could not load PC/SC. */
static void
expect_status_ok(int status)
{
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == CHILD_SKIP)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void
expect_child_ok(pid_t pid)
{
	int status;

	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	expect_status_ok(status);
}

/*
 * Play the refusing pcscd for the child until it is done (at most ~10 s):
 * accept each connection, wait for the client's first message and close
 * without reading it — pcscd 2.x asks polkit before it reads anything, and
 * a Unix socket closed with unread data resets its peer (ECONNRESET).  The
 * close may come between the two writes of that message (EPIPE, reported
 * as "no service"), as it may with pcscd: kh_pcsc must tell it from a
 * missing pcscd all the same.
 */
static void
refuse_until_done(int lfd, pid_t pid)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	int status, i, cfd;

	assert_true(pid > 0);
	for (i = 0; i < 100; i++) {
		if (poll(&pfd, 1, 100) > 0) {
			cfd = accept(lfd, NULL, NULL);
			if (cfd >= 0) {
				struct pollfd in = { .fd = cfd, .events = POLLIN };

				(void)poll(&in, 1, 5000);
				close(cfd);
			}
		}
		if (waitpid(pid, &status, WNOHANG) == pid) {
			expect_status_ok(status);
			return;
		}
	}
	(void)kill(pid, SIGKILL);
	(void)waitpid(pid, &status, 0);
	fail_msg("the client did not finish within 10 s");
}

/* A module that did not load PC/SC: nothing to say, and nothing loaded. */
static void
t_not_loaded(void **state)
{
	pid_t pid;

	(void)state;
	pid = fork();
	if (pid == 0) {
		int rc = child_expect(NULL);

		if (dlopen("libpcsclite.so.1", RTLD_NOW | RTLD_NOLOAD) != NULL)
			rc = 1;
		_exit(rc);
	}
	expect_child_ok(pid);
}

static void
t_no_service(void **state)
{
	char sock[sizeof(tmpdir) + 16];
	pid_t pid;

	(void)state;
	(void)snprintf(sock, sizeof(sock), "%s/absent.comm", tmpdir);
	pid = fork();
	if (pid == 0) {
		int rc = child_load_pcsclite(sock);

		_exit(rc != 0 ? rc : child_expect("pcscd is not running"));
	}
	expect_child_ok(pid);
}

/* pcscd 2.x refusing a client: the connection accepted, then closed. */
static void
t_refused(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	pid_t pid;
	int lfd;

	(void)state;
	(void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/pcscd.comm", tmpdir);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	pid = fork();
	if (pid == 0) {
		int rc;

		close(lfd);
		rc = child_load_pcsclite(sa.sun_path);
		/* Either wording names the refusal. */
		_exit(rc != 0 ? rc : child_expect("refused"));
	}
	refuse_until_done(lfd, pid);
	close(lfd);
	(void)unlink(sa.sun_path);
}

static int
setup(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	return rmdir(tmpdir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_not_loaded),
		cmocka_unit_test(t_no_service),
		cmocka_unit_test(t_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
