/*
 * fakepam — the PAM handle: items, the user, module data and the PAM
 * environment, as Linux-PAM keeps them (see fakepam.h).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <syslog.h>

#include <cmocka.h>
#include <security/pam_appl.h>
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "tests/fakepam/internal.h"

static void
wipe_free(char *s)
{
	if (s != NULL) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

/* ---- start and end ------------------------------------------------------- */

int
pam_start(const char *service_name, const char *user,
	  const struct pam_conv *pam_conversation, pam_handle_t **pamh)
{
	pam_handle_t *h = calloc(1, sizeof(*h));

	*pamh = NULL;
	if (h == NULL)
		return PAM_BUF_ERR;
	h->conv = *pam_conversation;
	if ((h->items[PAM_SERVICE] = strdup(service_name)) == NULL ||
	    (user != NULL && (h->items[PAM_USER] = strdup(user)) == NULL) ||
	    (h->env = calloc(1, sizeof(*h->env))) == NULL) {
		(void)pam_end(h, PAM_BUF_ERR);
		return PAM_BUF_ERR;
	}
	*pamh = h;
	return PAM_SUCCESS;
}

int
pam_end(pam_handle_t *pamh, int pam_status)
{
	struct fakepam_datum *d, *next;

	for (d = pamh->data; d != NULL; d = next) {
		next = d->next;
		if (d->cleanup != NULL)
			d->cleanup(pamh, d->data, pam_status);
		free(d->name);
		free(d);
	}
	for (size_t i = 0; pamh->env != NULL && pamh->env[i] != NULL; i++)
		wipe_free(pamh->env[i]);
	free(pamh->env);
	for (size_t i = 0; i < FAKEPAM_ITEMS; i++)
		wipe_free(pamh->items[i]);
	free(pamh);
	return PAM_SUCCESS;
}

pam_handle_t *
fakepam_start(const struct fakepam_config *cfg)
{
	struct pam_conv conv = { .conv = cfg->no_conv ? NULL : fakepam_converse };
	pam_handle_t *pamh = NULL;

	assert_int_equal(pam_start(cfg->service ? cfg->service : "kubehsm-test", cfg->user,
				   &conv, &pamh), PAM_SUCCESS);
	pamh->conv.appdata_ptr = pamh;
	pamh->script = cfg->script;
	if (cfg->authtok != NULL)
		assert_int_equal(pam_set_item(pamh, PAM_AUTHTOK, cfg->authtok), PAM_SUCCESS);
	for (size_t i = 0; cfg->env != NULL && cfg->env[i] != NULL; i++)
		assert_int_equal(pam_putenv(pamh, cfg->env[i]), PAM_SUCCESS);
	return pamh;
}

size_t
fakepam_script_left(const pam_handle_t *pamh)
{
	size_t n = 0;

	while (pamh->script != NULL && pamh->script[n].text != NULL)
		n++;
	return n;
}

void
fakepam_set_script(pam_handle_t *pamh, const struct fakepam_prompt *script)
{
	pamh->script = script;
}

void
fakepam_end(pam_handle_t *pamh)
{
	if (fakepam_script_left(pamh) != 0)
		fail_msg("the module never sent the scripted message \"%s\"",
			 pamh->script->text);
	(void)pam_end(pamh, PAM_SUCCESS);
}

/* ---- items --------------------------------------------------------------- */

int
pam_get_item(const pam_handle_t *pamh, int item_type, const void **item)
{
	if (item_type == PAM_CONV) {
		*item = &pamh->conv;
		return PAM_SUCCESS;
	}
	if (item_type <= 0 || item_type >= FAKEPAM_ITEMS)
		return PAM_BAD_ITEM;
	*item = pamh->items[item_type];
	return PAM_SUCCESS;
}

int
pam_set_item(pam_handle_t *pamh, int item_type, const void *item)
{
	char *copy = NULL;

	if (item_type == PAM_CONV) {
		if (item == NULL)
			return PAM_PERM_DENIED;
		pamh->conv = *(const struct pam_conv *)item;
		return PAM_SUCCESS;
	}
	if (item_type <= 0 || item_type >= FAKEPAM_ITEMS)
		return PAM_BAD_ITEM;
	if (item != NULL && (copy = strdup(item)) == NULL)
		return PAM_BUF_ERR;
	wipe_free(pamh->items[item_type]);
	pamh->items[item_type] = copy;
	return PAM_SUCCESS;
}

/* Linux-PAM asks the conversation for a user name only when none is set. */
int
pam_get_user(pam_handle_t *pamh, const char **user, const char *prompt)
{
	char *typed = NULL;
	int rc;

	*user = NULL;
	if (pamh->items[PAM_USER] != NULL) {
		*user = pamh->items[PAM_USER];
		return PAM_SUCCESS;
	}
	rc = pam_prompt(pamh, PAM_PROMPT_ECHO_ON, &typed, "%s", prompt ? prompt : "login:");
	if (rc == PAM_SUCCESS && typed == NULL)
		rc = PAM_CONV_ERR;
	if (rc == PAM_SUCCESS)
		rc = pam_set_item(pamh, PAM_USER, typed);
	wipe_free(typed);
	if (rc == PAM_SUCCESS)
		*user = pamh->items[PAM_USER];
	return rc;
}

/* ---- module data --------------------------------------------------------- */

