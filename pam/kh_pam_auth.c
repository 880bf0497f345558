/*
 * kh_pam_auth — the auth step of pam_kubehsm.
 *
 * The user's token is the one whose certificate is the user's
 * (lib/kh_token.h): every token of the module is looked at without
 * logging in, and no token whose certificate is not the user's is ever
 * offered a PIN.
 *
 * Order matters for the token's retry counter: everything that can fail
 * without the PIN (the user's token found by its certificate, validated
 * and mapped to this user, a renewal's certificate the session's, PIN not
 * locked, the user can be warned of a last try) is checked before the
 * user is asked for a PIN, and the PIN is tried exactly once — twice only
 * under try_first_pass with authtok_is_pin, when the earlier module's
 * password was not the PIN.  A key that wants its PIN again for each
 * signature (CKA_ALWAYS_AUTHENTICATE) gets the same PIN from the handle
 * (lib/kh_p11_ui.h): one PIN, typed once, through PAM.
 *
 * A token the user forwarded from their laptop is talked to only by a
 * process that has become the user (kh_pam_forward_child.c): it chooses
 * the token and sends its certificate, which is judged here again by the
 * same rules (kh_token_choose_read) before anything else; it gets the PIN
 * with a challenge of root's, and the signature it returns is verified
 * here.  Everything else — the order above, the messages, what the session
 * step gets — is the same for both.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include <openssl/x509.h>
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "cache/kh_cache.h"
#include "lib/kh_challenge.h"
#include "lib/kh_mem.h"
#include "lib/kh_pkcs11.h"
#include "lib/kh_template.h"
#include "lib/kh_token.h"
#include "lib/kh_x509.h"
#include "pam/kh_pam.h"
#include "pam/kh_pam_forward_child.h"

/* Everything one authentication holds; released by auth_ctx_clear. */
struct auth_ctx {
	pam_handle_t *pamh;
	const struct kh_pam_opts *opts;
	struct kh_policy *policy;
	const char *user;
	uid_t uid;
	gid_t gid;
	char *token_label;      /* token.label expanded; "" = any */
	char *key_label;        /* token.key_label expanded; "" = any */
	unsigned char *key_id;  /* token.key_id; NULL = any */
	size_t key_id_len;
	struct kh_p11_uri uri;  /* token.uri; all NULL = every token */
	struct kh_token_rules rules;
	struct kh_p11 *p11;     /* the bastion's module; NULL when forwarded */
	bool forwarded;         /* the user's forwarded token, at fwd_path */
	char *fwd_path;
	struct kh_fwd *fwd;     /* the process talking to it, as the user */
	struct kh_fwd_hello hello;    /* what it found */
	struct kh_fwd_answer answer;  /* its answer to the PIN */
	struct kh_token_choice choice;
	struct kh_p11_token *tok;         /* the user's token, in choice */
	const struct kh_p11_cert *cert;   /* the user's certificate, in choice */
	EVP_PKEY *key;
	char *pin;
};

