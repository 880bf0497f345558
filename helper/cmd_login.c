/*
 * kubehsm login [--renew] — start (or renew) your kube session from inside
 * a login: for a token the bastion could not see when you logged in (one
 * on your laptop, forwarded with p11-kit over ssh -R), or to extend a
 * session before it expires.
 *
 * Minting needs root's issuer key, and this tool is never setuid: it runs
 * kubehsm-login through pkexec (polkit action org.kubehsm.login), which is
 * a PAM application of the "kubehsm" service for the caller.  The PIN is
 * asked there, on this terminal, by pam_kubehsm — once.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/kh_cache.h"
#include "helper/kh_cli.h"

/* pkexec's own statuses: the action was not authorized / dismissed. */
#define KH_PKEXEC_NOT_AUTHORIZED 127
#define KH_PKEXEC_DISMISSED      126

static void
kh_login_usage(FILE *out)
{
	fprintf(out,
		"Usage: kubehsm login [--renew]\n\n"
		"Start your kube session from inside a login: unlock your token (asked\n"
		"once, on this terminal), and every kube client of yours works without\n"
		"a prompt until the session expires or your last login ends.  For a\n"
		"token on your laptop, forward it first (see kubehsm(1), TOKEN ON YOUR\n"
		"LAPTOP).\n\n"
		"  --renew         extend the session you have (same token and\n"
		"                  certificate), keeping it open in every login\n"
		"  -h, --help      show this help\n\n"
		"Runs %s through pkexec (polkit action org.kubehsm.login).\n"
		"Exit status: 0 a session, 1 none (the reason is printed), 2 usage.\n",
		KH_LOGIN_PROGRAM);
}

/* The root half; KUBEHSM_LOGIN_PROGRAM exists for the test suite (pkexec
 * runs a program as root only if polkit's action names that very path). */
static const char *
login_program(void)
{
	const char *p = getenv("KUBEHSM_LOGIN_PROGRAM");

	return p != NULL && p[0] == '/' ? p : KH_LOGIN_PROGRAM;
}

/* The PIN prompt needs a terminal; without one, say so before anything
 * touches the token. */
static int
have_terminal(void)
{
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	(void)close(fd);
	return 1;
}

/*
 * What pam_kubehsm would refuse only after the PIN, said before it: a
 * plain login while a session is live, a renewal without one.  (The
 * module still decides; this only spares a PIN entry.)  0 to go on.
 */
static int
session_precheck(bool renew)
{
	struct kh_cache_entry *e = NULL;
	size_t n = 0, live = 0;
	kh_error err;

	if (kh_cache_list(getuid(), &e, &n, &err) != 0)
		return 0;       /* the module will say what is wrong */
	for (size_t i = 0; i < n; i++)
		live += e[i].state == KH_MISS_NONE;
	kh_cache_entries_free(e, n);
	if (live > 0 && !renew) {
		kh_cli_error("login: you have a kube session already ('kubehsm status'); "
			     "'kubehsm login --renew' extends it, 'kubehsm logout' ends it");
		return -1;
	}
	if (live == 0 && renew) {
		kh_cli_error("login: you have no kube session to renew; run 'kubehsm login'");
		return -1;
	}
	return 0;
}

/* pkexec PROGRAM [--renew]; returns its exit status, or -1. */
static int
run_pkexec(const char *program, bool renew)
{
	char *argv[] = { (char *)KH_PKEXEC, (char *)program, renew ? (char *)"--renew" : NULL,
			 NULL };
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		kh_cli_error("login: fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		execv(KH_PKEXEC, argv);
		kh_cli_error("login: cannot run %s: %s (install pkexec)", KH_PKEXEC,
			     strerror(errno));
		_exit(KH_PKEXEC_NOT_AUTHORIZED + 1);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			kh_cli_error("login: waitpid: %s", strerror(errno));
			return -1;
		}
	if (!WIFEXITED(status)) {
		kh_cli_error("login: %s ended by signal %d", program,
			     WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		return -1;
	}
	return WEXITSTATUS(status);
}

int
kh_cmd_login(int argc, char **argv)
{
	char *status_argv[] = { (char *)"status", NULL };
	bool renew = false;
	int r;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			kh_login_usage(stdout);
			return KH_EXIT_OK;
		} else if (strcmp(argv[i], "--renew") == 0) {
			renew = true;
		} else {
			kh_cli_error("login: unexpected argument '%s'; run 'kubehsm login --help'",
				     argv[i]);
			return KH_EXIT_USAGE;
		}
	}
	if (!have_terminal()) {
		kh_cli_error("login: your token PIN is asked on a terminal, and there is none "
			     "here; run 'kubehsm login' in an interactive shell (ssh -t, a tmux "
			     "pane). The token was not touched.");
		return KH_EXIT_FAIL;
	}
	if (session_precheck(renew) != 0)
		return KH_EXIT_FAIL;
	r = run_pkexec(login_program(), renew);
	if (r == KH_PKEXEC_NOT_AUTHORIZED || r == KH_PKEXEC_DISMISSED) {
		kh_cli_error("login: pkexec did not run it: polkit does not allow you the "
			     "action org.kubehsm.login (ask an administrator), or pkexec "
			     "failed (see above). The token was not touched.");
		return KH_EXIT_FAIL;
	}
	if (r != 0)
		return KH_EXIT_FAIL;    /* kubehsm-login said why */
	printf("Kube session %s.\n", renew ? "renewed" : "started");
	return kh_cmd_status(1, status_argv);
}
