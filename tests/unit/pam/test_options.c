/*
 * test_options — the module arguments (pam/kh_pam_options.c): each one
 * sets its switch and only it, anything else is refused with one log line,
 * and an entry point given a bad argument does nothing else.
 */
#include "config.h"

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

#include "pam/kh_pam.h"
#include "tests/fakepam/fakepam.h"
#include "tests/unit/pam/fakes.h"

static const struct {
	const char *name;
	size_t offset;
} flags[] = {
	{ "use_first_pass", offsetof(struct kh_pam_opts, use_first_pass) },
	{ "try_first_pass", offsetof(struct kh_pam_opts, try_first_pass) },
	{ "authtok_is_pin", offsetof(struct kh_pam_opts, authtok_is_pin) },
	{ "debug", offsetof(struct kh_pam_opts, debug) },
	{ "no_cache", offsetof(struct kh_pam_opts, no_cache) },
	{ "join", offsetof(struct kh_pam_opts, join) },
	{ "forwarded", offsetof(struct kh_pam_opts, forwarded) },
};
#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

static bool
flag(const struct kh_pam_opts *o, size_t i)
{
	bool v;

	memcpy(&v, (const char *)o + flags[i].offset, sizeof(v));
	return v;
}

static int
parse(int argc, const char **argv, struct kh_pam_opts *o)
{
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });
	int rc;

	memset(o, 0xa5, sizeof(*o));   /* every field must be set by the call */
	rc = kh_pam_parse_opts(pamh, argc, argv, o);
	fakepam_end(pamh);
	return rc;
}

static void
t_defaults(void **state)
{
	struct kh_pam_opts o;

	assert_int_equal(parse(0, NULL, &o), PAM_SUCCESS);
	for (size_t i = 0; i < NFLAGS; i++)
		assert_false(flag(&o, i));
	assert_string_equal(o.config, KH_DEFAULT_CONFIG);
	assert_null(o.timing_dest);
	assert_null(o.timing);
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* Each switch alone sets itself and nothing else (use_first_pass needs
 * authtok_is_pin beside it, so it is checked with that one). */
static void
t_each_flag_alone(void **state)
{
	for (size_t i = 0; i < NFLAGS; i++) {
		const char *argv[] = { flags[i].name, "authtok_is_pin" };
		int argc = strcmp(flags[i].name, "use_first_pass") == 0 ? 2 : 1;
		struct kh_pam_opts o;

		assert_int_equal(parse(argc, argv, &o), PAM_SUCCESS);
		for (size_t j = 0; j < NFLAGS; j++)
			assert_int_equal(flag(&o, j),
					 j == i || (argc == 2 && strcmp(flags[j].name,
									"authtok_is_pin") == 0));
		assert_string_equal(o.config, KH_DEFAULT_CONFIG);
		fakepam_expect_log(FAKEPAM_NO_LOG);
	}
}

static void
t_all_together(void **state)
{
	const char *argv[] = { "forwarded", "join", "no_cache", "debug", "authtok_is_pin",
			       "try_first_pass", "use_first_pass", "config=/etc/kh/other.conf" };
	struct kh_pam_opts o;

	assert_int_equal(parse(8, argv, &o), PAM_SUCCESS);
	for (size_t i = 0; i < NFLAGS; i++)
		assert_true(flag(&o, i));
	assert_string_equal(o.config, "/etc/kh/other.conf");
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* config= keeps a pointer into argv (which outlives the call); the last
 * one given wins. */
static void
t_config(void **state)
{
	const char *argv[] = { "config=/a.conf", "debug", "config=/etc/kubehsm/b.conf" };
	struct kh_pam_opts o;

	assert_int_equal(parse(3, argv, &o), PAM_SUCCESS);
	assert_ptr_equal(o.config, argv[2] + strlen("config="));
	assert_true(o.debug);
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* Names are exact: no case folding, no values on switches, no relative or
 * empty config path. */
static void
t_bad_options(void **state)
{
	static const char *const bad[] = {
		"bogus", "DEBUG", "Debug", "debug=1", "debug ", " debug", "use_first_pass=1",
		"", "config", "config=", "config=kubehsm.conf", "config=./kubehsm.conf",
		"CONFIG=/etc/kubehsm/kubehsm.conf", "config =/x", "nocache", "no-cache",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *argv[] = { bad[i] };
		char line[160];
		struct kh_pam_opts o;

		assert_int_equal(parse(1, argv, &o), PAM_SERVICE_ERR);
		(void)snprintf(line, sizeof(line), "unknown or malformed module option '%s' "
			       "(config= needs an absolute path)", bad[i]);
		fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, line }));
	}
}

