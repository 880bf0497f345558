/*
 * kubehsm-login — the root half of `kubehsm login`, run by pkexec under the
 * polkit action org.kubehsm.login.  Never setuid, never run by hand.
 *
 * It is a PAM application of the "kubehsm" service for the user who ran
 * pkexec: PKEXEC_UID, which pkexec sets from its caller's uid.  Nothing on
 * the command line can name another user.  It asks for the PIN on the
 * caller's terminal and runs auth, account and session open, where
 * pam_kubehsm (options join and forwarded) unlocks the token, checks the
 * certificate, proves possession and mints the record exactly as at login.
 * It never closes the session: the record joins the user's logins, and the
 * last of them to close ends it.
 *
 * It trusts nothing else of the caller's.  The environment pkexec passed is
 * dropped, limits the caller set are reset, inherited descriptors closed;
 * the forwarded-token socket is found by the module from policy, for this
 * uid, and used only if the user owns it.
 *
 * Exit status: 0 the session was started or renewed, 1 it was not (said
 * why), 2 usage, 3 not run by pkexec as root.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <security/pam_appl.h>

#define KH_LOGIN_SERVICE "kubehsm"
#define KH_RENEW_ENV     "KUBEHSM_RENEW"
#define KH_SECRET_MAX    256            /* longer than any token PIN */

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_NOT_PKEXEC = 3 };

/* The caller's terminal, opened once; and a signal that arrived while the
 * terminal's echo was off. */
static int tty_fd = -1;
static volatile sig_atomic_t caught;
/* The module has told the user why (a PAM_ERROR_MSG): a failure of that
 * step needs no second line of ours ("no kube session: Permission
 * denied") under the module's own. */
static bool module_said_why;

static void
say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	(void)!write(tty_fd >= 0 ? tty_fd : STDERR_FILENO, buf, (size_t)n);
}

static void
on_signal(int sig)
{
	caught = sig;
}

/* Read one line from the terminal without echo into buf (NUL-terminated).
 * 0, or -1 when interrupted, too long, or at end of input. */
static int
read_secret(char *buf, size_t cap)
{
	struct termios saved, quiet;
	struct sigaction sa = { .sa_handler = on_signal }, old[4];
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	size_t len = 0;
	bool too_long = false;
	int rc = 0;
	char c;

	if (tcgetattr(tty_fd, &saved) != 0)
		return -1;
	quiet = saved;
	quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
	quiet.c_lflag |= ICANON;
	/* No SA_RESTART: a signal must end the read, so echo comes back. */
	for (size_t i = 0; i < 4; i++)
		(void)sigaction(sigs[i], &sa, &old[i]);
	caught = 0;
	if (tcsetattr(tty_fd, TCSAFLUSH, &quiet) != 0) {
		rc = -1;
		goto restore;
	}
	for (;;) {
		ssize_t r = read(tty_fd, &c, 1);

		if (r < 0 && errno == EINTR && !caught)
			continue;
		if (r <= 0 || caught) {
			rc = -1;
			break;
		}
		if (c == '\n' || c == '\r')
			break;
		if (len + 1 < cap)
			buf[len++] = c;
		else
			too_long = true;
	}
	buf[len] = '\0';
	c = 0;
	(void)tcsetattr(tty_fd, TCSAFLUSH, &saved);
	(void)!write(tty_fd, "\n", 1);
restore:
	for (size_t i = 0; i < 4; i++)
		(void)sigaction(sigs[i], &old[i], NULL);
	if (too_long) {
		say("kubehsm: that is longer than any token PIN; not tried\n");
		rc = -1;
	}
	if (rc != 0)
		explicit_bzero(buf, cap);
	return rc;
}

static void
free_responses(struct pam_response *r, int n)
{
	for (int i = 0; i < n; i++)
		if (r[i].resp != NULL) {
			explicit_bzero(r[i].resp, strlen(r[i].resp));
			free(r[i].resp);
		}
	free(r);
}

