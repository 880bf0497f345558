/*
 * kh_pam_relay — deliver sessions to kubehsm-relayd and forget them.
 *
 * The key crosses only the relay's control socket (root to root's daemon:
 * kh_relay_client checks the socket directory is root's); every buffer that
 * held it is wiped.  Every wait is bounded by the client's timeout, so a
 * hung relay delays a login by seconds, never blocks it.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "lib/kh_mem.h"
#include "cache/kh_record.h"
#include "lib/kh_relay_client.h"
#include "pam/kh_pam.h"

/* PAM's own items, borrowed (not copied): printable, bounded, or left out. */
static char *
kh_pam_relay_item(pam_handle_t *pamh, int item)
{
	const void *v = NULL;
	const char *s;
	size_t i;

	if (pam_get_item(pamh, item, &v) != PAM_SUCCESS || v == NULL)
		return NULL;
	s = v;
	for (i = 0; s[i] != '\0'; i++) {
		if (i >= KH_RELAY_ORIGIN_MAX || (unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return NULL;
	}
	return i > 0 ? (char *)s : NULL;
}

/* Where this login came from, for the relay's audit log. */
static void
kh_pam_relay_origin(pam_handle_t *pamh, struct kh_relay_origin *o)
{
	o->service = kh_pam_relay_item(pamh, PAM_SERVICE);
	o->rhost = kh_pam_relay_item(pamh, PAM_RHOST);
	o->tty = kh_pam_relay_item(pamh, PAM_TTY);
}

int
kh_pam_relay_deliver(pam_handle_t *pamh, const struct kh_pam_opts *opts,
		     const struct kh_policy *policy, struct kh_record *rec, kh_error *err)
{
	const struct kh_relay_cluster *cl;
	struct kh_relay_session s;
	kh_error rerr = { 0 };

	if (!kh_policy_delivers_to_relay(policy))
		return 0;
	cl = kh_policy_relay_cluster_for(policy, rec->issuer_id);
	if (cl == NULL)
		return 0;       /* no relay cluster takes this issuer: exec only */
	s = (struct kh_relay_session){
		.uid = rec->uid, .user = rec->user, .issuer = rec->issuer_id,
		.expires = rec->expires, .chain_pem = rec->cert_chain_pem, .key_pem = rec->key_pem,
	};
	kh_pam_relay_origin(pamh, &s.origin);
	if (kh_relay_deliver(policy->relay.rundir, &s, &rerr) != 0) {
		if (policy->session.deliver == KH_DELIVER_RELAY)
			return kh_fail(err, rerr.code, "kubehsm-relayd did not take the session "
				       "(%s); kube clients get no session from this login", rerr.msg);
		pam_syslog(pamh, LOG_WARNING, "user '%s': kubehsm-relayd did not take the "
			   "session (%s); only kubehsm exec serves it", rec->user, rerr.msg);
		return 0;
	}
	kh_pam_debug(pamh, opts, "user '%s': kubehsm-relayd took the session for cluster %s",
		     rec->user, cl->name);
	if (policy->session.deliver == KH_DELIVER_RELAY) {
		/* Only the relay keeps it: the user's record carries the certificate. */
		kh_secure_strfree(rec->key_pem);
		rec->key_pem = NULL;
	}
	return 1;
}

void
kh_pam_relay_undo(pam_handle_t *pamh, const struct kh_policy *policy,
		  const struct kh_record *rec)
{
	kh_error err = { 0 };

	if (kh_relay_forget(policy->relay.rundir, rec->uid, rec->issuer_id, KH_RELAY_REVOKED,
			    NULL, NULL, &err) < 0)
		pam_syslog(pamh, LOG_ERR, "user '%s': kubehsm-relayd keeps a session this login "
			   "could not record: %s", rec->user, err.msg);
}

void
kh_pam_relay_forget(pam_handle_t *pamh, const struct kh_pam_opts *opts, const char *rundir,
		    uid_t uid, const char *user)
{
	unsigned sessions = 0, conns = 0;
	kh_error err = { 0 };

	if (rundir == NULL)
		return;
	switch (kh_relay_forget(rundir, uid, NULL, KH_RELAY_LOGOUT, &sessions, &conns, &err)) {
	case 0:
		break;
	case 1:
		/* Not running is the usual reason, and nothing to report then. */
		if (err.code != KH_ERR_NOTFOUND)
			pam_syslog(pamh, LOG_NOTICE, "user '%s': kubehsm-relayd did not take the "
				   "logout (%s); it applies root's note within seconds", user,
				   err.msg);
		return;
	default:
		pam_syslog(pamh, LOG_ERR, "user '%s': kubehsm-relayd was not told the session "
			   "ended: %s", user, err.msg);
		return;
	}
	kh_pam_debug(pamh, opts, "user '%s': kubehsm-relayd forgot %u session(s), closed %u "
		     "connection(s)", user, sessions, conns);
}