/* timing= (bench/TIMING.md): an absolute path or syslog, pointing into
 * argv, the last one winning; the state pointer stays NULL (dispatch sets
 * it).  Anything else after timing= is refused: a typo must not silently
 * measure nothing. */
static void
t_timing(void **state)
{
	const char *argv[] = { "timing=/var/tmp/t.log", "debug", "timing=syslog" };
	static const char *const bad[] = {
		"timing=", "timing=t.log", "timing=./t.log", "timing=SYSLOG", "timing=syslog ",
		"timing=~/t.log",
	};
	struct kh_pam_opts o;

	assert_int_equal(parse(1, argv, &o), PAM_SUCCESS);
	assert_ptr_equal(o.timing_dest, argv[0] + strlen("timing="));
	assert_null(o.timing);
	assert_false(o.debug);
	assert_int_equal(parse(3, argv, &o), PAM_SUCCESS);
	assert_string_equal(o.timing_dest, KH_TIMING_SYSLOG);
	assert_true(o.debug);
	assert_string_equal(o.config, KH_DEFAULT_CONFIG);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *one[] = { bad[i] };
		char line[160];

		assert_int_equal(parse(1, one, &o), PAM_SERVICE_ERR);
		(void)snprintf(line, sizeof(line), "malformed module option '%s' (timing= needs "
			       "an absolute path or syslog)", bad[i]);
		fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, line }));
	}
	/* Without "=" it is no timing option at all. */
	{
		const char *one[] = { "timing" };

		assert_int_equal(parse(1, one, &o), PAM_SERVICE_ERR);
		fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "unknown or malformed module option "
						 "'timing' (config= needs an absolute path)" }));
	}
}

/* The step names of a line, in the line's order (bench/TIMING.md). */
static const char *const step_names[] = {
	"user", "policy", "handoff", "p11_load", "find", "validate", "conv", "login",
	"challenge", "identity", "p11_close", "join", "polkit_load", "polkit", "issuer",
	"keygen", "mint", "relay", "store", "logout",
};
#define NSTEPS (sizeof(step_names) / sizeof(step_names[0]))

static int
step_index(const char *name, size_t len)
{
	for (size_t i = 0; i < NSTEPS; i++)
		if (strlen(step_names[i]) == len && strncmp(step_names[i], name, len) == 0)
			return (int)i;
	return -1;
}

/* One line by the bench's reader rules: the head, then step=microseconds in
 * the steps' order, each at most once, their sum at most total.  Returns a
 * bit per step present. */
static unsigned long
check_line(const char *line, const char *phase, int rc)
{
	char head[160];
	unsigned long long start, total, sum = 0, v;
	unsigned long seen = 0;
	int last = -1, n = 0;
	const char *p;

	assert_true(strlen(line) < 512);
	assert_int_equal(sscanf(line, "kh-timing v1 module=pam_kubehsm pid=%*d phase=%*s rc=%*d "
				"start=%llu total=%llu%n", &start, &total, &n), 2);
	(void)snprintf(head, sizeof(head), "kh-timing v1 module=pam_kubehsm pid=%ld phase=%s "
		       "rc=%d start=", (long)getpid(), phase, rc);
	assert_memory_equal(line, head, strlen(head));
	for (p = line + n; *p == ' '; ) {
		const char *eq = strchr(p + 1, '=');
		int s, k = 0;

		assert_non_null(eq);
		s = step_index(p + 1, (size_t)(eq - p - 1));
		assert_true(s > last);          /* known, in order, once */
		assert_int_equal(sscanf(eq + 1, "%llu%n", &v, &k), 1);
		sum += v;
		seen |= 1UL << s;
		last = s;
		p = eq + 1 + k;
	}
	assert_true(*p == '\0');
	assert_true(sum <= total);
	return seen;
}

static unsigned long
steps(const char *const *names)
{
	unsigned long bits = 0;

	for (; *names != NULL; names++)
		bits |= 1UL << step_index(*names, strlen(*names));
	return bits;
}

/* A whole login through the entry points with timing=FILE: one line per
 * call, with the steps the (fake) login ran; nothing else changes. */
