/*
 * kh_pam_auth — the auth step of pam_kubehsm.
 *
 * Order matters for the token's retry counter: everything that can fail
 * without the PIN (token present, certificate found, validated and mapped
 * to this user, PIN not locked, the user can be warned of a last try) is
 * checked before the user is asked for a PIN, and the PIN is tried
 * exactly once — twice only under try_first_pass with authtok_is_pin,
 * when the earlier module's password was not the PIN.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include <openssl/x509.h>
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "lib/kh_mem.h"
#include "lib/kh_template.h"
#include "pam/kh_pam.h"
#include "lib/kh_pkcs11.h"
#include "lib/kh_x509.h"

/* Everything one authentication holds; released by auth_ctx_clear. */
struct auth_ctx {
	pam_handle_t *pamh;
	const struct kh_pam_opts *opts;
	struct kh_policy *policy;
	const char *user;
	uid_t uid;
	gid_t gid;
	char *token_label;
	char *key_label;
	struct kh_p11 *p11;
	int forwarded;          /* p11 is the user's forwarded token */
	struct kh_p11_token_info info;
	X509 *cert;
	EVP_PKEY *key;
	char *pin;
};

static void
auth_ctx_clear(struct auth_ctx *c)
{
	EVP_PKEY_free(c->key);          /* before the module goes away */
	X509_free(c->cert);
	kh_p11_token_info_clear(&c->info);
	kh_p11_close(c->p11);
	kh_secure_strfree(c->pin);
	free(c->token_label);
	free(c->key_label);
	kh_policy_free(c->policy);
	explicit_bzero(c, sizeof(*c));
}

/* PAM code for a token-side failure before the PIN is tried. */
static int
pam_code_for_lookup(const kh_error *err)
{
	switch (err->code) {
	case KH_ERR_CONFIG:
		return PAM_SERVICE_ERR;
	case KH_ERR_INTERNAL:
		return PAM_BUF_ERR;
	default:        /* no token, no certificate, module failure */
		return PAM_AUTHINFO_UNAVAIL;
	}
}

static int
fail_log(struct auth_ctx *c, const char *what, const kh_error *err, int code)
{
	kh_pam_log_fail(c->pamh, c->user, what, err);
	return code;
}

/* A token-side failure before the PIN.  At a login it is only logged (the
 * stack goes on to the password); `kubehsm login` (forwarded) has no other
 * way in, so its user is told why, about their own token. */
static int
lookup_fail(struct auth_ctx *c, const char *what, const kh_error *err, int code)
{
	if (c->opts->forwarded)
		(void)pam_error(c->pamh, "kubehsm: %s: %s", what, err->msg);
	return fail_log(c, what, err, code);
}

static int
expand_templates(struct auth_ctx *c)
{
	kh_error err = { 0 };

	c->token_label = kh_template_expand(c->policy->token.label, c->user, &err);
	if (c->token_label == NULL)
		return fail_log(c, "token.label", &err, PAM_SERVICE_ERR);
	c->key_label = kh_template_expand(c->policy->token.key_label, c->user, &err);
	if (c->key_label == NULL)
		return fail_log(c, "token.key_label", &err, PAM_SERVICE_ERR);
	return PAM_SUCCESS;
}

static int
find_token_and_cert(struct auth_ctx *c)
{
	kh_error err = { 0 };

	c->p11 = kh_pam_open_token_module(c->pamh, c->opts, c->policy, c->user, c->uid,
					  c->gid, &c->forwarded, &err);
	if (c->p11 == NULL)
		return lookup_fail(c, "PKCS#11 module", &err,
				   err.code == KH_ERR_CONFIG ? PAM_SERVICE_ERR : PAM_AUTHINFO_UNAVAIL);
	if (kh_p11_find_token(c->p11, c->token_label, &c->info, &err) != 0)
		return lookup_fail(c, "token", &err, pam_code_for_lookup(&err));
	if (kh_p11_find_cert(c->p11, c->key_label, c->policy->token.key_id,
			     &c->cert, &err) != 0)
		return lookup_fail(c, "token certificate", &err, pam_code_for_lookup(&err));
	kh_pam_debug(c->pamh, c->opts, "user '%s': token '%s' serial '%s' pin flags 0x%x",
		     c->user, c->token_label, c->info.serial, c->info.pin_flags);
	return PAM_SUCCESS;
}

