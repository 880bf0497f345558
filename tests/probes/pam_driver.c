/*
 * pam_driver — drive a PAM service like a login program would, for tests.
 *
 *   KH_PIN=... pam_driver SERVICE USER CYCLES OP...
 *
 * OP is authenticate, setcred, open_session or close_session.  Each cycle
 * is one pam_start .. pam_end (libpam loads and unloads the modules each
 * time).  The conversation answers echo-off prompts with $KH_PIN and prints
 * messages to stderr.  Prints "OP: <code> <text>" for a failing step and
 * exits with that PAM code (0 when every step of every cycle succeeded).
 *
 * KH_CONV_MUTE=1: a conversation that answers prompts but cannot show a
 *   message (PAM_TEXT_INFO / PAM_ERROR_MSG fail), like a non-interactive
 *   application.
 *
 * KH_GATE=OP: before each step OP, print "gate OP" and wait for a line on
 *   stdin, so that a test can arrange what that step meets (a user's
 *   signal loop, in tests/integration/relay/relay_revoke_hostile.sh).
 *
 * KH_RSS_AT=K: read VmRSS (/proc/self/status) after cycle K and after the
 * last cycle and print "rss: K <kB> CYCLES <kB>" when all cycles succeeded.
 *
 * For memory scans (tests/integration/pam/pam_secrets.sh):
 * KH_PIN_STDIN=1: read the PIN from the first line of stdin into a page of
 *   its own (never the environment) and print "pin-buffer: START END" (hex),
 *   so a scanner can tell the driver's own copy from anyone else's.
 * KH_PAUSE=before-end|after-end: after the last cycle's steps, print
 *   "paused" and wait for a signal, before or after that cycle's pam_end;
 *   KH_PAUSE=conv: the same inside the first conversation call, once the
 *   answers are allocated and before the module has them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <security/pam_appl.h>

static void pause_if(const char *when);

static int
conv(int n, const struct pam_message **msg, struct pam_response **resp, void *data)
{
	const char *pin = data;
	struct pam_response *r = calloc((size_t)n, sizeof(*r));

	if (r == NULL)
		return PAM_BUF_ERR;
	for (int i = 0; i < n; i++) {
		switch (msg[i]->msg_style) {
		case PAM_PROMPT_ECHO_OFF:
		case PAM_PROMPT_ECHO_ON:
			if (pin == NULL || (r[i].resp = strdup(pin)) == NULL)
				goto fail;
			break;
		default:
			if (getenv("KH_CONV_MUTE") != NULL)
				goto fail;
			fprintf(stderr, "%s\n", msg[i]->msg);
		}
	}
	*resp = r;
	pause_if("conv");
	return PAM_SUCCESS;
fail:
	for (int i = 0; i < n; i++)
		free(r[i].resp);
	free(r);
	return PAM_CONV_ERR;
}

/* VmRSS in kB, or -1. */
static long
vm_rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* The PIN from stdin in a page of its own; NULL on failure. */
static char *
pin_from_stdin(void)
{
	ssize_t pg = (ssize_t)sysconf(_SC_PAGESIZE);
	char *buf = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ssize_t n, len = 0;

	if (buf == MAP_FAILED)
		return NULL;
	/* read(2), not stdio: a stdio buffer would be a second copy. */
	while (len < pg - 1 && (n = read(0, buf + len, (size_t)(pg - 1 - len))) > 0)
		len += n;
	if (len == 0)
		return NULL;
	buf[strcspn(buf, "\n")] = '\0';
	printf("pin-buffer: %lx %lx\n", (unsigned long)buf, (unsigned long)buf + (unsigned long)pg);
	fflush(stdout);
	return buf;
}

static void
pause_if(const char *when)
{
	const char *p = getenv("KH_PAUSE");

	if (p == NULL || strcmp(p, when) != 0)
		return;
	printf("paused\n");
	fflush(stdout);
	for (;;)
		pause();
}

static void
gate_if(const char *op)
{
	const char *g = getenv("KH_GATE");
	char c;

	if (g == NULL || strcmp(g, op) != 0)
		return;
	printf("gate %s\n", op);
	fflush(stdout);
	while (read(0, &c, 1) == 1 && c != '\n')
		;
}

static int
step(pam_handle_t *h, const char *op)
{
	gate_if(op);
	if (strcmp(op, "authenticate") == 0)
		return pam_authenticate(h, 0);
	if (strcmp(op, "setcred") == 0)
		return pam_setcred(h, PAM_ESTABLISH_CRED);
	if (strcmp(op, "open_session") == 0)
		return pam_open_session(h, 0);
	if (strcmp(op, "close_session") == 0)
		return pam_close_session(h, 0);
	fprintf(stderr, "pam_driver: unknown op '%s'\n", op);
	exit(2);
}

int
main(int argc, char **argv)
{
	struct pam_conv pc = { conv, getenv("KH_PIN") };
	const char *rss_env = getenv("KH_RSS_AT");
	long cycles, rss_at = rss_env ? strtol(rss_env, NULL, 10) : 0, rss_mark = -1;

	if (getenv("KH_PIN_STDIN") != NULL && (pc.appdata_ptr = pin_from_stdin()) == NULL) {
		fprintf(stderr, "pam_driver: no PIN on stdin\n");
		return 2;
	}
	if (argc < 5) {
		fprintf(stderr, "usage: KH_PIN=... pam_driver SERVICE USER CYCLES OP...\n");
		return 2;
	}
	cycles = strtol(argv[3], NULL, 10);
	for (long c = 0; c < cycles; c++) {
		pam_handle_t *h = NULL;
		int rc = pam_start(argv[1], argv[2], &pc, &h);

		if (rc != PAM_SUCCESS) {
			fprintf(stderr, "pam_start: %d\n", rc);
			return rc;
		}
		for (int i = 4; i < argc && rc == PAM_SUCCESS; i++) {
			rc = step(h, argv[i]);
			if (rc != PAM_SUCCESS)
				printf("%s: %d %s\n", argv[i], rc, pam_strerror(h, rc));
		}
		if (c + 1 == cycles && rc == PAM_SUCCESS)
			pause_if("before-end");
		pam_end(h, rc);
		if (rc != PAM_SUCCESS)
			return rc;
		if (c + 1 == cycles)
			pause_if("after-end");
		if (c + 1 == rss_at)
			rss_mark = vm_rss_kb();
	}
	if (rss_at > 0)
		printf("rss: %ld %ld %ld %ld\n", rss_at, rss_mark, cycles, vm_rss_kb());
	return 0;
}
