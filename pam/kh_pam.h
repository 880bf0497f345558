/*
 * kh_pam — the internal interface of pam_kubehsm, one section per job and
 * per file (pam-krb5's module/internal.h is the model).
 *
 * Nothing here is global: all state lives in the PAM handle, so handles
 * never see each other's data and the module can be unloaded at any time.
 *
 * pam/kh_polkit.h stays apart: it is the interface of the kubehsm-polkit.so
 * plugin, which does not link the module.
 */
#ifndef KH_PAM_H
#define KH_PAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <openssl/x509.h>
#include <security/pam_modules.h>

#include "conf/kh_policy.h"
#include "lib/kh_error.h"
#include "pam/kh_polkit.h"

struct kh_p11;
struct kh_record;
struct kh_pam_timing;

/* ---- module options (kh_pam_options.c) ----------------------------------- */

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
	const char *timing_dest;        /* timing=PATH|syslog (into argv), or NULL */
	struct kh_pam_timing *timing;   /* this call's step timings, NULL = off */
};

/* Parse module arguments.  Unknown arguments are a configuration error
 * (logged): a typo must not silently change behaviour. */
int kh_pam_parse_opts(pam_handle_t *pamh, int argc, const char **argv,
		      struct kh_pam_opts *opts);

/* ---- step timings, option timing= (kh_pam_timing.c, bench/TIMING.md) ----- */

/* The steps of a line, in the line's order. */
enum kh_pam_step {
	KH_STEP_USER, KH_STEP_POLICY, KH_STEP_HANDOFF, KH_STEP_P11_LOAD,
	KH_STEP_FIND, KH_STEP_VALIDATE, KH_STEP_CONV, KH_STEP_LOGIN,
	KH_STEP_CHALLENGE, KH_STEP_IDENTITY, KH_STEP_P11_CLOSE, KH_STEP_JOIN,
	KH_STEP_POLKIT_LOAD, KH_STEP_POLKIT, KH_STEP_ISSUER, KH_STEP_KEYGEN,
	KH_STEP_MINT, KH_STEP_RELAY, KH_STEP_STORE, KH_STEP_LOGOUT,
	KH_STEP_MAX
};

#define KH_TIMING_SYSLOG "syslog"       /* timing=syslog: pam_syslog, LOG_DEBUG */
#define KH_TIMING_LINE_MAX 512

/* One entry point call's timings, on dispatch's stack. */
struct kh_pam_timing {
	const char *dest;               /* an absolute path or KH_TIMING_SYSLOG */
	const char *phase;              /* auth, setcred, open, close */
	struct timespec start, mark;    /* CLOCK_MONOTONIC */
	uint64_t us[KH_STEP_MAX];       /* microseconds, a step's runs summed */
	bool ran[KH_STEP_MAX];
	bool broken;                    /* the clock failed: no line */
};

void kh_pam_timing_begin(struct kh_pam_timing *t, const char *dest, const char *phase);
/* Write the line (file or syslog); failures lose the line, nothing else. */
void kh_pam_timing_end(pam_handle_t *pamh, struct kh_pam_timing *t, int rc);
void kh_pam_time_mark_(struct kh_pam_timing *t);                    /* mark = now */
void kh_pam_time_add_(struct kh_pam_timing *t, enum kh_pam_step s); /* s += now - mark */

/* On the state pointer (NULL = off), for code that has no options. */
static inline void
kh_pam_timing_mark(struct kh_pam_timing *t)
{
	if (t != NULL)
		kh_pam_time_mark_(t);
}

static inline void
kh_pam_timing_add(struct kh_pam_timing *t, enum kh_pam_step s)
{
	if (t != NULL)
		kh_pam_time_add_(t, s);
}

static inline int
kh_pam_timing_done(struct kh_pam_timing *t, enum kh_pam_step s, int rc)
{
	kh_pam_timing_add(t, s);
	return rc;
}

/* On the options. */
#define kh_pam_time_mark(o) kh_pam_timing_mark((o)->timing)
#define kh_pam_time_add(o, s) kh_pam_timing_add((o)->timing, (s))
/* A statement that is one step. */
#define KH_TIMED(o, step, stmt) \
	do { kh_pam_time_mark(o); stmt; kh_pam_time_add((o), (step)); } while (0)
/* An int-valued expression that is one step (the comma sequences the mark
 * before it, and it before the add). */
#define KH_STEP(o, step, expr) \
	(kh_pam_time_mark(o), kh_pam_timing_done((o)->timing, (step), (expr)))

/* ---- the policy (kh_pam_policy.c) ---------------------------------------- */

/* Load the policy fresh (root-owned file), logging why it fails. */
struct kh_policy *kh_pam_load_policy(pam_handle_t *pamh,
				     const struct kh_pam_opts *opts);

/* After a successful auth: the policy it read goes to the handle, for the
 * session step of the same login (*policy becomes NULL).  Not kept (out of
 * memory): *policy stays the caller's.  The session step takes it with
 * kh_pam_take(pamh, KH_PAM_DATA_POLICY). */
void kh_pam_policy_keep(pam_handle_t *pamh, struct kh_policy **policy);