static int
validate_and_map_cert(struct auth_ctx *c)
{
	kh_error err = { 0 };
	char *mapped = NULL;
	int same;

	if (kh_x509_validate(c->cert, c->policy->trust.ca_file,
			     c->policy->trust.crl_file, 0, &err) != 0)
		return fail_log(c, "token certificate rejected", &err,
				err.code == KH_ERR_CONFIG ? PAM_SERVICE_ERR : PAM_AUTH_ERR);
	if (kh_x509_map_user(c->cert, c->policy->trust.map,
			     (const char *const *)c->policy->trust.domains,
			     c->policy->trust.ndomains, &mapped, &err) != 0)
		return fail_log(c, "token certificate names no user", &err, PAM_AUTH_ERR);
	same = strcmp(mapped, c->user) == 0;
	if (!same)
		pam_syslog(c->pamh, LOG_NOTICE,
			   "user '%s': token certificate maps to '%s' (trust.map = %s), "
			   "not to this user", c->user, mapped,
			   kh_map_rule_name(c->policy->trust.map));
	free(mapped);
	return same ? PAM_SUCCESS : PAM_AUTH_ERR;
}

/*
 * Refuse a locked PIN without trying; warn when few tries are left.  A
 * warning that cannot reach the user (no conversation, or one that cannot
 * show messages) means the try is not made at all: the user must never
 * lock their token unwarned.
 */
static int
check_pin_state(struct auth_ctx *c)
{
	unsigned f = c->info.pin_flags;
	const char *warning = NULL;

	if (f & KH_P11_PIN_LOCKED) {
		pam_syslog(c->pamh, LOG_NOTICE, "user '%s': token '%s': PIN locked; not tried",
			   c->user, c->token_label);
		pam_error(c->pamh, "kubehsm: token '%s': PIN locked — ask an administrator "
			  "to unblock it", c->token_label);
		return PAM_MAXTRIES;
	}
	if (f & KH_P11_PIN_FINAL_TRY)
		warning = "final PIN try — a wrong PIN locks the token";
	else if (f & KH_P11_PIN_COUNT_LOW)
		warning = "PIN count low — a wrong PIN was entered recently";
	if (warning != NULL &&
	    pam_info(c->pamh, "kubehsm: token '%s': %s", c->token_label, warning) != PAM_SUCCESS) {
		pam_syslog(c->pamh, LOG_NOTICE, "user '%s': token '%s': %s, and the user cannot "
			   "be warned (no conversation); not tried", c->user, c->token_label,
			   f & KH_P11_PIN_FINAL_TRY ? "final PIN try" : "PIN count low");
		return PAM_AUTH_ERR;
	}
	return PAM_SUCCESS;
}

/*
 * The PIN: prompted for, unless the admin said an earlier module's password
 * is the PIN (authtok_is_pin) and use_first_pass/try_first_pass asks for it.
 * *stored tells whether it came from PAM_AUTHTOK.
 */
static int
get_pin(struct auth_ctx *c, bool *stored)
{
	const void *item = NULL;

	*stored = false;
	if ((c->opts->use_first_pass || c->opts->try_first_pass) && c->opts->authtok_is_pin) {
		if (pam_get_item(c->pamh, PAM_AUTHTOK, &item) == PAM_SUCCESS &&
		    item != NULL) {
			c->pin = strdup(item);
			*stored = true;
			return c->pin ? PAM_SUCCESS : PAM_BUF_ERR;
		}
		if (c->opts->use_first_pass) {
			pam_syslog(c->pamh, LOG_NOTICE, "user '%s': use_first_pass but no "
				   "earlier module set a password", c->user);
			return PAM_AUTH_ERR;
		}
	}
	return kh_pam_prompt_pin(c->pamh, c->token_label, &c->pin);
}

/*
 * try_first_pass: the stored password was not the PIN.  As its name
 * promises, ask for the PIN — after reading the token's PIN state again:
 * the failed try may have made the next one the last.
 */
static int
prompt_again(struct auth_ctx *c)
{
	kh_error err = { 0 };
	int rc;

	kh_secure_strfree(c->pin);
	c->pin = NULL;
	kh_p11_token_info_clear(&c->info);
	if (kh_p11_find_token(c->p11, c->token_label, &c->info, &err) != 0)
		return fail_log(c, "token", &err, pam_code_for_lookup(&err));
	if ((rc = check_pin_state(c)) != PAM_SUCCESS)
		return rc;
	return kh_pam_prompt_pin(c->pamh, c->token_label, &c->pin);
}

/* One C_Login.  *wrong is set when the PIN was refused as incorrect. */
static int
token_login(struct auth_ctx *c, bool stored, bool *wrong)
{
	kh_error err = { 0 };

	*wrong = false;
	if (kh_p11_login(c->p11, c->pin, &err) != 0) {
		switch (err.code) {
		case KH_ERR_AUTH:
			*wrong = true;
			if (!stored)
				pam_error(c->pamh, "kubehsm: token '%s': wrong PIN", c->token_label);
			return fail_log(c, stored ? "token login with the earlier module's "
					"password" : "token login", &err, PAM_AUTH_ERR);
		case KH_ERR_LOCKED:
			pam_error(c->pamh, "kubehsm: token '%s': PIN locked", c->token_label);
			return fail_log(c, "token login", &err, PAM_MAXTRIES);
		default:
			return fail_log(c, "token login", &err, pam_code_for_lookup(&err));
		}
	}
	return PAM_SUCCESS;
}

