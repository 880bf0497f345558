/*
 * fakepam — pam_prompt and the scripted conversation.
 *
 * pam_vprompt behaves as Linux-PAM's: no conversation function is
 * PAM_SYSTEM_ERR, a failed conversation is logged ("conversation failed")
 * and its answer, if any, still reaches the caller, and a conversation
 * that answers nothing leaves the response NULL.
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
#include <security/pam_appl.h>
#include <security/pam_ext.h>

#include "tests/fakepam/internal.h"

int
pam_vprompt(pam_handle_t *pamh, int style, char **response, const char *fmt, va_list args)
{
	struct pam_response *resp = NULL;
	struct pam_message msg;
	const struct pam_message *pmsg = &msg;
	char *text = NULL;
	int rc;

	if (response != NULL)
		*response = NULL;
	if (pamh->conv.conv == NULL) {
		pam_syslog(pamh, LOG_ERR, "no conversation function");
		return PAM_SYSTEM_ERR;
	}
	if (vasprintf(&text, fmt, args) < 0)
		return PAM_BUF_ERR;
	msg.msg_style = style;
	msg.msg = text;
	rc = pamh->conv.conv(1, &pmsg, &resp, pamh->conv.appdata_ptr);
	if (rc != PAM_SUCCESS && resp != NULL)
		pam_syslog(pamh, LOG_WARNING,
			   "unexpected response from failed conversation function");
	if (response != NULL && resp != NULL)
		*response = resp->resp;
	else if (resp != NULL && resp->resp != NULL) {
		explicit_bzero(resp->resp, strlen(resp->resp));
		free(resp->resp);
	}
	free(resp);
	free(text);
	if (rc != PAM_SUCCESS)
		pam_syslog(pamh, LOG_ERR, "conversation failed");
	return rc;
}

int
pam_prompt(pam_handle_t *pamh, int style, char **response, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = pam_vprompt(pamh, style, response, fmt, ap);
	va_end(ap);
	return rc;
}

static const char *
style_name(int style)
{
	switch (style) {
	case PAM_PROMPT_ECHO_OFF: return "PAM_PROMPT_ECHO_OFF";
	case PAM_PROMPT_ECHO_ON:  return "PAM_PROMPT_ECHO_ON";
	case PAM_ERROR_MSG:       return "PAM_ERROR_MSG";
	case PAM_TEXT_INFO:       return "PAM_TEXT_INFO";
	default:                  return "an unknown style";
	}
}

static bool
is_prompt(int style)
{
	return style == PAM_PROMPT_ECHO_OFF || style == PAM_PROMPT_ECHO_ON;
}

/* Check one message against the script; the scripted entry. */
static const struct fakepam_prompt *
expected(pam_handle_t *pamh, const struct pam_message *m)
{
	const struct fakepam_prompt *want = pamh->script;

	fakepam_check_secrets("a message to the user", m->msg);
	if (want == NULL || want->text == NULL)
		fail_msg("unexpected message (%s) \"%s\"", style_name(m->msg_style), m->msg);
	if (want->style != m->msg_style || strcmp(want->text, m->msg) != 0)
		fail_msg("message (%s) \"%s\", expected (%s) \"%s\"", style_name(m->msg_style),
			 m->msg, style_name(want->style), want->text);
	pamh->script++;
	return want;
}

/* A conversation that answers prompts from the script; a scripted reply of
 * NULL answers nothing at all (PAM_SUCCESS with no responses).  Every
 * message is checked before anything is allocated: a failed check ends
 * the test right there. */
int
fakepam_converse(int n, const struct pam_message **msg, struct pam_response **resp,
		 void *appdata)
{
	const struct fakepam_prompt *want[PAM_MAX_NUM_MSG];
	size_t count = n > 0 && n <= PAM_MAX_NUM_MSG ? (size_t)n : 0;
	pam_handle_t *pamh = appdata;
	struct pam_response *out;
	bool silent = false;
	int rc = PAM_SUCCESS;

	*resp = NULL;
	if (count == 0)
		fail_msg("a conversation call with %d messages", n);
	for (size_t i = 0; i < count; i++)
		want[i] = expected(pamh, msg[i]);
	for (size_t i = 0; i < count && rc == PAM_SUCCESS; i++) {
		rc = want[i]->rc;
		silent = silent || (is_prompt(want[i]->style) && want[i]->reply == NULL);
	}
	if (rc != PAM_SUCCESS || silent)
		return rc;
	assert_non_null(out = calloc(count, sizeof(*out)));
	for (size_t i = 0; i < count; i++)
		if (is_prompt(want[i]->style))
			assert_non_null(out[i].resp = strdup(want[i]->reply));
	*resp = out;
	return PAM_SUCCESS;
}
