/*
 * pam_kubehsm — PAM entry points: parse options, dispatch, and keep
 * jansson's wipe-on-free hooks enabled only while inside the module.
 *
 * auth      kh_pam_authenticate (kh_pam_auth.c)
 * setcred   no work (minting happens in open_session, see
 *           kh_pam_session.c); answers what auth did, see setcred_result
 * session   kh_pam_open_session / kh_pam_close_session
 *
 * libp11 stays loaded once the module has been: libpam dlcloses the module
 * at every pam_end, and libp11 cannot safely be unloaded with it (see
 * pin_dependencies).  The polkit plugin pins itself when it is first
 * loaded (kh_pam_polkit.c).
 */
#include "config.h"

#define PAM_SM_AUTH
#define PAM_SM_SESSION
#include <security/pam_modules.h>
#include <security/pam_ext.h>

#include "lib/kh_json.h"
#include "lib/kh_pkcs11.h"
#include "pam/kh_pam.h"

enum entry { AUTH, SETCRED, OPEN, CLOSE };

/* A library that must outlive the module's unload: see kh_p11_pin_library
 * for why.  The module itself still unloads. */
__attribute__((constructor)) static void
pin_dependencies(void)
{
	(void)kh_p11_pin_library();
}

/*
 * setcred's answer steers the auth stack's jumps a second time.  When auth
 * ran in this process, libpam replays auth's answers and this one does not
 * matter.  But sshd authenticates keyboard-interactive logins in a forked
 * child and calls setcred in its monitor, where libpam walks the stack on
 * live answers: PAM_IGNORE here would step into the next line — in the
 * shipped stacks pam_faillock's authfail, [default=die] — and end every
 * such login.  So say what auth did: success when this module authenticated
 * the login (its result is in this handle, or its hand-off is waiting for
 * open_session), else PAM_AUTHINFO_UNAVAIL, which the stacks route to the
 * password path just as auth's answer for a user without a token was.
 * A hand-off counts only if open_session would take it: the variable alone
 * proves nothing (an earlier module, pam_env among them, can put anything
 * in the PAM environment).
 */
static int
setcred_result(pam_handle_t *pamh)
{
	if (kh_pam_login_get(pamh) != NULL || kh_pam_handoff_pending(pamh) == 1)
		return PAM_SUCCESS;
	return PAM_AUTHINFO_UNAVAIL;
}

/*
 * With timing= (bench/TIMING.md) each entry point's steps are timed from
 * here, after its options are parsed, to just before its line is written.
 */
static int
dispatch(enum entry e, pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	static const char *const phase[] = {
		[AUTH] = "auth", [SETCRED] = "setcred", [OPEN] = "open", [CLOSE] = "close",
	};
	struct kh_pam_timing timing;
	struct kh_pam_opts opts;
	int rc;

	(void)flags;
	kh_json_wipe_on_free(true);
	rc = kh_pam_parse_opts(pamh, argc, argv, &opts);
	if (rc == PAM_SUCCESS && opts.timing_dest != NULL) {
		kh_pam_timing_begin(&timing, opts.timing_dest, phase[e]);
		opts.timing = &timing;
	}
	if (rc == PAM_SUCCESS) {
		switch (e) {
		case AUTH:
			rc = kh_pam_authenticate(pamh, &opts);
			break;
		case SETCRED:
			rc = setcred_result(pamh);
			break;
		case OPEN:
			rc = kh_pam_open_session(pamh, &opts);
			break;
		case CLOSE:
			rc = kh_pam_close_session(pamh, &opts);
			break;
		}
		if (opts.timing != NULL)
			kh_pam_timing_end(pamh, opts.timing, rc);
	}
	kh_json_wipe_on_free(false);
	return rc;
}

PAM_EXTERN int
pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	return dispatch(AUTH, pamh, flags, argc, argv);
}

PAM_EXTERN int
pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	return dispatch(SETCRED, pamh, flags, argc, argv);
}

PAM_EXTERN int
pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	return dispatch(OPEN, pamh, flags, argc, argv);
}

PAM_EXTERN int
pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	return dispatch(CLOSE, pamh, flags, argc, argv);
}
