/*
 * kh_pam_prompt — the PIN, asked through the PAM conversation: the login
 * program decides how to ask (a terminal, sshd's keyboard-interactive),
 * and no library ever reads a terminal itself.
 */
#include "config.h"

#include <stddef.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "lib/kh_mem.h"
#include "pam/kh_pam.h"

int
kh_pam_prompt_pin(pam_handle_t *pamh, const char *token_label, char **pin)
{
	char *resp = NULL;
	int rc;

	*pin = NULL;
	rc = pam_prompt(pamh, PAM_PROMPT_ECHO_OFF, &resp,
			"PIN for token '%s': ", token_label);
	if (rc != PAM_SUCCESS) {
		kh_secure_strfree(resp);
		return rc == PAM_CONV_AGAIN ? PAM_INCOMPLETE : PAM_CONV_ERR;
	}
	if (resp == NULL)
		return PAM_CONV_ERR;
	*pin = resp;
	return PAM_SUCCESS;
}
