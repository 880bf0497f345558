/*
 * kh_pam_relay — the login's side of kubehsm-relayd (session.deliver).
 *
 * open_session hands each freshly minted session to the relay over its
 * root-only control socket when the policy delivers to it, and with
 * deliver = "relay" stores the user's record without the key; the last
 * close_session of the uid makes the relay forget the uid's sessions and
 * close its connections.
 */
#ifndef KH_PAM_RELAY_H
#define KH_PAM_RELAY_H

#include <security/pam_modules.h>

#include "lib/kh_error.h"
#include "pam/kh_pam_util.h"
#include "conf/kh_policy.h"
#include "cache/kh_record.h"

/*
 * Deliver rec's session to the relay when the policy says so and a relay
 * cluster serves rec's issuer; with deliver = "relay" the key then leaves
 * rec (wiped).  A relay that does not take it fails the issuer's session
 * with deliver = "relay" (-1, err) and is only logged with "both".
 * 1 delivered, 0 nothing to deliver (or "both" and the relay refused).
 */
int kh_pam_relay_deliver(pam_handle_t *pamh, const struct kh_pam_opts *opts,
			 const struct kh_policy *policy, struct kh_record *rec, kh_error *err);

/* The record could not be stored after all: take the delivery back. */
void kh_pam_relay_undo(pam_handle_t *pamh, const struct kh_policy *policy,
		       const struct kh_record *rec);

/* The uid's kube session ended at this logout: the relay forgets it. */
void kh_pam_relay_forget(pam_handle_t *pamh, const struct kh_pam_opts *opts,
			 const char *rundir, uid_t uid, const char *user);

#endif