static void
t_timing_login(void **state)
{
	char dir[] = "/tmp/kh-timing-XXXXXX";
	char *path, *opt, buf[4096], *lines[8], *save = NULL;
	const char *argv[3] = { fake_policy_option(NULL), "debug", NULL };
	pam_handle_t *pamh;
	size_t n = 0, nlines = 0;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	path = fake_asprintf("%s/timing.log", dir);
	opt = fake_asprintf("timing=%s", path);
	argv[2] = opt;
	pamh = fakepam_start(&(struct fakepam_config){
		.user = FAKE_USER, .service = "sshd",
		.script = FAKEPAM_SCRIPT({ PAM_PROMPT_ECHO_OFF, "PIN for token 'alice': ",
					   FAKE_PIN }) });
	assert_int_equal(pam_sm_authenticate(pamh, 0, 3, argv), PAM_SUCCESS);
	assert_int_equal(pam_sm_setcred(pamh, PAM_ESTABLISH_CRED, 3, argv), PAM_SUCCESS);
	/* The fake issuer has no PIN file: open_session fails after polkit
	 * (off here) and the session key (made before the issuer's turn),
	 * before minting, and says so in its line. */
	assert_int_equal(pam_sm_open_session(pamh, 0, 3, argv), PAM_SESSION_ERR);
	assert_int_equal(pam_sm_close_session(pamh, 0, 3, argv), PAM_SUCCESS);
	fakepam_end(pamh);
	fakepam_reset();        /* the module's own lines are test_log's business */

	assert_non_null(f = fopen(path, "r"));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_null(strstr(buf, FAKE_USER));    /* nothing names the user */
	assert_null(strstr(buf, FAKE_PIN));
	for (char *l = strtok_r(buf, "\n", &save); l != NULL && nlines < 8;
	     l = strtok_r(NULL, "\n", &save))
		lines[nlines++] = l;
	assert_int_equal(nlines, 4);
	assert_int_equal(check_line(lines[0], "auth", PAM_SUCCESS),
			 steps((const char *const[]){ "user", "policy", "handoff", "p11_load",
						      "find", "conv", "login", "challenge",
						      "identity", "p11_close", NULL }));
	assert_int_equal(check_line(lines[1], "setcred", PAM_SUCCESS), 0);
	assert_int_equal(check_line(lines[2], "open", PAM_SESSION_ERR),
			 steps((const char *const[]){ "user", "policy", "handoff", "keygen",
						      "issuer", "p11_close", "store", NULL }));
	assert_int_equal(check_line(lines[3], "close", PAM_SUCCESS),
			 steps((const char *const[]){ "logout", NULL }));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	free(path);
	free(opt);
}

/* A timing file that cannot be written changes nothing: same answer, no
 * file, no log line. */
static void
t_timing_unwritable(void **state)
{
	const char *argv[] = { "config=relative.conf", "timing=/nonexistent/dir/t.log" };
	const char *ok[] = { "timing=/nonexistent/dir/t.log" };
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });

	/* A bad option still wins over timing: no line, the same error. */
	assert_int_equal(pam_sm_setcred(pamh, 0, 2, argv), PAM_SERVICE_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "unknown or malformed module option "
					 "'config=relative.conf' (config= needs an "
					 "absolute path)" }));
	assert_int_equal(pam_sm_setcred(pamh, 0, 1, ok), PAM_AUTHINFO_UNAVAIL);
	assert_int_equal(pam_sm_close_session(pamh, 0, 1, ok), PAM_IGNORE);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	assert_int_equal(access("/nonexistent/dir/t.log", F_OK), -1);
	fakepam_end(pamh);
}

/* A FIFO, a directory or someone else's file at the path: no hang, no
 * line, the same answer. */
static void
t_timing_not_a_file(void **state)
{
	char dir[] = "/tmp/kh-timing-XXXXXX";
	char *fifo, *opt_fifo, *opt_dir;
	const char *argv[1];
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });
	struct stat st;

	assert_non_null(mkdtemp(dir));
	fifo = fake_asprintf("%s/fifo", dir);
	opt_fifo = fake_asprintf("timing=%s", fifo);
	opt_dir = fake_asprintf("timing=%s", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	argv[0] = opt_fifo;
	assert_int_equal(pam_sm_setcred(pamh, 0, 1, argv), PAM_AUTHINFO_UNAVAIL);
	argv[0] = opt_dir;
	assert_int_equal(pam_sm_setcred(pamh, 0, 1, argv), PAM_AUTHINFO_UNAVAIL);
	fakepam_expect_log(FAKEPAM_NO_LOG);
	assert_int_equal(stat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	fakepam_end(pamh);
	assert_int_equal(unlink(fifo), 0);
	assert_int_equal(rmdir(dir), 0);
	free(fifo);
	free(opt_fifo);
	free(opt_dir);
}

/* timing=syslog: the same line through pam_syslog at LOG_DEBUG. */
static void
t_timing_syslog(void **state)
{
	const char *argv[] = { "timing=syslog" };
	pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){ .user = FAKE_USER });
	char *want = fake_asprintf("kh-timing v1 module=pam_kubehsm pid=%ld phase=setcred "
				   "rc=%d start=", (long)getpid(), PAM_AUTHINFO_UNAVAIL);
	const char *text;
	int prio = -1;

	assert_int_equal(pam_sm_setcred(pamh, 0, 1, argv), PAM_AUTHINFO_UNAVAIL);
	assert_int_equal(fakepam_log_count(), 1);
	text = fakepam_log_text(0, &prio);
	assert_int_equal(prio, LOG_DEBUG);
	assert_memory_equal(text, want, strlen(want));
	assert_int_equal(check_line(text, "setcred", PAM_AUTHINFO_UNAVAIL), 0);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_DEBUG, want, true }));
	fakepam_end(pamh);
	free(want);
}

