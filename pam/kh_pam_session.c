/*
 * kh_pam_session — the session step of pam_kubehsm.
 *
 * open_session (not setcred) mints and caches: for scope "session" the
 * record must land in the login's session keyring, which exists only once
 * pam_keyinit has run in the session stack, and sshd calls setcred before
 * open_session.  Per configured issuer: open the issuer key on PKCS#11
 * (root-only PIN file), generate an in-memory session key, certify it,
 * close the issuer key, store the record with login accounting.
 *
 * What authentication found comes from this handle (pam_set_data) or, when
 * auth ran in another process (sshd keyboard-interactive), from the
 * hand-off stash (kh_pam_handoff).  It must be for the user this session
 * is opened for: sudo authenticates the invoking user and then changes
 * PAM_USER to the target, and no record is minted for either then.
 *
 * open_session records exactly what it stored (uid, user, scope, issuers,
 * record serials) and close_session undoes that, never what PAM_USER says
 * at close time.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <openssl/x509.h>
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "cache/kh_cache.h"
#include "lib/kh_mem.h"
#include "lib/kh_p11_issuer.h"
#include "lib/kh_pin_file.h"
#include "lib/kh_pkcs11.h"
#include "lib/kh_rundir.h"
#include "pam/kh_pam.h"
#include "lib/kh_x509.h"

static const char *
issuer_name(const struct kh_issuer *is)
{
	return is->id[0] ? is->id : "(default)";
}

static time_t
min_time(time_t a, time_t b)
{
	return a < b ? a : b;
}

/* Ask polkit whether this login may cache credentials.  1 yes, 0 no, -1 error. */
static int
polkit_allows(pam_handle_t *pamh, const struct kh_pam_opts *opts,
	      const struct kh_policy *policy, const struct kh_pam_login *l)
{
	const void *service = NULL;
	struct kh_polkit_login pl;
	bool unreachable = false;
	kh_error err = { 0 };
	int rc;

	if (policy->polkit.mode == KH_POLKIT_OFF) {
		kh_pam_debug(pamh, opts, "user '%s': polkit.mode = off: polkit not asked", l->user);
		return 1;
	}
	if (pam_get_item(pamh, PAM_SERVICE, &service) != PAM_SUCCESS || service == NULL)
		service = "";
	pl = (struct kh_polkit_login){
		.service = service,
		.user = l->user,
		.token_serial = l->token_serial,
		.kube_user = l->kube_user,
		.kube_groups = (const char *const *)l->groups,
		.nkube_groups = l->ngroups,
	};
	/* The subject is this login: the host process, as the user's uid. */
	rc = kh_pam_polkit_check_login(opts->timing, policy->polkit.mode, getpid(), l->uid, &pl,
				       &unreachable, &err);
	if (rc == 1 && unreachable)
		pam_syslog(pamh, LOG_WARNING, "user '%s': %s", l->user, err.msg);
	else if (rc == 0)
		pam_syslog(pamh, LOG_NOTICE, "user '%s': polkit: %s; no kube credentials "
			   "cached", l->user, err.msg);
	else if (rc < 0)
		kh_pam_log_fail(pamh, l->user, "polkit", &err);
	else
		kh_pam_debug(pamh, opts, "user '%s': polkit allows caching", l->user);
	return rc;
}

/*
 * Issuer chain + key; the caller frees key before closing *p11.  The
 * module auth kept, when it is the issuer's (kh_pam_module.c); else one of
 * its own.  The key's public half is the certificate's: on a network HSM
 * every attribute read is a round trip (issue #30).  That the token's key
 * is the certificate's shows when the session certificate it signs is
 * verified with the issuer certificate (kh_x509_mint_cert), before it is
 * stored.
 */
static int
open_issuer(pam_handle_t *pamh, const struct kh_issuer *is, struct kh_p11 **p11,
	    EVP_PKEY **key, STACK_OF(X509) **chain, char **chain_pem, kh_error *err)
{
	const EVP_PKEY *pub;
	char *pin = NULL;
	int rc;

	*p11 = NULL;
	if (kh_p11_read_pin_file(is->pin_file, &pin, err) != 0)
		return -1;
	if (kh_x509_load_chain(is->cert_file, NULL, chain, chain_pem, err) != 0) {
		kh_secure_strfree(pin);
		return -1;
	}
	pub = X509_get0_pubkey(sk_X509_value(*chain, 0));
	if (pub == NULL) {
		kh_secure_strfree(pin);
		return kh_fail(err, KH_ERR_CONFIG, "%s: the issuer certificate's public key "
			       "cannot be read", is->cert_file);
	}
	*p11 = kh_pam_module_take(pamh, is->module, &is->env);
	if (*p11 != NULL)
		rc = kh_p11_uri_key(*p11, is->key, pin, pub, key, err);
	else
		rc = kh_p11_open_uri_key(is->module, &is->env, is->key, pin, pub, p11, key, err);
	kh_secure_strfree(pin);
	return rc;
}