/* The PAM conversation: prompts and messages on the caller's terminal. */
static int
tty_conversation(int n, const struct pam_message **msg, struct pam_response **out,
		 void *data)
{
	struct pam_response *r;
	char secret[KH_SECRET_MAX];

	(void)data;
	if (n <= 0 || n > PAM_MAX_NUM_MSG)
		return PAM_CONV_ERR;
	r = calloc((size_t)n, sizeof(*r));
	if (r == NULL)
		return PAM_BUF_ERR;
	for (int i = 0; i < n; i++) {
		const char *text = msg[i]->msg != NULL ? msg[i]->msg : "";

		switch (msg[i]->msg_style) {
		case PAM_PROMPT_ECHO_OFF:
			say("%s", text);
			if (read_secret(secret, sizeof(secret)) != 0) {
				free_responses(r, n);
				return PAM_CONV_ERR;
			}
			r[i].resp = strdup(secret);
			explicit_bzero(secret, sizeof(secret));
			if (r[i].resp == NULL) {
				free_responses(r, n);
				return PAM_BUF_ERR;
			}
			break;
		case PAM_ERROR_MSG:
			module_said_why = true;
			say("%s\n", text);
			break;
		case PAM_TEXT_INFO:
			say("%s\n", text);
			break;
		default:        /* echo-on prompts: nothing here asks one */
			free_responses(r, n);
			return PAM_CONV_ERR;
		}
	}
	*out = r;
	return PAM_SUCCESS;
}

static void
ignore_terminal_signals(void)
{
	static const int sigs[] = { SIGINT, SIGQUIT, SIGTSTP, SIGHUP, SIGTTIN, SIGTTOU };
	struct sigaction ign = { .sa_handler = SIG_IGN };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		(void)sigaction(sigs[i], &ign, NULL);
}

static void
usage(FILE *out)
{
	fprintf(out, "Usage: pkexec %s [--renew]\n\n"
		"The root half of 'kubehsm login': run 'kubehsm login' instead.\n",
		KH_LOGIN_PROGRAM);
}

/* PKEXEC_UID, strictly a decimal uid. */
static int
caller_uid(uid_t *uid)
{
	const char *s = getenv("PKEXEC_UID");
	unsigned long v;
	char *end;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v >= (unsigned long)(uid_t)-1)
		return -1;
	*uid = (uid_t)v;
	return 0;
}

/*
 * Every resource limit, as a login of root's starts with, whatever the
 * caller set (pkexec passes them on): a caller's RLIMIT_CPU, AS, DATA,
 * FSIZE or STACK could otherwise end or break this root process halfway
 * through storing a session.  No core dumps (a PIN); 1024 descriptors, so
 * select() in a library stays safe; the kernel's default stack.
 *
 * Root may raise a hard limit only with CAP_SYS_RESOURCE, which a container
 * may not grant: then the soft limit goes as high as the hard one allows.
 * A hard limit the caller lowered below what this process needs to finish
 * (`need`) and that cannot be raised is refused before anything starts.
 */
static int
reset_limits(void)
{
#define KH_INF RLIM_INFINITY
	static const struct {
		int resource;
		const char *name;
		rlim_t soft, hard;
		bool need;          /* refuse less than soft */
	} limits[] = {
		{ RLIMIT_CPU, "CPU time", KH_INF, KH_INF, true },
		{ RLIMIT_FSIZE, "file size", KH_INF, KH_INF, true },
		{ RLIMIT_DATA, "data size", KH_INF, KH_INF, true },
		{ RLIMIT_STACK, "stack size", 8u << 20, KH_INF, true },
		{ RLIMIT_CORE, "core size", 0, 0, false },
		{ RLIMIT_RSS, "resident set", KH_INF, KH_INF, false },
		{ RLIMIT_NPROC, "processes", KH_INF, KH_INF, false },
		{ RLIMIT_NOFILE, "open files", 1024, 1024, true },
		{ RLIMIT_MEMLOCK, "locked memory", KH_INF, KH_INF, false },
		{ RLIMIT_AS, "address space", KH_INF, KH_INF, true },
		{ RLIMIT_LOCKS, "file locks", KH_INF, KH_INF, false },
		{ RLIMIT_SIGPENDING, "pending signals", KH_INF, KH_INF, false },
		{ RLIMIT_MSGQUEUE, "message queues", KH_INF, KH_INF, false },
		{ RLIMIT_NICE, "nice", 0, 0, false },
		{ RLIMIT_RTPRIO, "real-time priority", 0, 0, false },
		{ RLIMIT_RTTIME, "real-time CPU time", KH_INF, KH_INF, false },
	};
#undef KH_INF

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		__rlimit_resource_t res = (__rlimit_resource_t)limits[i].resource;
		struct rlimit want = { limits[i].soft, limits[i].hard }, have;

		if (setrlimit(res, &want) == 0)
			continue;
		if (errno != EPERM || getrlimit(res, &have) != 0)
			return -1;
		/* No raising the hard limit here: as high as it allows. */
		want.rlim_max = have.rlim_max;
		if (want.rlim_cur > have.rlim_max)
			want.rlim_cur = have.rlim_max;
		if (setrlimit(res, &want) != 0)
			return -1;
		if (limits[i].need && want.rlim_cur < limits[i].soft) {
			fprintf(stderr, "kubehsm-login: your hard limit on %s is lower than "
				"kubehsm login needs, and cannot be raised here; run it from a "
				"shell without that limit\n", limits[i].name);
			errno = EPERM;
			return -1;
		}
	}
	return 0;
}

