/* fakepam's own: the handle behind pam_handle_t and the secret check. */
#ifndef KH_FAKEPAM_INTERNAL_H
#define KH_FAKEPAM_INTERNAL_H

#include <stddef.h>

#include <security/pam_appl.h>

#include "tests/fakepam/fakepam.h"

/* pam_get_item's string items are PAM_SERVICE (1) .. PAM_USER_PROMPT (9). */
#define FAKEPAM_ITEMS 10

struct fakepam_datum {
	char *name;
	void *data;
	void (*cleanup)(pam_handle_t *, void *, int);
	struct fakepam_datum *next;
};

/* pam_handle_t is opaque to the module: this is all there is to it. */
struct pam_handle {
	char *items[FAKEPAM_ITEMS];     /* string items; PAM_CONV is conv */
	struct pam_conv conv;
	const struct fakepam_prompt *script;    /* the next expected message */
	char **env;                     /* "NAME=value", NULL-terminated */
	struct fakepam_datum *data;
};

/* The scripted conversation, installed as the handle's conv. */
int fakepam_converse(int n, const struct pam_message **msg,
		     struct pam_response **resp, void *appdata);

/* Fail the test if text holds a registered secret; `where` names it. */
void fakepam_check_secrets(const char *where, const char *text);

/* Empty the fake account database (fakepam_reset). */
void fakepam_nss_clear(void);

#endif
