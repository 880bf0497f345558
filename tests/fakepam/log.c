/*
 * fakepam — pam_syslog captured, the log compared with what a test
 * expects, and the secrets no output may carry.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <cmocka.h>
#include <security/pam_ext.h>

#include "tests/fakepam/internal.h"

#define MAX_SECRETS 16

struct line {
	int priority;
	char *text;
};

static struct line *lines;
static size_t nlines;
static char *secrets[MAX_SECRETS];
static size_t nsecrets;

void
fakepam_check_secrets(const char *where, const char *text)
{
	for (size_t i = 0; i < nsecrets; i++)
		if (strstr(text, secrets[i]) != NULL)
			fail_msg("a secret (\"%s\") in %s: \"%s\"", secrets[i], where, text);
}

void
fakepam_secret(const char *secret)
{
	assert_true(nsecrets < MAX_SECRETS && secret[0] != '\0');
	assert_non_null(secrets[nsecrets++] = strdup(secret));
}

void
pam_vsyslog(const pam_handle_t *pamh, int priority, const char *fmt, va_list args)
{
	struct line *grown;
	char *text = NULL;

	(void)pamh;
	assert_true(vasprintf(&text, fmt, args) >= 0);
	assert_non_null(grown = realloc(lines, (nlines + 1) * sizeof(*lines)));
	lines = grown;
	lines[nlines++] = (struct line){ .priority = priority, .text = text };
	fakepam_check_secrets("a log line", text);
}

void
pam_syslog(const pam_handle_t *pamh, int priority, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pam_vsyslog(pamh, priority, fmt, ap);
	va_end(ap);
}

size_t
fakepam_log_count(void)
{
	return nlines;
}

const char *
fakepam_log_text(size_t i, int *priority)
{
	assert_true(i < nlines);
	if (priority != NULL)
		*priority = lines[i].priority;
	return lines[i].text;
}

static void
log_forget(void)
{
	for (size_t i = 0; i < nlines; i++)
		free(lines[i].text);
	free(lines);
	lines = NULL;
	nlines = 0;
}

static const char *
priority_name(int priority)
{
	static const char *const names[] = {
		"EMERG", "ALERT", "CRIT", "ERR", "WARNING", "NOTICE", "INFO", "DEBUG",
	};

	return priority >= 0 && priority < 8 ? names[priority] : "?";
}

static bool
line_matches(const struct fakepam_line *want, const struct line *got)
{
	if (want->priority != got->priority)
		return false;
	if (want->prefix)
		return strncmp(got->text, want->text, strlen(want->text)) == 0;
	return strcmp(got->text, want->text) == 0;
}

/* Both lists, so a failing test shows the whole difference at once. */
static void
print_log_difference(const struct fakepam_line *want, size_t nwant)
{
	print_message("# expected log:\n");
	for (size_t i = 0; i < nwant; i++)
		print_message("#   %-7s %s%s\n", priority_name(want[i].priority), want[i].text,
			      want[i].prefix ? "..." : "");
	print_message("# logged:\n");
	for (size_t i = 0; i < nlines; i++)
		print_message("#   %-7s %s\n", priority_name(lines[i].priority), lines[i].text);
}

void
fakepam_expect_log(const struct fakepam_line *want)
{
	size_t nwant = 0;
	bool same;

	while (want != NULL && want[nwant].text != NULL)
		nwant++;
	same = nwant == nlines;
	for (size_t i = 0; same && i < nwant; i++)
		same = line_matches(&want[i], &lines[i]);
	if (!same) {
		print_log_difference(want, nwant);
		fail_msg("the log is not what was expected");
	}
	log_forget();
}

void
fakepam_reset(void)
{
	log_forget();
	for (size_t i = 0; i < nsecrets; i++)
		free(secrets[i]);
	nsecrets = 0;
	fakepam_nss_clear();
}