/* The first bad argument ends parsing: one line, for it. */
static void
t_first_bad_option_only(void **state)
{
	const char *argv[] = { "debug", "bogus", "join", "worse" };
	struct kh_pam_opts o;

	assert_int_equal(parse(4, argv, &o), PAM_SERVICE_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "unknown or malformed module option "
					 "'bogus' (config= needs an absolute path)" }));
}

/* use_first_pass would hand another module's password to the token: only
 * with authtok_is_pin, in either order.  try_first_pass alone is fine (it
 * asks for the PIN unless authtok_is_pin). */
static void
t_use_first_pass_needs_authtok_is_pin(void **state)
{
	const char *alone[] = { "use_first_pass" };
	const char *before[] = { "use_first_pass", "authtok_is_pin" };
	const char *after[] = { "authtok_is_pin", "use_first_pass" };
	const char *try[] = { "try_first_pass" };
	struct kh_pam_opts o;

	assert_int_equal(parse(1, alone, &o), PAM_SERVICE_ERR);
	fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR,
		"use_first_pass hands an earlier module's password to the token as its PIN; "
		"add authtok_is_pin if the two are the same secret, or drop use_first_pass "
		"to be asked for the PIN" }));
	assert_int_equal(parse(2, before, &o), PAM_SUCCESS);
	assert_int_equal(parse(2, after, &o), PAM_SUCCESS);
	assert_int_equal(parse(1, try, &o), PAM_SUCCESS);
	assert_true(o.try_first_pass);
	assert_false(o.authtok_is_pin);
	fakepam_expect_log(FAKEPAM_NO_LOG);
}

/* Every entry point: a bad argument is PAM_SERVICE_ERR before any work —
 * no prompt (the script is empty), no token, no cache, no data kept. */
static void
t_entry_points_refuse_bad_options(void **state)
{
	int (*const entry[])(pam_handle_t *, int, int, const char **) = {
		pam_sm_authenticate, pam_sm_setcred, pam_sm_open_session, pam_sm_close_session,
	};
	const char *argv[] = { "debug", "config=relative.conf" };

	for (size_t i = 0; i < sizeof(entry) / sizeof(entry[0]); i++) {
		pam_handle_t *pamh = fakepam_start(&(struct fakepam_config){
			.user = FAKE_USER, .authtok = FAKE_PIN });
		const void *data = NULL;

		assert_int_equal(entry[i](pamh, 0, 2, argv), PAM_SERVICE_ERR);
		fakepam_expect_log(FAKEPAM_LOG({ LOG_ERR, "unknown or malformed module option "
						 "'config=relative.conf' (config= needs an "
						 "absolute path)" }));
		assert_int_equal(pam_get_data(pamh, KH_PAM_DATA_LOGIN, &data), PAM_NO_MODULE_DATA);
		assert_int_equal(pam_get_data(pamh, KH_PAM_DATA_SESSION, &data),
				 PAM_NO_MODULE_DATA);
		fakepam_end(pamh);
	}
	assert_int_equal(fake_token.opens, 0);
	assert_int_equal(fake_token.ntried, 0);
	assert_int_equal(fake_cache.lists + fake_cache.counts + fake_cache.logouts, 0);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fakes_setup, fakes_teardown)
	const struct CMUnitTest tests[] = {
		T(t_defaults),
		T(t_each_flag_alone),
		T(t_all_together),
		T(t_config),
		T(t_bad_options),
		T(t_first_bad_option_only),
		T(t_use_first_pass_needs_authtok_is_pin),
		T(t_entry_points_refuse_bad_options),
		T(t_timing),
		T(t_timing_login),
		T(t_timing_unwritable),
		T(t_timing_not_a_file),
		T(t_timing_syslog),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