/* Nothing of the caller's process state reaches the PAM stack but what is
 * needed: no environment, no inherited descriptors beyond the standard
 * three, the limits a login starts with, no core dumps of a PIN, and no
 * death by SIGPIPE (a peer the user may kill — the forwarded token's
 * process is theirs — is an error to report, not the end of root's
 * process). */
static int
reset_process(void)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };

	if (clearenv() != 0 || setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", 1) != 0)
		return -1;
	umask(077);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 || reset_limits() != 0 ||
	    sigaction(SIGPIPE, &ign, NULL) != 0)
		return -1;
	return close_range(3, ~0U, 0);
}

static int
run_pam(const char *user, bool renew)
{
	struct pam_conv conv = { tty_conversation, NULL };
	pam_handle_t *pamh = NULL;
	const char *tty = ttyname(tty_fd);
	int rc;

	rc = pam_start(KH_LOGIN_SERVICE, user, &conv, &pamh);
	if (rc != PAM_SUCCESS) {
		say("kubehsm: PAM: %s\n", pam_strerror(pamh, rc));
		return EXIT_FAIL;
	}
	if ((tty != NULL && (rc = pam_set_item(pamh, PAM_TTY, tty)) != PAM_SUCCESS) ||
	    (rc = pam_set_item(pamh, PAM_RUSER, user)) != PAM_SUCCESS ||
	    (renew && (rc = pam_putenv(pamh, KH_RENEW_ENV "=1")) != PAM_SUCCESS)) {
		say("kubehsm: PAM: %s\n", pam_strerror(pamh, rc));
		goto out;
	}
	module_said_why = false;
	rc = pam_authenticate(pamh, PAM_DISALLOW_NULL_AUTHTOK);
	if (rc != PAM_SUCCESS) {
		if (!module_said_why)
			say("kubehsm: token login failed: %s\n", pam_strerror(pamh, rc));
		goto out;
	}
	rc = pam_acct_mgmt(pamh, PAM_DISALLOW_NULL_AUTHTOK);
	if (rc != PAM_SUCCESS) {
		say("kubehsm: account refused: %s\n", pam_strerror(pamh, rc));
		goto out;
	}
	module_said_why = false;
	rc = pam_open_session(pamh, 0);
	if (rc != PAM_SUCCESS && !module_said_why)
		say("kubehsm: no kube session: %s\n", pam_strerror(pamh, rc));
	/* No close_session: the user's logins own the session from here. */
out:
	(void)pam_end(pamh, rc);
	return rc == PAM_SUCCESS ? EXIT_OK : EXIT_FAIL;
}

int
main(int argc, char **argv)
{
	struct passwd *pw;
	char *user;
	bool renew = false;
	uid_t uid;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--renew") == 0) {
			renew = true;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return EXIT_OK;
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (getuid() != 0 || geteuid() != 0 || caller_uid(&uid) != 0) {
		fprintf(stderr, "kubehsm-login: run 'kubehsm login' (this program is run "
			"by pkexec, as root, for the user who asked)\n");
		return EXIT_NOT_PKEXEC;
	}
	if (reset_process() != 0) {
		fprintf(stderr, "kubehsm-login: cannot reset the process: %s\n", strerror(errno));
		return EXIT_FAIL;
	}
	/* The caller's terminal can send signals to this root process: only
	 * while the PIN is read do they end it (read_secret), never halfway
	 * through minting and storing the session. */
	ignore_terminal_signals();
	tty_fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (tty_fd < 0) {
		fprintf(stderr, "kubehsm: kubehsm login asks for the token PIN on a terminal, "
			"and there is none here\n");
		return EXIT_FAIL;
	}
	errno = 0;
	pw = getpwuid(uid);
	if (pw == NULL) {
		say("kubehsm: uid %u has no account here\n", (unsigned)uid);
		return EXIT_FAIL;
	}
	user = strdup(pw->pw_name);
	if (user == NULL)
		return EXIT_FAIL;
	rc = run_pam(user, renew);
	free(user);
	return rc;
}