/*
 * Every login on the host signs with the same issuer key, often on one
 * token store (a SoftHSM2 directory, an HSM partition) that does not take
 * forty logins at once: "cannot list slots", "no token labelled ..." (issue
 * #30).  So the issuer step — module, C_Login, lookup, the one signature,
 * logout — takes its turn behind the host's issuer lock.  Nothing of the
 * user's is held then (auth logged their token out), and the session key
 * is made before.  A login waits for its turn at most this long; forty
 * turns take under a second here.
 */
#define KH_ISSUER_LOCK_MS 10000

/* A failure another try may not see: the module or token, not the
 * policy, a PIN or a refusal. */
static bool
issuer_transient(const kh_error *err)
{
	return err->code == KH_ERR_TOKEN || err->code == KH_ERR_NOTFOUND;
}

/* open_issuer, once more after a transient failure (said in the log), on
 * a module of its own. */
static int
open_issuer_retry(pam_handle_t *pamh, const struct kh_issuer *is, struct kh_p11 **p11,
		  EVP_PKEY **key, STACK_OF(X509) **chain, char **chain_pem, kh_error *err)
{
	if (open_issuer(pamh, is, p11, key, chain, chain_pem, err) == 0)
		return 0;
	if (!issuer_transient(err))
		return -1;
	pam_syslog(pamh, LOG_WARNING, "issuer %s: %s; trying once more", issuer_name(is),
		   err->msg);
	EVP_PKEY_free(*key);
	*key = NULL;
	kh_p11_close(*p11);
	*p11 = NULL;
	sk_X509_pop_free(*chain, X509_free);
	*chain = NULL;
	free(*chain_pem);
	*chain_pem = NULL;
	return open_issuer(pamh, is, p11, key, chain, chain_pem, err);
}

/* The host's issuer lock; -2 (no lock, nothing to release) for a process
 * that is not root, which cannot reach the run directory anyway. */
static int
issuer_lock(kh_error *err)
{
	if (geteuid() != 0)
		return -2;
	return kh_rundir_lock_issuer(KH_ISSUER_LOCK_MS, err);
}

