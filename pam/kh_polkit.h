/*
 * kh_polkit — ask polkitd whether a process may do a kubehsm action.
 *
 * Built as the kubehsm-polkit.so plugin, which the PAM module loads for
 * org.kubehsm.cache-credentials (about the login being opened) only when
 * polkit.mode is not "off" (pam/kh_pam_polkit.c); kh_polkit_check_login is
 * its one export.  org.kubehsm.admin-sessions is shipped but not asked: the
 * admin views need root.  The check is never interactive: a PAM module
 * cannot host an authentication agent, so an "auth_*" answer counts as "no".
 *
 * Time is bounded: every D-Bus step (connecting to the system bus, looking
 * up polkitd, the check itself) shares one deadline, KH_POLKIT_TIMEOUT_MS
 * unless told otherwise.  A bus or polkitd that does not answer is treated
 * as unreachable when the deadline passes, so a stopped daemon delays a
 * login by at most that long (plus a short grace for cancellation to land).
 *
 * This header needs no GLib: callers that do not link polkit can include it.
 */
#ifndef KH_POLKIT_H
#define KH_POLKIT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/kh_error.h"
#include "lib/kh_words.h"

#define KH_POLKIT_ACTION_CACHE_CREDENTIALS "org.kubehsm.cache-credentials"
#define KH_POLKIT_ACTION_ADMIN_SESSIONS    "org.kubehsm.admin-sessions"

/* Detail keys of org.kubehsm.cache-credentials (rules: action.lookup(KEY)). */
#define KH_POLKIT_DETAIL_SERVICE      "service"
#define KH_POLKIT_DETAIL_USER         "user"
#define KH_POLKIT_DETAIL_TOKEN_SERIAL "token_serial"
#define KH_POLKIT_DETAIL_KUBE_USER    "kube_user"
#define KH_POLKIT_DETAIL_KUBE_GROUPS  "kube_groups"   /* comma-joined */

/* Default bound on one whole check, in milliseconds. */
#define KH_POLKIT_TIMEOUT_MS 5000

/*
 * Ask polkitd whether the process `pid`, owned by `uid`, is authorized for
 * `action_id`.  `details` is NULL or a NULL-terminated list of key, value
 * pairs that rules can read with action.lookup(key); keys and values must
 * be UTF-8 (D-Bus strings), otherwise KH_ERR_INPUT.
 *
 * The caller must be root to pass details or to ask about another uid's
 * process (polkitd's rule; our actions carry no policykit.owner
 * annotation).  polkitd takes `uid` from a root caller as given, so the
 * PAM module passes getpid() and the user's uid while the login process
 * itself still runs as root.  A subject with uid 0 is always authorized.
 *
 * Returns
 *    1  authorized;
 *    0  not authorized: err = KH_ERR_PERM naming the action;
 *   -1  error: bad input (KH_ERR_INPUT), no such process (KH_ERR_NOTFOUND),
 *       polkitd refused the request, e.g. the action file is not installed
 *       (KH_ERR_CONFIG), or polkit unreachable under mode "required"
 *       (KH_ERR_PERM, "polkit unreachable ...; polkit.mode = required").
 *
 * By mode:
 *   KH_POLKIT_OFF           returns 1 at once; contacts nothing.
 *   KH_POLKIT_IF_AVAILABLE  when the bus or polkitd is unreachable (no bus,
 *                           no polkitd on it, or no answer in time) returns
 *                           1, sets *unreachable and puts the line to log in
 *                           err->msg ("polkit unreachable (...); allowed by
 *                           polkit.mode = if-available").
 *   KH_POLKIT_REQUIRED      the same case is an error (-1).
 * `unreachable` may be NULL; it is always written when non-NULL.
 *
 * The process-wide side effects are those of GLib/libpolkit themselves:
 * the shared system-bus GDBusConnection (set not to raise SIGTERM in the
 * host process if the bus goes away) and libpolkit's PolkitAuthority
 * singleton live only while a check runs — nothing is kept between calls,
 * no main loop is left behind, and no GLib log handler is installed (that
 * would be global to the host process; instead inputs are validated so
 * GLib's precondition warnings cannot fire).
 */
int kh_polkit_check(enum kh_polkit_mode mode, const char *action_id,
		    pid_t pid, uid_t uid, const char *const *details,
		    bool *unreachable, kh_error *err);

/* Same with an explicit bound in milliseconds (0 = KH_POLKIT_TIMEOUT_MS). */
int kh_polkit_check_timeout(enum kh_polkit_mode mode, const char *action_id,
			    pid_t pid, uid_t uid, const char *const *details,
			    unsigned timeout_ms, bool *unreachable,
			    kh_error *err);

/* What the PAM module knows about a login, for org.kubehsm.cache-credentials. */
struct kh_polkit_login {
	const char *service;       /* PAM service */
	const char *user;          /* PAM user */
	const char *token_serial;  /* PKCS#11 token serial, "" if unknown */
	const char *kube_user;     /* Kubernetes user name in the certificate */
	const char *const *kube_groups;  /* Kubernetes groups */
	size_t nkube_groups;
};

/*
 * kh_polkit_check for org.kubehsm.cache-credentials with the documented
 * details.  Groups are joined with ","; a group name containing "," would
 * be ambiguous to rules and is rejected (KH_ERR_INPUT).
 */
int kh_polkit_check_login(enum kh_polkit_mode mode, pid_t pid, uid_t uid,
			  const struct kh_polkit_login *login,
			  bool *unreachable, kh_error *err);

/* ---- no GLib: pam/kh_polkit_common.c, in the plugin and the module ----- */

/* The start time of process pid (clock ticks since boot, field 22 of
 * /proc/PID/stat), which pins a polkit subject to that process: a recycled
 * pid has another one.  0, or -1 with err. */
int kh_polkit_start_time(pid_t pid, uint64_t *start, kh_error *err);

/*
 * The verdict on a bus or polkitd that is not there at all (`why` says
 * how): under mode "if-available" 1, *unreachable set and the line to log
 * in err->msg; under "required" -1 (KH_ERR_PERM).  The plugin's answer,
 * and the module's when it finds no bus before loading the plugin.
 */
int kh_polkit_unreachable(enum kh_polkit_mode mode, const char *action_id,
			  const char *why, bool *unreachable, kh_error *err);

#endif