static void
auth_ctx_clear(struct auth_ctx *c)
{
	EVP_PKEY_free(c->key);          /* before the module goes away */
	kh_token_choice_free(&c->choice);
	kh_p11_close(c->p11);
	kh_fwd_end(c->fwd);
	kh_fwd_hello_clear(&c->hello);
	kh_fwd_answer_clear(&c->answer);
	free(c->fwd_path);
	kh_secure_strfree(c->pin);
	free(c->token_label);
	free(c->key_label);
	free(c->key_id);
	kh_p11_uri_clear(&c->uri);
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

/* The policy's token section as selection rules: templates expanded, the
 * URI and key id parsed (the loader checked both). */
static int
token_rules(struct auth_ctx *c, struct kh_token_rules *r)
{
	const struct kh_policy *p = c->policy;
	kh_error err = { 0 };

	c->token_label = kh_template_expand(p->token.label, c->user, &err);
	if (c->token_label == NULL)
		return fail_log(c, "token.label", &err, PAM_SERVICE_ERR);
	c->key_label = kh_template_expand(p->token.key_label, c->user, &err);
	if (c->key_label == NULL)
		return fail_log(c, "token.key_label", &err, PAM_SERVICE_ERR);
	if (p->token.key_id[0] != '\0' &&
	    kh_p11_hex_decode(p->token.key_id, &c->key_id, &c->key_id_len, &err) != 0)
		return fail_log(c, "token.key_id", &err, PAM_SERVICE_ERR);
	if (p->token.uri[0] != '\0' && kh_p11_uri_parse_token(p->token.uri, &c->uri, &err) != 0)
		return fail_log(c, "token.uri", &err, PAM_SERVICE_ERR);
	*r = (struct kh_token_rules){
		.uri = &c->uri,
		.label = c->token_label,
		.key_label = c->key_label,
		.key_id = c->key_id,
		.key_id_len = c->key_id_len,
		.ca_file = p->trust.ca_file,
		.crl_file = p->trust.crl_file,
		.map = p->trust.map,
		.domains = (const char *const *)p->trust.domains,
		.ndomains = p->trust.ndomains,
	};
	return PAM_SUCCESS;
}

/* With debug: what every token is to this user (kubehsm token says more). */
static void
debug_choice(struct auth_ctx *c)
{
	const struct kh_token_choice *ch = &c->choice;
	char name[192];

	if (!c->opts->debug)
		return;
	for (size_t i = 0; i < ch->ntokens; i++) {
		kh_token_name(&ch->tokens[i], name, sizeof(name));
		if (ch->evals[i].skip != NULL) {
			kh_pam_debug(c->pamh, c->opts, "user '%s': token %s: %s", c->user, name,
				     ch->evals[i].skip);
			continue;
		}
		for (size_t j = 0; j < ch->tokens[i].ncerts; j++) {
			const struct kh_cert_eval *e = &ch->evals[i].certs[j];

			kh_pam_debug(c->pamh, c->opts, "user '%s': token %s certificate %zu: %s%s%s%s",
				     c->user, name, j + 1, kh_cert_verdict_name(e->verdict),
				     e->user != NULL ? " (maps to " : "", e->user != NULL ? e->user : "",
				     e->user != NULL ? ")" : "");
		}
	}
}

/*
 * Start the forwarded token's process and read what it found (c->hello;
 * a process started before holds the same certificate, or is refused).
 * NULL, or the one token it found, its certificate parsed here.
 */
static struct kh_p11_token *
fwd_start(struct auth_ctx *c, kh_error *err)
{
	struct kh_fwd_spec spec = {
		.module = c->policy->pkcs11.forward_module, .socket = c->fwd_path,
		.rules = &c->rules, .user = c->user, .key_label = c->key_label,
		.uid = c->uid, .gid = c->gid,
	};
	struct kh_fwd_hello first = c->hello;
	struct kh_p11_token *t;
	bool again = c->fwd != NULL;

	kh_fwd_end(c->fwd);
	c->fwd = kh_fwd_start(&spec, &c->hello, err);
	if (c->fwd != NULL && c->hello.code != KH_OK)
		kh_fail(err, c->hello.code, "%s", c->hello.msg);
	if (again) {
		bool same = c->fwd != NULL && c->hello.code == KH_OK &&
			    c->hello.cert_len == first.cert_len &&
			    memcmp(c->hello.cert_der, first.cert_der, first.cert_len) == 0;

		kh_fwd_hello_clear(&first);
		if (c->fwd != NULL && c->hello.code == KH_OK && !same) {
			kh_fail(err, KH_ERR_REFUSED, "the forwarded token changed between two "
				"PIN tries; refused");
			return NULL;
		}
	}
	if (c->fwd == NULL || c->hello.code != KH_OK)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	t->slot_id = c->hello.slot_id;
	t->present = t->initialized = t->certs_read = true;
	t->pin_flags = c->hello.pin_flags;
	t->slot_description = strdup("forwarded");
	t->slot_manufacturer = strdup("");
	t->label = strdup(c->hello.label);
	t->manufacturer = strdup(c->hello.manufacturer);
	t->model = strdup(c->hello.model);
	t->serial = strdup(c->hello.serial);
	t->certs = calloc(1, sizeof(*t->certs));
	if (t->slot_description == NULL || t->slot_manufacturer == NULL || t->label == NULL ||
	    t->manufacturer == NULL || t->model == NULL || t->serial == NULL || t->certs == NULL ||
	    (t->certs[0].label = strdup(c->hello.cert_label)) == NULL) {
		kh_p11_tokens_free(t, 1);
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	t->ncerts = 1;
	memcpy(t->certs[0].id, c->hello.id, c->hello.id_len);
	t->certs[0].id_len = c->hello.id_len;
	t->certs[0].x509 = kh_fwd_hello_cert(&c->hello, err);
	if (t->certs[0].x509 == NULL) {
		kh_p11_tokens_free(t, 1);
		return NULL;
	}
	return t;
}

/* The forwarded token: what its process chose, judged here again by the
 * same rules; kh_token_choose's result. */
static int
fwd_choose(struct auth_ctx *c, kh_error *err)
{
	memset(&c->choice, 0, sizeof(c->choice));
	c->choice.outcome = KH_TOKEN_NONE;
	c->choice.tokens = fwd_start(c, err);
	if (c->choice.tokens == NULL) {
		if (c->fwd != NULL && c->hello.code != KH_OK)
			c->choice.outcome = c->hello.outcome;
		return -1;
	}
	c->choice.ntokens = 1;
	return kh_token_choose_read(&c->rules, c->user, &c->choice, err);
}

/* The user's token, found by its certificate before any PIN. */
static int
find_users_token(struct auth_ctx *c)
{
	kh_error err = { 0 };
	int rc;

	if ((rc = token_rules(c, &c->rules)) != PAM_SUCCESS)
		return rc;
	kh_pam_time_mark(c->opts);
	c->p11 = kh_pam_open_token_module(c->pamh, c->opts, c->policy, c->user, c->uid,
					  &c->fwd_path, &err);
	c->forwarded = c->fwd_path != NULL;
	kh_pam_time_add(c->opts, KH_STEP_P11_LOAD);
	if (c->p11 == NULL && !c->forwarded)
		return lookup_fail(c, "PKCS#11 module", &err,
				   err.code == KH_ERR_CONFIG ? PAM_SERVICE_ERR : PAM_AUTHINFO_UNAVAIL);
	rc = c->forwarded ? fwd_choose(c, &err) :
		kh_token_choose(c->p11, &c->rules, c->user, &c->choice, &err);
	kh_pam_time_add(c->opts, KH_STEP_FIND);         /* certificates validated too */
	debug_choice(c);
	if (rc != 0) {
		switch (err.code == KH_ERR_CONFIG || err.code == KH_ERR_INTERNAL ?
			KH_TOKEN_NONE : c->choice.outcome) {
		case KH_TOKEN_AMBIGUOUS:
			/* Only the user can settle it (a card out): say so always. */
			(void)pam_error(c->pamh, "kubehsm: %s", err.msg);
			return fail_log(c, "token", &err, PAM_AUTHINFO_UNAVAIL);
		case KH_TOKEN_REJECTED:
			return lookup_fail(c, "token certificate rejected", &err, PAM_AUTH_ERR);
		default:
			return lookup_fail(c, "token", &err, pam_code_for_lookup(&err));
		}
	}
	c->tok = &c->choice.tokens[c->choice.token];
	c->cert = &c->tok->certs[c->choice.cert];
	kh_pam_debug(c->pamh, c->opts, "user '%s': token '%s' serial '%s' slot %lu, certificate "
		     "%zu of %zu, pin flags 0x%x", c->user, c->tok->label, c->tok->serial,
		     c->tok->slot_id, c->choice.cert + 1, c->tok->ncerts, c->tok->pin_flags);
	return PAM_SUCCESS;
}

/*
 * `kubehsm login --renew` keeps the session's identity: a token holding
 * another certificate is refused here, before the PIN is asked, instead of
 * by the session step after a try was spent on it.  (The session step
 * still decides: this only spares the try.)  Only in the kubehsm service,
 * whose auth line says `forwarded` and session line `join`: kubehsm-login
 * is what sets KUBEHSM_RENEW.
 */
static int
renew_precheck(struct auth_ctx *c)
{
	const char *r = pam_getenv(c->pamh, KH_RENEW_ENV);
	struct kh_cache_entry *e = NULL;
	size_t n = 0, live = 0, same = 0;
	kh_error err = { 0 };
	char *pem = NULL;

	if (!(c->opts->join || c->opts->forwarded) || r == NULL || strcmp(r, "1") != 0)
		return PAM_SUCCESS;
	if (kh_x509_cert_to_pem(c->cert->x509, &pem, &err) != 0)
		return fail_log(c, "token certificate", &err, PAM_BUF_ERR);
	if (kh_cache_list(c->uid, &e, &n, &err) != 0) {
		free(pem);
		return PAM_SUCCESS;     /* the session step will say what is wrong */
	}
	for (size_t i = 0; i < n; i++) {
		if (e[i].state != KH_MISS_NONE || e[i].rec == NULL ||
		    strcmp(e[i].rec->user, c->user) != 0)
			continue;
		live++;
		same += strcmp(e[i].rec->token_cert_pem, pem) == 0;
	}
	kh_cache_entries_free(e, n);
	free(pem);
	if (live == 0 || same == live)
		return PAM_SUCCESS;
	(void)pam_error(c->pamh, "kubehsm: token '%s' holds another certificate than the one "
			"your kube session was started with, and a renewal keeps the identity: "
			"insert that token, or run 'kubehsm logout', then 'kubehsm login'. "
			"The PIN was not asked.", c->tok->label);
	pam_syslog(c->pamh, LOG_NOTICE, "user '%s': renew refused before the PIN: token '%s' "
		   "holds another certificate than the session's", c->user, c->tok->label);
	return PAM_PERM_DENIED;
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
	unsigned f = c->tok->pin_flags;
	const char *warning = NULL;

	if (f & KH_P11_PIN_LOCKED) {
		pam_syslog(c->pamh, LOG_NOTICE, "user '%s': token '%s': PIN locked; not tried",
			   c->user, c->tok->label);
		pam_error(c->pamh, "kubehsm: token '%s': PIN locked — ask an administrator "
			  "to unblock it", c->tok->label);
		return PAM_MAXTRIES;
	}
	if (f & KH_P11_PIN_FINAL_TRY)
		warning = "final PIN try — a wrong PIN locks the token";
	else if (f & KH_P11_PIN_COUNT_LOW)
		warning = "PIN count low — a wrong PIN was entered recently";
	if (warning != NULL &&
	    pam_info(c->pamh, "kubehsm: token '%s': %s", c->tok->label, warning) != PAM_SUCCESS) {
		pam_syslog(c->pamh, LOG_NOTICE, "user '%s': token '%s': %s, and the user cannot "
			   "be warned (no conversation); not tried", c->user, c->tok->label,
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
	return KH_STEP(c->opts, KH_STEP_CONV, kh_pam_prompt_pin(c->pamh, c->tok->label, &c->pin));
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
	if (c->forwarded) {
		/* One PIN per process: a new one, which reads the state afresh. */
		struct kh_p11_token *t = fwd_start(c, &err);

		if (t == NULL)
			return fail_log(c, "token", &err, pam_code_for_lookup(&err));
		c->tok->pin_flags = t->pin_flags;
		kh_p11_tokens_free(t, 1);
	} else if (KH_STEP(c->opts, KH_STEP_FIND,
			   kh_p11_refresh_token(c->p11, c->tok, &err)) != 0) {
		return fail_log(c, "token", &err, pam_code_for_lookup(&err));
	}
	if ((rc = check_pin_state(c)) != PAM_SUCCESS)
		return rc;
	return KH_STEP(c->opts, KH_STEP_CONV, kh_pam_prompt_pin(c->pamh, c->tok->label, &c->pin));
}

/*
 * The forwarded token's login: the PIN and root's challenge to its process.
 * 0 when it logged in (c->answer says whether it also signed); -1 with err
 * when the login failed or the process failed to answer.
 */
static int
fwd_login(struct auth_ctx *c, kh_error *err)
{
	kh_fwd_answer_clear(&c->answer);
	if (kh_fwd_prove(c->fwd, c->pin, &c->answer, err) != 0)
		return -1;
	if (c->answer.stage != KH_FWD_STAGE_LOGIN)
		return 0;
	c->tok->pin_flags = c->answer.pin_flags;
	return kh_fail(err, c->answer.code, "%s", c->answer.msg);
}

/* One C_Login.  *wrong is set when the PIN was refused as incorrect. */
static int
token_login(struct auth_ctx *c, bool stored, bool *wrong)
{
	kh_error err = { 0 };

	*wrong = false;
	if (c->forwarded ? fwd_login(c, &err) != 0 : kh_p11_login(c->p11, c->pin, &err) != 0) {
		switch (err.code) {
		case KH_ERR_AUTH:
			*wrong = true;
			if (!stored)
				pam_error(c->pamh, "kubehsm: token '%s': wrong PIN", c->tok->label);
			return fail_log(c, stored ? "token login with the earlier module's "
					"password" : "token login", &err, PAM_AUTH_ERR);
		case KH_ERR_LOCKED:
			pam_error(c->pamh, "kubehsm: token '%s': PIN locked", c->tok->label);
			return fail_log(c, "token login", &err, PAM_MAXTRIES);
		default:
			return fail_log(c, "token login", &err, pam_code_for_lookup(&err));
		}
	}
	return PAM_SUCCESS;
}

/* The forwarded token's proof: its process found the key and signed root's
 * challenge (c->answer), and the signature verifies with the certificate
 * root validated. */
static int
fwd_prove(struct auth_ctx *c)
{
	kh_error err = { 0 };

	if (c->answer.code != KH_OK) {
		kh_fail(&err, c->answer.code, "%s", c->answer.msg);
		if (c->answer.stage == KH_FWD_STAGE_KEY)
			return fail_log(c, "token key", &err, pam_code_for_lookup(&err));
		return fail_log(c, "proof of possession", &err,
				err.code == KH_ERR_AUTH ? PAM_AUTH_ERR : PAM_AUTHINFO_UNAVAIL);
	}
	if (kh_fwd_verify(c->fwd, c->cert->x509, &c->answer, &err) != 0)
		return fail_log(c, "proof of possession", &err,
				err.code == KH_ERR_AUTH ? PAM_AUTH_ERR : PAM_AUTHINFO_UNAVAIL);
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
	rc = KH_STEP(c->opts, KH_STEP_LOGIN, token_login(c, stored, &wrong));
	if (rc != PAM_SUCCESS && wrong && stored && c->opts->try_first_pass) {
		if ((rc = prompt_again(c)) != PAM_SUCCESS)
			return rc;
		rc = KH_STEP(c->opts, KH_STEP_LOGIN, token_login(c, false, &wrong));
	}
	if (rc != PAM_SUCCESS)
		return rc;
	if (c->forwarded)
		return fwd_prove(c);
	if (KH_STEP(c->opts, KH_STEP_CHALLENGE,
		    kh_p11_find_cert_key(c->p11, c->cert, c->key_label, c->tok->label, &c->key,
				    &err)) != 0)
		return fail_log(c, "token key", &err, pam_code_for_lookup(&err));
	if (KH_STEP(c->opts, KH_STEP_CHALLENGE,
		    kh_p11_prove_possession(c->key, c->cert->x509, &err)) != 0)
		return fail_log(c, "proof of possession", &err,
				err.code == KH_ERR_AUTH ? PAM_AUTH_ERR : PAM_AUTHINFO_UNAVAIL);
	return PAM_SUCCESS;
}

static int
build_login(struct auth_ctx *c, struct kh_pam_login **out)
{
	struct kh_pam_login *l = calloc(1, sizeof(*l));
	char idhex[2 * KH_P11_ID_MAX + 1];
	kh_error err = { 0 };

	*out = NULL;
	if (l == NULL)
		return PAM_BUF_ERR;
	l->uid = c->uid;
	l->user = strdup(c->user);
	l->token_label = strdup(c->tok->label);
	l->token_serial = strdup(c->tok->serial);
	if (l->user == NULL || l->token_label == NULL || l->token_serial == NULL)
		goto oom;
	l->token_uri = kh_p11_uri_format(c->tok->label, c->key_label,
					 kh_p11_hex_encode(c->cert->id, c->cert->id_len, idhex,
							   sizeof(idhex)),
					 c->tok->serial, &err);
	if (l->token_uri == NULL)
		goto fail;
	if (kh_x509_cert_to_pem(c->cert->x509, &l->token_cert_pem, &err) != 0 ||
	    kh_x509_not_after(c->cert->x509, &l->token_not_after, &err) != 0)
		goto fail;
	l->kube_user = kh_template_expand(c->policy->identity.username, c->user, &err);
	if (l->kube_user == NULL)
		goto fail;
	if (kh_pam_kube_groups(c->pamh, c->policy, c->cert->x509, c->user, c->gid, &l->groups,
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

	/* A second authentication in one handle: the module the first one
	 * kept goes before this one initialises it again. */
	kh_pam_drop(pamh, KH_PAM_DATA_MODULE);
	rc = KH_STEP(opts, KH_STEP_USER, kh_pam_get_user(pamh, &c.user, &c.uid, &c.gid));
	if (rc != PAM_SUCCESS)
		return rc;
	KH_TIMED(opts, KH_STEP_POLICY, c.policy = kh_pam_load_policy(pamh, opts));
	if (c.policy == NULL)
		return PAM_SERVICE_ERR;

	if ((rc = find_users_token(&c)) != PAM_SUCCESS ||
	    (rc = renew_precheck(&c)) != PAM_SUCCESS ||
	    (rc = check_pin_state(&c)) != PAM_SUCCESS ||
	    (rc = login_and_prove(&c)) != PAM_SUCCESS)
		goto out;

	if (!opts->no_cache) {
		if ((rc = KH_STEP(opts, KH_STEP_IDENTITY, build_login(&c, &login))) != PAM_SUCCESS)
			goto out;
		if ((rc = KH_STEP(opts, KH_STEP_HANDOFF, kh_pam_login_save(pamh, login))) !=
		    PAM_SUCCESS)
			goto out;
		/* For a session step in another process (sshd); a failure is
		 * logged, and the in-process path above still works. */
		(void)KH_STEP(opts, KH_STEP_HANDOFF, kh_pam_handoff_put(pamh, login));
	}
	pam_syslog(pamh, LOG_INFO, "user '%s': authenticated with token '%s' (serial %s%s)",
		   c.user, c.tok->label, c.tok->serial, c.forwarded ? ", forwarded" : "");
	if (!opts->no_cache) {
		EVP_PKEY_free(c.key);   /* the token's key goes before its token */
		c.key = NULL;
		KH_TIMED(opts, KH_STEP_P11_CLOSE, kh_pam_module_keep(pamh, opts, c.policy, &c.p11));
		kh_pam_policy_keep(pamh, &c.policy);
	}
out:
	KH_TIMED(opts, KH_STEP_P11_CLOSE, auth_ctx_clear(&c));
	return rc;
}