/* Session key, session certificate and the record for one issuer. */
static int
mint_record(pam_handle_t *pamh, const struct kh_pam_opts *opts, const struct kh_policy *policy,
	    const struct kh_issuer *is, const struct kh_pam_login *l, struct kh_record *rec,
	    kh_error *err)
{
	struct kh_p11 *p11 = NULL;
	EVP_PKEY *issuer_key = NULL, *session_key = NULL;
	STACK_OF(X509) *chain = NULL;
	char *chain_pem = NULL, *cert_pem = NULL, *key_pem = NULL;
	size_t key_len = 0, n;
	time_t now = time(NULL), issuer_not_after, not_after;
	int rc = -1, lock = -2;

	KH_TIMED(opts, KH_STEP_KEYGEN, session_key = kh_x509_keygen(is->key_type, err));
	if (session_key == NULL)
		goto out;
	kh_pam_time_mark(opts);
	if ((lock = issuer_lock(err)) == -1 ||
	    open_issuer_retry(pamh, is, &p11, &issuer_key, &chain, &chain_pem, err) != 0 ||
	    kh_x509_not_after(sk_X509_value(chain, 0), &issuer_not_after, err) != 0) {
		kh_pam_time_add(opts, KH_STEP_ISSUER);
		goto out;
	}
	kh_pam_time_add(opts, KH_STEP_ISSUER);
	not_after = min_time(min_time(now + policy->session.ttl, l->token_not_after),
			     issuer_not_after);
	char host[256], uidnum[24];
	struct kh_template_var uid_vars[4];

	/* identity.uid's escapes but %s (the serial, which kh_x509_mint sets). */
	if (gethostname(host, sizeof(host)) != 0) {
		kh_fail(err, KH_ERR_INTERNAL, "gethostname: %s", strerror(errno));
		goto out;
	}
	host[sizeof(host) - 1] = '\0';
	snprintf(uidnum, sizeof(uidnum), "%lu", (unsigned long)l->uid);
	uid_vars[0] = (struct kh_template_var){ 'h', host };
	uid_vars[1] = (struct kh_template_var){ 'u', l->user };
	uid_vars[2] = (struct kh_template_var){ 'U', uidnum };
	uid_vars[3] = (struct kh_template_var){ 'k', l->kube_user };
	struct kh_mint_request req = {
		.issuer_cert = sk_X509_value(chain, 0),
		.issuer_key = issuer_key,
		.session_key = session_key,
		.username = l->kube_user,
		.groups = (const char *const *)l->groups,
		.ngroups = l->ngroups,
		.not_after = not_after,
		.now = now,
		.uid_template = policy->identity.uid,
		.uid_vars = uid_vars,
		.nuid_vars = sizeof(uid_vars) / sizeof(uid_vars[0]),
	};
	kh_pam_time_mark(opts);
	if (kh_x509_mint(&req, &cert_pem, err) != 0 ||
	    kh_x509_key_to_pem(session_key, &key_pem, &key_len, err) != 0) {
		kh_pam_time_add(opts, KH_STEP_MINT);
		goto out;
	}

	n = strlen(cert_pem) + strlen(chain_pem) + 1;
	rec->cert_chain_pem = malloc(n);
	if (rec->cert_chain_pem == NULL) {
		kh_pam_time_add(opts, KH_STEP_MINT);
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	snprintf(rec->cert_chain_pem, n, "%s%s", cert_pem, chain_pem);
	kh_pam_time_add(opts, KH_STEP_MINT);
	rec->key_pem = key_pem;
	key_pem = NULL;
	rec->created = now;
	rec->expires = not_after;
	rc = 0;
out:
	if (key_pem != NULL)
		kh_secure_free(key_pem, key_len);
	free(cert_pem);
	free(chain_pem);
	if (chain != NULL)
		sk_X509_pop_free(chain, X509_free);
	EVP_PKEY_free(session_key);
	kh_pam_time_mark(opts);
	EVP_PKEY_free(issuer_key);      /* before its module goes away */
	kh_p11_close(p11);
	if (lock >= 0)
		kh_rundir_unlock(lock);
	kh_pam_time_add(opts, KH_STEP_P11_CLOSE);
	return rc;
}

/* Fill and store one record through the cache (with login accounting). */
static int
seed_issuer(pam_handle_t *pamh, const struct kh_pam_opts *opts,
	    const struct kh_policy *policy, const struct kh_issuer *is,
	    const struct kh_pam_login *l, enum kh_login_kind kind, int32_t *serial)
{
	struct kh_record *rec = calloc(1, sizeof(*rec));
	kh_error err = { 0 };
	int rc = -1, delivered;

	if (rec == NULL)
		return -1;
	rec->version = KH_RECORD_VERSION;
	rec->uid = l->uid;
	rec->scope = policy->session.scope;
	rec->user = strdup(l->user);
	rec->issuer_id = strdup(is->id);
	rec->kube_user = strdup(l->kube_user);
	rec->token_cert_pem = strdup(l->token_cert_pem);
	rec->token_uri = strdup(l->token_uri);
	rec->groups = calloc(l->ngroups ? l->ngroups : 1, sizeof(char *));
	if (!rec->user || !rec->issuer_id || !rec->kube_user || !rec->token_cert_pem ||
	    !rec->token_uri || !rec->groups) {
		kh_fail(&err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	for (; rec->ngroups < l->ngroups; rec->ngroups++)
		if ((rec->groups[rec->ngroups] = strdup(l->groups[rec->ngroups])) == NULL) {
			kh_fail(&err, KH_ERR_INTERNAL, "out of memory");
			goto out;
		}
	if (mint_record(pamh, opts, policy, is, l, rec, &err) != 0)
		goto out;
	/* session.deliver: the relay may take the key (and keep it alone).
	 * The step relay is timed only when the policy sends to the relay. */
	delivered = kh_policy_delivers_to_relay(policy) ?
		    KH_STEP(opts, KH_STEP_RELAY, kh_pam_relay_deliver(pamh, opts, policy, rec, &err)) :
		    kh_pam_relay_deliver(pamh, opts, policy, rec, &err);
	if (delivered < 0)
		goto out;
	if (KH_STEP(opts, KH_STEP_STORE,
		    kh_cache_login(rec, policy->session.cache_pin ? l->pin : NULL, kind, serial,
				   &err)) != 0) {
		if (delivered)
			kh_pam_relay_undo(pamh, policy, rec);
		goto out;
	}
	kh_pam_debug(pamh, opts, "user '%s': issuer %s: session cached until %lld (logins %u)",
		     l->user, issuer_name(is), (long long)rec->expires, rec->logins);
	rc = 0;
out:
	if (rc != 0) {
		char what[128];

		snprintf(what, sizeof(what), "issuer %s: session credential", issuer_name(is));
		kh_pam_log_fail(pamh, l->user, what, &err);
	}
	kh_record_free(rec);
	return rc;
}

/* What one open_session did, for its close_session. */
struct opened {
	uid_t uid;
	char *user;
	bool counted;           /* counted as one of the uid's logins */
	bool revoke_on_logout;
	char *relay_rundir;     /* session.deliver reaches kubehsm-relayd there */
	size_t n;
	int32_t serials[];      /* the records it minted */
};

static void
opened_free(struct opened *o)
{
	if (o == NULL)
		return;
	free(o->user);
	free(o->relay_rundir);
	free(o);
}

static void
opened_cleanup(pam_handle_t *pamh, void *data, int error_status)
{
	(void)pamh;
	(void)error_status;
	opened_free(data);
}

static struct opened *
opened_new(uid_t uid, const char *user, const struct kh_policy *policy, size_t nissuers)
{
	struct opened *o = calloc(1, sizeof(*o) + nissuers * sizeof(o->serials[0]));

	if (o == NULL)
		return NULL;
	o->uid = uid;
	o->revoke_on_logout = policy->session.revoke_on_logout;
	if ((o->user = strdup(user)) == NULL ||
	    (kh_policy_delivers_to_relay(policy) &&
	     (o->relay_rundir = strdup(policy->relay.rundir)) == NULL)) {
		opened_free(o);
		return NULL;
	}
	return o;
}

/* Keep o for close_session (the handle owns it from here). */
static int
opened_save(pam_handle_t *pamh, struct opened *o)
{
	if (!o->counted && o->n == 0) {
		opened_free(o);
		return PAM_SUCCESS;
	}
	if (pam_set_data(pamh, KH_PAM_DATA_SESSION, o, opened_cleanup) != PAM_SUCCESS) {
		opened_free(o);
		return PAM_BUF_ERR;
	}
	return PAM_SUCCESS;
}

/* A login that mints nothing still counts: the uid's kube session, made
 * by another login or by `kubehsm login` inside this one, lives until the
 * uid's last login closes.  Never fails the login. */
static int
count_only(pam_handle_t *pamh, const struct kh_pam_opts *opts)
{
	struct kh_policy *policy;
	struct opened *o;
	const char *user;
	kh_error err = { 0 };
	uid_t uid;
	gid_t gid;

	if (opts->join ||
	    KH_STEP(opts, KH_STEP_USER, kh_pam_get_user(pamh, &user, &uid, &gid)) != PAM_SUCCESS)
		return PAM_IGNORE;
	KH_TIMED(opts, KH_STEP_POLICY, policy = kh_pam_load_policy(pamh, opts));
	if (policy == NULL)
		return PAM_IGNORE;
	o = opened_new(uid, user, policy, 0);
	kh_policy_free(policy);
	if (o == NULL)
		return PAM_IGNORE;
	if (KH_STEP(opts, KH_STEP_STORE, kh_cache_login_count(uid, user, &err)) != 0)
		kh_pam_log_fail(pamh, user, "login accounting", &err);
	else
		o->counted = true;
	(void)opened_save(pamh, o);
	return PAM_IGNORE;
}

/* The user PAM_USER names now must be the one that authenticated. */
static int
same_user(pam_handle_t *pamh, const struct kh_pam_opts *opts, const struct kh_pam_login *l)
{
	const char *user;
	uid_t uid;
	gid_t gid;

	if (KH_STEP(opts, KH_STEP_USER, kh_pam_get_user(pamh, &user, &uid, &gid)) != PAM_SUCCESS)
		return 0;
	if (strcmp(user, l->user) == 0 && uid == l->uid)
		return 1;
	pam_syslog(pamh, LOG_NOTICE, "user '%s' authenticated, but the session is for "
		   "'%s' (PAM_USER changed, as sudo does); no kube credentials cached",
		   l->user, user);
	return 0;
}

/*
 * `kubehsm login` (option join) joins the uid's logins instead of being
 * one.  It starts a session when the uid has none, and renews one
 * (KUBEHSM_RENEW=1 in the PAM environment: `kubehsm login --renew`) only
 * with the token certificate it was started with — the record is then
 * replaced with a new expiry and its login count kept.  A live session is
 * never silently replaced by another identity under the user's other
 * panes.  PAM_SUCCESS to go on; otherwise the user has been told why.
 */
static int
join_check(pam_handle_t *pamh, const struct kh_pam_opts *opts, const struct kh_pam_login *l)
{
	const char *r = pam_getenv(pamh, KH_RENEW_ENV);
	bool renew = r != NULL && strcmp(r, "1") == 0;
	struct kh_cache_entry *e = NULL;
	size_t n = 0, live = 0, same = 0;
	kh_error err = { 0 };

	if (kh_cache_list(l->uid, &e, &n, &err) != 0) {
		kh_pam_log_fail(pamh, l->user, "the uid's sessions", &err);
		return PAM_SESSION_ERR;
	}
	for (size_t i = 0; i < n; i++) {
		if (e[i].state != KH_MISS_NONE || e[i].rec == NULL ||
		    strcmp(e[i].rec->user, l->user) != 0)
			continue;
		live++;
		same += strcmp(e[i].rec->token_cert_pem, l->token_cert_pem) == 0;
	}
	kh_cache_entries_free(e, n);
	kh_pam_debug(pamh, opts, "user '%s': %s: %zu live session(s), %zu of this token "
		     "certificate", l->user, renew ? "renew" : "login", live, same);
	if (renew && live == 0) {
		pam_error(pamh, "kubehsm: there is no kube session to renew; run 'kubehsm login'");
		pam_syslog(pamh, LOG_NOTICE, "user '%s': renew refused: no live session", l->user);
		return PAM_SESSION_ERR;
	}
	if (renew && same != live) {
		pam_error(pamh, "kubehsm: your kube session was started with another token "
			  "certificate, and a renewal keeps the identity: run 'kubehsm logout', "
			  "then 'kubehsm login'");
		pam_syslog(pamh, LOG_NOTICE, "user '%s': renew refused: the session's token "
			   "certificate differs", l->user);
		return PAM_PERM_DENIED;
	}
	if (!renew && live > 0) {
		pam_error(pamh, "kubehsm: you have a kube session already; 'kubehsm login "
			  "--renew' extends it, 'kubehsm logout' ends it");
		pam_syslog(pamh, LOG_NOTICE, "user '%s': login refused: a session is live "
			   "(renew or log out first)", l->user);
		return PAM_PERM_DENIED;
	}
	return PAM_SUCCESS;
}

static int
open_for(pam_handle_t *pamh, const struct kh_pam_opts *opts,
	 const struct kh_pam_login *l)
{
	struct kh_policy *policy;
	struct opened *o = NULL;
	kh_error err = { 0 };
	int rc;

	if (!same_user(pamh, opts, l))
		return count_only(pamh, opts);
	if (opts->join &&
	    (rc = KH_STEP(opts, KH_STEP_JOIN, join_check(pamh, opts, l))) != PAM_SUCCESS)
		return rc;
	/* The policy auth read for this login, when auth ran in this handle. */
	KH_TIMED(opts, KH_STEP_POLICY,
		 policy = l == kh_pam_login_get(pamh) ?
			  kh_pam_take(pamh, KH_PAM_DATA_POLICY) : NULL);
	if (policy == NULL)
		KH_TIMED(opts, KH_STEP_POLICY, policy = kh_pam_load_policy(pamh, opts));
	if (policy == NULL)
		return PAM_SESSION_ERR;
	rc = polkit_allows(pamh, opts, policy, l);
	if (rc == 0) {
		pam_info(pamh, "kubehsm: caching kube credentials is not allowed for "
			 "this login");
		kh_policy_free(policy);
		return count_only(pamh, opts);
	}
	if (rc < 0 || (o = opened_new(l->uid, l->user, policy, policy->nissuers)) == NULL) {
		kh_policy_free(policy);
		return rc < 0 ? PAM_SESSION_ERR : PAM_BUF_ERR;
	}
	rc = PAM_SUCCESS;
	for (size_t i = 0; i < policy->nissuers; i++) {
		/* This login counts once, with the first record it mints. */
		enum kh_login_kind kind = opts->join || o->counted ? KH_LOGIN_JOIN : KH_LOGIN_NEW;
		int32_t serial = 0;

		if (seed_issuer(pamh, opts, policy, &policy->issuers[i], l, kind, &serial) != 0) {
			rc = PAM_SESSION_ERR;
			continue;
		}
		o->serials[o->n++] = serial;
		o->counted = o->counted || kind == KH_LOGIN_NEW;
	}
	kh_policy_free(policy);
	if (!o->counted && !opts->join) {
		if (KH_STEP(opts, KH_STEP_STORE, kh_cache_login_count(l->uid, l->user, &err)) != 0)
			kh_pam_log_fail(pamh, l->user, "login accounting", &err);
		else
			o->counted = true;
	}
	/* close_session undoes exactly this. */
	if (opened_save(pamh, o) != PAM_SUCCESS)
		rc = PAM_BUF_ERR;
	return rc;
}

int
kh_pam_open_session(pam_handle_t *pamh, const struct kh_pam_opts *opts)
{
	const struct kh_pam_login *l = kh_pam_login_get(pamh);
	struct kh_pam_login *stashed = NULL;
	const void *user = NULL;
	int rc;

	/* Always consumed, so the handle never reaches the user's shell; read
	 * only when auth ran in another process. */
	if (l != NULL)
		KH_TIMED(opts, KH_STEP_HANDOFF, kh_pam_handoff_discard(pamh));
	else if (KH_STEP(opts, KH_STEP_HANDOFF, kh_pam_handoff_take(pamh, &stashed)) > 0)
		l = stashed;
	if (l == NULL) {
		if (pam_get_item(pamh, PAM_USER, &user) != PAM_SUCCESS || user == NULL)
			user = "?";
		pam_syslog(pamh, LOG_NOTICE, "user '%s': no kubehsm authentication in this "
			   "login; no kube credentials cached", (const char *)user);
		rc = count_only(pamh, opts);
	} else {
		rc = open_for(pamh, opts, l);
		kh_pam_login_free(stashed);
	}
	/* Whatever happened, what auth kept for this step goes now, before the
	 * user's session starts: the module (finalised) and the policy. */
	kh_pam_drop(pamh, KH_PAM_DATA_MODULE);
	kh_pam_drop(pamh, KH_PAM_DATA_POLICY);
	return rc;
}

/* What close_session's relay step needs, for kh_cache_logout's hook. */
struct ending_ctx {
	pam_handle_t *pamh;
	const struct kh_pam_opts *opts;
	const struct opened *o;
};

/*
 * The uid's session ends: the relay's copy goes, with its connections —
 * told before any key is touched, so that nothing the keyring step meets
 * keeps the relay serving it.  (Timed as the step relay only when there is
 * a relay to tell; the logout step is the time around it.)
 */
static void
tell_relay(void *data)
{
	struct ending_ctx *c = data;

	if (c->o->relay_rundir == NULL)
		return;
	kh_pam_time_add(c->opts, KH_STEP_LOGOUT);
	KH_TIMED(c->opts, KH_STEP_RELAY, kh_pam_relay_forget(c->pamh, c->opts,
							     c->o->relay_rundir, c->o->uid,
							     c->o->user));
	kh_pam_time_mark(c->opts);
}

int
kh_pam_close_session(pam_handle_t *pamh, const struct kh_pam_opts *opts)
{
	const void *data = NULL;
	struct ending_ctx ending = { .pamh = pamh, .opts = opts };
	const struct opened *o;
	kh_error err = { 0 };
	int r;

	if (pam_get_data(pamh, KH_PAM_DATA_SESSION, &data) != PAM_SUCCESS || data == NULL) {
		kh_pam_debug(pamh, opts, "close_session: this handle opened nothing");
		return PAM_IGNORE;
	}
	o = ending.o = data;
	r = o->counted ? KH_STEP(opts, KH_STEP_LOGOUT,
				 kh_cache_logout(o->uid, o->user, o->serials, o->n,
						 o->revoke_on_logout, tell_relay, &ending,
						 &err)) : 0;
	if (r < 0)
		kh_pam_log_fail(pamh, o->user, "logout", &err);
	else
		kh_pam_debug(pamh, opts, "user '%s': %s", o->user,
			     r == 1 ? "kube session ended" : "kube session kept");
	/* Done once: a second close_session of this handle does nothing. */
	(void)pam_set_data(pamh, KH_PAM_DATA_SESSION, NULL, NULL);
	return r < 0 ? PAM_SESSION_ERR : PAM_SUCCESS;
}