/* ---- the account (kh_pam_user.c) ----------------------------------------- */

/* The account PAM_USER names: its canonical name (pw_name, which may differ
 * from what was typed; valid until the next call or pam_end), uid and gid.
 * PAM_USER_UNKNOWN if there is none. */
int kh_pam_get_user(pam_handle_t *pamh, const char **user, uid_t *uid,
		    gid_t *gid);

/* ---- logging (kh_pam_log.c) ---------------------------------------------- */

/* One syslog line (LOG_AUTHPRIV is the default facility of pam_syslog). */
void kh_pam_log_fail(pam_handle_t *pamh, const char *user, const char *what,
		     const kh_error *err);
void kh_pam_debug(pam_handle_t *pamh, const struct kh_pam_opts *opts,
		  const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- the PIN prompt (kh_pam_prompt.c) ------------------------------------ */

/*
 * Ask the conversation for the token PIN (echo off) with a prompt naming
 * the token.  *pin is freed with kh_secure_strfree.
 */
int kh_pam_prompt_pin(pam_handle_t *pamh, const char *token_label, char **pin);

/* ---- login state carried from auth to session (kh_pam_state.c) ----------- */

/* pam_set_data names. */
#define KH_PAM_DATA_LOGIN   "kubehsm:login"
#define KH_PAM_DATA_SESSION "kubehsm:session-open"
#define KH_PAM_DATA_ACCOUNT "kubehsm:account"
#define KH_PAM_DATA_MODULE  "kubehsm:module"
#define KH_PAM_DATA_POLICY  "kubehsm:policy"

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

/* Free a login state, wiping every field. NULL is fine. */
void kh_pam_login_free(struct kh_pam_login *login);

/*
 * An object auth leaves under `name` for the session step of the same
 * process; `release` frees it at pam_end, when it is replaced or dropped —
 * never in another process than the one that kept it.  kh_pam_keep: 0, or
 * -1 when it could not be kept (obj stays the caller's).  kh_pam_kept: the
 * object, still the handle's, or NULL (none, taken, another process's).
 * kh_pam_take: the same, the caller's from now on.  kh_pam_drop: release
 * it now.
 */
int kh_pam_keep(pam_handle_t *pamh, const char *name, void *obj, void (*release)(void *obj));
void *kh_pam_kept(pam_handle_t *pamh, const char *name);
void *kh_pam_take(pam_handle_t *pamh, const char *name);
void kh_pam_drop(pam_handle_t *pamh, const char *name);

/* Hand login state to the handle (the handle frees it, also on failure). */
int kh_pam_login_save(pam_handle_t *pamh, struct kh_pam_login *login);

/* The login state of a successful authenticate, or NULL. */
const struct kh_pam_login *kh_pam_login_get(pam_handle_t *pamh);

/* ---- kube groups (kh_pam_groups.c) --------------------------------------- */

/* The kube groups of a user from identity.groups (cert:, unix:, static:),
 * de-duplicated, in rule order, less those identity.allow_groups/deny_groups
 * refuse (each logged); at most KH_RECORD_MAX_GROUPS, counted before
 * allow/deny.  Free with kh_pam_groups_free. */
int kh_pam_kube_groups(pam_handle_t *pamh, const struct kh_policy *policy, X509 *cert,
		       const char *user, gid_t gid, char ***groups,
		       size_t *ngroups, kh_error *err);

/* Free a group list, wiping each name.  NULL is fine. */
void kh_pam_groups_free(char **groups, size_t ngroups);

/* ---- the auth step (kh_pam_auth.c) --------------------------------------- */

/* Unlock the user's token, validate and map its certificate, prove
 * possession; keep what the session step needs in the handle. */
int kh_pam_authenticate(pam_handle_t *pamh, const struct kh_pam_opts *opts);

/* ---- the session step (kh_pam_session.c) --------------------------------- */

/* PAM environment: `kubehsm login --renew` (honoured with option join). */
#define KH_RENEW_ENV "KUBEHSM_RENEW"

/* polkit, mint the session certificate per issuer, seed the cache. */
int kh_pam_open_session(pam_handle_t *pamh, const struct kh_pam_opts *opts);

/* Login accounting down; revoke on the uid's last logout (policy). */
int kh_pam_close_session(pam_handle_t *pamh, const struct kh_pam_opts *opts);

/* ---- the token's module, the bastion's or forwarded (kh_pam_forward.c) --- */

/*
 * Which PKCS#11 module holds the user's token: the bastion's own
 * (pkcs11.module), or, under the module option `forwarded` (the kubehsm
 * service that `kubehsm login` runs), the user's token forwarded from their
 * laptop with p11-kit over `ssh -R`.
 *
 * Open the module the user's token is behind, if root may.  With
 * `forwarded` and pkcs11.forward configured, a socket at the uid's forward
 * path is the user's forwarded token: NULL is returned with *forward_path
 * (free it) naming the checked socket, and only a process that is the user
 * talks to it (kh_pam_forward_child.h).  No socket there means the
 * bastion's module, opened, so the same service serves a token the bastion
 * holds itself.  A path that is not a socket of the user's own is refused
 * (NULL, KH_ERR_PERM).
 */
struct kh_p11 *kh_pam_open_token_module(pam_handle_t *pamh, const struct kh_pam_opts *opts,
					const struct kh_policy *policy, const char *user,
					uid_t uid, char **forward_path, kh_error *err);


/* ---- the user's module kept for the issuer (kh_pam_module.c) ----------- */

/*
 * After a successful auth: keep the module of the user's token initialised
 * in the handle for the issuer step of open_session, when an issuer of the
 * policy uses the same module with the same environment and the token is
 * not in a removable slot.  The token is logged out and its sessions
 * closed first.  Kept: *p11 becomes NULL.  Not kept: *p11 is the caller's
 * to close, as before.
 */
void kh_pam_module_keep(pam_handle_t *pamh, const struct kh_pam_opts *opts,
			const struct kh_policy *policy, struct kh_p11 **p11);

/* The kept module, if it is `module` initialised with `env` by this
 * process: the caller's from now on (kh_p11_close).  NULL otherwise; a
 * module no issuer takes goes with kh_pam_drop(pamh, KH_PAM_DATA_MODULE). */
struct kh_p11 *kh_pam_module_take(pam_handle_t *pamh, const char *module,
				  const struct kh_env *env);

/* ---- auth → session hand-off across processes (kh_pam_handoff.c) --------- */

/*
 * Carry a successful authentication to open_session when the two do not
 * run in one process.
 *
 * OpenSSH authenticates keyboard-interactive logins in a forked child of
 * its privileged monitor and sends back only the PAM environment and the
 * account status; open_session then runs in the monitor, where pam_set_data
 * from auth is gone.  So auth also writes its non-secret result (user, uid,
 * token, certificate, identity, groups) to a root-only, single-use stash
 * KH_RUNDIR/handoff/<handle>, and puts the random handle in the PAM
 * environment (PAM_KUBEHSM_HANDOFF), the one channel every login program
 * carries from auth to session — pam-krb5's PAM_KRB5CCNAME pattern.
 * open_session consumes the stash and removes the variable before the
 * session's environment reaches the user's shell.  pam_set_data stays the
 * fast path when both steps share a process.
 *
 * The stash never holds the PIN or a key.  Only with session.cache_pin
 * (signing on the user's token needs the PIN in the session) does the PIN
 * cross, in a kernel key of root's own (never on disk) with the same short
 * lifetime that only uid 0 may find or read — nothing for its possessor, so
 * not a process of another uid inside a root login either — and only when
 * the authenticating process runs as real root (sshd's child); su and sudo
 * authenticate in the session's own process.
 */
#define KH_HANDOFF_ENV "PAM_KUBEHSM_HANDOFF"
/* Longest time between authentication and session (seconds): an abandoned
 * stash is gone after this. */
#define KH_HANDOFF_TTL 300

/* Stash l for this handle's session step.  PAM_SUCCESS, or a PAM error
 * (logged) — authentication itself has succeeded either way. */
int kh_pam_handoff_put(pam_handle_t *pamh, const struct kh_pam_login *l);

/*
 * Consume the stash named in the PAM environment, if any, and remove the
 * variable.  1 with *out (free with kh_pam_login_free), 0 when there is
 * none, -1 when there was one that cannot be used (logged).
 */
int kh_pam_handoff_take(pam_handle_t *pamh, struct kh_pam_login **out);

/*
 * The same for a session step that has the authentication in its own
 * handle already (auth ran in this process): the stash and its PIN key are
 * removed unread, and the variable with them.
 */
void kh_pam_handoff_discard(pam_handle_t *pamh);

/*
 * Does the PAM environment name a stash open_session would take (the same
 * checks, the stash left in place)?  1 yes, 0 no.  Logs nothing but a
 * runtime directory it cannot use: open_session logs what it finds, once.
 */
int kh_pam_handoff_pending(pam_handle_t *pamh);

/* ---- polkit, through the kubehsm-polkit plugin (kh_pam_polkit.c) --------- */

/* kh_polkit_check_login, run in the plugin, which is loaded only when the
 * policy asks polkit at all: 1 allowed, 0 denied, -1 error (also when the
 * plugin cannot be loaded).  Mode off answers 1 without loading anything;
 * a system bus that is certainly absent gets the plugin's own answer for
 * that (kh_polkit_unreachable) without loading it.  timing: NULL, or the
 * call's step timings (polkit_load, polkit). */
int kh_pam_polkit_check_login(struct kh_pam_timing *timing, enum kh_polkit_mode mode,
			      pid_t pid, uid_t uid, const struct kh_polkit_login *login,
			      bool *unreachable, kh_error *err);

/* ---- kubehsm-relayd, the login's side of it (kh_pam_relay.c) ------------- */

/*
 * session.deliver: open_session hands each freshly minted session to the
 * relay over its root-only control socket when the policy delivers to it,
 * and with deliver = "relay" stores the user's record without the key; the
 * last close_session of the uid makes the relay forget the uid's sessions
 * and close its connections.
 *
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
