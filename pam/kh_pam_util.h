/*
 * kh_pam_util — what pam_kubehsm's auth and session steps share: module
 * options, the policy, the PAM conversation, logging and the per-handle
 * login state kept with pam_set_data.
 *
 * Nothing here is global: all state lives in the PAM handle, so handles
 * never see each other's data and the module can be unloaded at any time.
 */
#ifndef KH_PAM_UTIL_H
#define KH_PAM_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include <openssl/x509.h>
#include <security/pam_modules.h>

#include "lib/kh_error.h"
#include "conf/kh_policy.h"

/* pam_set_data names. */
#define KH_PAM_DATA_LOGIN   "kubehsm:login"
#define KH_PAM_DATA_SESSION "kubehsm:session-open"
#define KH_PAM_DATA_ACCOUNT "kubehsm:account"

/* PAM environment: `kubehsm login --renew` (honoured with option join). */
#define KH_RENEW_ENV "KUBEHSM_RENEW"

struct kh_pam_opts {
	bool use_first_pass;
	bool try_first_pass;
	bool authtok_is_pin;    /* the admin says the earlier module's password
				 * is the token PIN: only then is it tried */
	bool debug;
	bool no_cache;
	bool join;              /* the session joins the uid's open logins
				 * instead of being one (kubehsm login) */
	bool forwarded;         /* the token may be the user's own forwarded
				 * one (pkcs11.forward; kubehsm login) */
	const char *config;     /* points into argv or at KH_DEFAULT_CONFIG */
};

/*
 * What a successful authentication hands to the session step.  Owned by
 * the PAM handle (pam_set_data); the cleanup wipes every field.
 */
struct kh_pam_login {
	char *user;             /* the PAM user */
	uid_t uid;
	char *token_label;
	char *token_serial;
	char *token_uri;        /* PKCS#11 URI of the user's key */
	char *token_cert_pem;   /* the validated token certificate */
	time_t token_not_after;
	char *kube_user;
	char **groups;
	size_t ngroups;
	char *pin;              /* SECRET; only when session.cache_pin */
};

/* Parse module arguments.  Unknown arguments are a configuration error
 * (logged): a typo must not silently change behaviour. */
int kh_pam_parse_opts(pam_handle_t *pamh, int argc, const char **argv,
		      struct kh_pam_opts *opts);

/* Load the policy fresh (root-owned file), logging why it fails. */
struct kh_policy *kh_pam_load_policy(pam_handle_t *pamh,
				     const struct kh_pam_opts *opts);

/* The account PAM_USER names: its canonical name (pw_name, which may differ
 * from what was typed; valid until the next call or pam_end), uid and gid.
 * PAM_USER_UNKNOWN if there is none. */
int kh_pam_get_user(pam_handle_t *pamh, const char **user, uid_t *uid,
		    gid_t *gid);

/* One syslog line (LOG_AUTHPRIV is the default facility of pam_syslog). */
void kh_pam_log_fail(pam_handle_t *pamh, const char *user, const char *what,
		     const kh_error *err);
void kh_pam_debug(pam_handle_t *pamh, const struct kh_pam_opts *opts,
		  const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Ask the conversation for the token PIN (echo off) with a prompt naming
 * the token.  *pin is freed with kh_secure_strfree.
 */
int kh_pam_prompt_pin(pam_handle_t *pamh, const char *token_label, char **pin);

/* Free a login state, wiping every field. NULL is fine. */
void kh_pam_login_free(struct kh_pam_login *login);

/* Hand login state to the handle (the handle frees it, also on failure). */
int kh_pam_login_save(pam_handle_t *pamh, struct kh_pam_login *login);

/* The login state of a successful authenticate, or NULL. */
const struct kh_pam_login *kh_pam_login_get(pam_handle_t *pamh);

/* The kube groups of a user from identity.groups (cert:, unix:, static:),
 * de-duplicated, in rule order, less those identity.allow_groups/deny_groups
 * refuse (each logged).  Free with kh_x509_strv_free. */
int kh_pam_kube_groups(pam_handle_t *pamh, const struct kh_policy *policy, X509 *cert,
		       const char *user, gid_t gid, char ***groups,
		       size_t *ngroups, kh_error *err);

#endif