static struct fakepam_datum *
datum_named(const pam_handle_t *pamh, const char *name)
{
	for (struct fakepam_datum *d = pamh->data; d != NULL; d = d->next)
		if (strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

int
pam_set_data(pam_handle_t *pamh, const char *module_data_name, void *data,
	     void (*cleanup)(pam_handle_t *pamh, void *data, int error_status))
{
	struct fakepam_datum *d = datum_named(pamh, module_data_name);

	if (d != NULL) {
		if (d->cleanup != NULL)
			d->cleanup(pamh, d->data, PAM_DATA_REPLACE | PAM_SUCCESS);
	} else {
		if ((d = calloc(1, sizeof(*d))) == NULL)
			return PAM_BUF_ERR;
		if ((d->name = strdup(module_data_name)) == NULL) {
			free(d);
			return PAM_BUF_ERR;
		}
		d->next = pamh->data;
		pamh->data = d;
	}
	d->data = data;
	d->cleanup = cleanup;
	return PAM_SUCCESS;
}

int
pam_get_data(const pam_handle_t *pamh, const char *module_data_name, const void **data)
{
	const struct fakepam_datum *d = datum_named(pamh, module_data_name);

	if (d == NULL)
		return PAM_NO_MODULE_DATA;
	*data = d->data;
	return PAM_SUCCESS;
}

/* ---- the PAM environment ------------------------------------------------- */

/* Index of NAME (len bytes) in the environment, or -1. */
static ssize_t
env_index(const pam_handle_t *pamh, const char *name, size_t len)
{
	for (size_t i = 0; pamh->env[i] != NULL; i++)
		if (strncmp(pamh->env[i], name, len) == 0 && pamh->env[i][len] == '=')
			return (ssize_t)i;
	return -1;
}

static size_t
env_count(const pam_handle_t *pamh)
{
	size_t n = 0;

	while (pamh->env[n] != NULL)
		n++;
	return n;
}

/* "NAME=value" sets, "NAME" deletes (and deleting what is not there is
 * logged and PAM_BAD_ITEM, as in Linux-PAM). */
int
pam_putenv(pam_handle_t *pamh, const char *name_value)
{
	size_t len = strcspn(name_value, "="), n = env_count(pamh);
	ssize_t at;
	char *copy, **grown;

	if (len == 0) {
		pam_syslog(pamh, LOG_ERR, "pam_putenv: bad variable");
		return PAM_BAD_ITEM;
	}
	at = env_index(pamh, name_value, len);
	if (name_value[len] == '\0') {
		if (at < 0) {
			pam_syslog(pamh, LOG_ERR, "pam_putenv: delete non-existent entry; %s",
				   name_value);
			return PAM_BAD_ITEM;
		}
		wipe_free(pamh->env[at]);
		memmove(&pamh->env[at], &pamh->env[at + 1], (n - (size_t)at) * sizeof(char *));
		return PAM_SUCCESS;
	}
	fakepam_check_secrets("the PAM environment", name_value);
	if ((copy = strdup(name_value)) == NULL)
		return PAM_BUF_ERR;
	if (at >= 0) {
		wipe_free(pamh->env[at]);
		pamh->env[at] = copy;
		return PAM_SUCCESS;
	}
	if ((grown = realloc(pamh->env, (n + 2) * sizeof(char *))) == NULL) {
		free(copy);
		return PAM_BUF_ERR;
	}
	pamh->env = grown;
	pamh->env[n] = copy;
	pamh->env[n + 1] = NULL;
	return PAM_SUCCESS;
}

const char *
pam_getenv(pam_handle_t *pamh, const char *name)
{
	size_t len = strlen(name);
	ssize_t at = env_index(pamh, name, len);

	return at < 0 ? NULL : pamh->env[at] + len + 1;
}

char **
pam_getenvlist(pam_handle_t *pamh)
{
	size_t n = env_count(pamh);
	char **copy = calloc(n + 1, sizeof(char *));

	for (size_t i = 0; copy != NULL && i < n; i++)
		if ((copy[i] = strdup(pamh->env[i])) == NULL) {
			while (i > 0)
				free(copy[--i]);
			free(copy);
			return NULL;
		}
	return copy;
}

/* ---- codes --------------------------------------------------------------- */

/* The constant's name: a test reading a log line sees which code it was. */
const char *
pam_strerror(pam_handle_t *pamh, int errnum)
{
	(void)pamh;
	switch (errnum) {
#define CODE(c) case c: return #c
	CODE(PAM_SUCCESS); CODE(PAM_OPEN_ERR); CODE(PAM_SYMBOL_ERR);
	CODE(PAM_SERVICE_ERR); CODE(PAM_SYSTEM_ERR); CODE(PAM_BUF_ERR);
	CODE(PAM_PERM_DENIED); CODE(PAM_AUTH_ERR); CODE(PAM_CRED_INSUFFICIENT);
	CODE(PAM_AUTHINFO_UNAVAIL); CODE(PAM_USER_UNKNOWN); CODE(PAM_MAXTRIES);
	CODE(PAM_NEW_AUTHTOK_REQD); CODE(PAM_ACCT_EXPIRED); CODE(PAM_SESSION_ERR);
	CODE(PAM_CRED_UNAVAIL); CODE(PAM_CRED_EXPIRED); CODE(PAM_CRED_ERR);
	CODE(PAM_NO_MODULE_DATA); CODE(PAM_CONV_ERR); CODE(PAM_AUTHTOK_ERR);
	CODE(PAM_AUTHTOK_RECOVERY_ERR); CODE(PAM_AUTHTOK_LOCK_BUSY);
	CODE(PAM_AUTHTOK_DISABLE_AGING); CODE(PAM_TRY_AGAIN); CODE(PAM_IGNORE);
	CODE(PAM_ABORT); CODE(PAM_AUTHTOK_EXPIRED); CODE(PAM_MODULE_UNKNOWN);
	CODE(PAM_BAD_ITEM); CODE(PAM_CONV_AGAIN); CODE(PAM_INCOMPLETE);
#undef CODE
	}
	return "unknown PAM code";
}