/* The PIN (a second one only under try_first_pass), then proof of
 * possession. */
static int
login_and_prove(struct auth_ctx *c)
{
	kh_error err = { 0 };
	bool stored = false, wrong = false;
	int rc;

	if ((rc = get_pin(c, &stored)) != PAM_SUCCESS)
		return rc;
	rc = token_login(c, stored, &wrong);
	if (rc != PAM_SUCCESS && wrong && stored && c->opts->try_first_pass) {
		if ((rc = prompt_again(c)) != PAM_SUCCESS)
			return rc;
		rc = token_login(c, false, &wrong);
	}
	if (rc != PAM_SUCCESS)
		return rc;
	if (kh_p11_find_key(c->p11, c->key_label, c->policy->token.key_id,
			    &c->key, &err) != 0)
		return fail_log(c, "token key", &err, pam_code_for_lookup(&err));
	if (kh_p11_prove_possession(c->key, c->cert, &err) != 0)
		return fail_log(c, "proof of possession", &err,
				err.code == KH_ERR_AUTH ? PAM_AUTH_ERR : PAM_AUTHINFO_UNAVAIL);
	return PAM_SUCCESS;
}

static int
build_login(struct auth_ctx *c, struct kh_pam_login **out)
{
	struct kh_pam_login *l = calloc(1, sizeof(*l));
	kh_error err = { 0 };

	*out = NULL;
	if (l == NULL)
		return PAM_BUF_ERR;
	l->uid = c->uid;
	l->user = strdup(c->user);
	l->token_label = strdup(c->token_label);
	l->token_serial = strdup(c->info.serial ? c->info.serial : "");
	if (l->user == NULL || l->token_label == NULL || l->token_serial == NULL)
		goto oom;
	l->token_uri = kh_p11_uri_format(c->token_label, c->key_label,
					 c->policy->token.key_id, c->info.serial, &err);
	if (l->token_uri == NULL)
		goto fail;
	if (kh_x509_cert_to_pem(c->cert, &l->token_cert_pem, &err) != 0 ||
	    kh_x509_not_after(c->cert, &l->token_not_after, &err) != 0)
		goto fail;
	l->kube_user = kh_template_expand(c->policy->identity.username, c->user, &err);
	if (l->kube_user == NULL)
		goto fail;
	if (kh_pam_kube_groups(c->pamh, c->policy, c->cert, c->user, c->gid, &l->groups,
			       &l->ngroups, &err) != 0)
		goto fail;
	if (c->policy->session.cache_pin) {
		l->pin = c->pin;     /* ownership moves to the handle's data */
		c->pin = NULL;
	}
	*out = l;
	return PAM_SUCCESS;
oom:
	kh_fail(&err, KH_ERR_INTERNAL, "out of memory");
fail:
	kh_pam_login_free(l);
	return fail_log(c, "session identity", &err,
			err.code == KH_ERR_CONFIG ? PAM_SERVICE_ERR : PAM_AUTH_ERR);
}

int
kh_pam_authenticate(pam_handle_t *pamh, const struct kh_pam_opts *opts)
{
	struct auth_ctx c = { .pamh = pamh, .opts = opts };
	struct kh_pam_login *login = NULL;
	int rc;

	rc = kh_pam_get_user(pamh, &c.user, &c.uid, &c.gid);
	if (rc != PAM_SUCCESS)
		return rc;
	c.policy = kh_pam_load_policy(pamh, opts);
	if (c.policy == NULL)
		return PAM_SERVICE_ERR;

	if ((rc = expand_templates(&c)) != PAM_SUCCESS ||
	    (rc = find_token_and_cert(&c)) != PAM_SUCCESS ||
	    (rc = validate_and_map_cert(&c)) != PAM_SUCCESS ||
	    (rc = check_pin_state(&c)) != PAM_SUCCESS ||
	    (rc = login_and_prove(&c)) != PAM_SUCCESS)
		goto out;

	if (!opts->no_cache) {
		if ((rc = build_login(&c, &login)) != PAM_SUCCESS)
			goto out;
		if ((rc = kh_pam_login_save(pamh, login)) != PAM_SUCCESS)
			goto out;
		/* For a session step in another process (sshd); a failure is
		 * logged, and the in-process path above still works. */
		(void)kh_pam_handoff_put(pamh, login);
	}
	pam_syslog(pamh, LOG_INFO, "user '%s': authenticated with token '%s' (serial %s%s)",
		   c.user, c.token_label, c.info.serial ? c.info.serial : "",
		   c.forwarded ? ", forwarded" : "");
out:
	auth_ctx_clear(&c);
	return rc;
}
