/*
 * kh_pam_options — the module arguments of a PAM stack line.
 *
 * Every argument must be one this module knows: an unknown one is a
 * configuration error, logged, so a typo never silently changes what a
 * login does.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <syslog.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "pam/kh_pam.h"

/* The switch an argument names, or NULL if it names none. */
static bool *
flag_named(struct kh_pam_opts *opts, const char *arg)
{
	const struct {
		const char *name;
		bool *flag;
	} flags[] = {
		{ "use_first_pass", &opts->use_first_pass },
		{ "try_first_pass", &opts->try_first_pass },
		{ "debug", &opts->debug },
		{ "no_cache", &opts->no_cache },
		{ "join", &opts->join },
		{ "forwarded", &opts->forwarded },
		{ "authtok_is_pin", &opts->authtok_is_pin },
	};

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (strcmp(arg, flags[i].name) == 0)
			return flags[i].flag;
	return NULL;
}

/* The path of config=/absolute/path, or NULL: a relative path would be
 * resolved against whatever directory the login program runs in. */
static const char *
config_path(const char *arg)
{
	if (strncmp(arg, "config=", 7) == 0 && arg[7] == '/')
		return arg + 7;
	return NULL;
}

/* The destination of timing=/absolute/path or timing=syslog
 * (bench/TIMING.md), or NULL. */
static const char *
timing_dest(const char *arg)
{
	if (strncmp(arg, "timing=", 7) != 0)
		return NULL;
	if (arg[7] == '/' || strcmp(arg + 7, KH_TIMING_SYSLOG) == 0)
		return arg + 7;
	return NULL;
}

/* Another module's password tried as the PIN costs a token try when they
 * differ: use_first_pass could only ever do that. */
static int
check_first_pass(pam_handle_t *pamh, const struct kh_pam_opts *opts)
{
	if (opts->use_first_pass && !opts->authtok_is_pin) {
		pam_syslog(pamh, LOG_ERR, "use_first_pass hands an earlier module's password "
			   "to the token as its PIN; add authtok_is_pin if the two are the same "
			   "secret, or drop use_first_pass to be asked for the PIN");
		return PAM_SERVICE_ERR;
	}
	return PAM_SUCCESS;
}

int
kh_pam_parse_opts(pam_handle_t *pamh, int argc, const char **argv,
		  struct kh_pam_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->config = KH_DEFAULT_CONFIG;
	for (int i = 0; i < argc; i++) {
		bool *flag = flag_named(opts, argv[i]);
		const char *config = config_path(argv[i]);
		const char *timing = timing_dest(argv[i]);

		if (flag != NULL)
			*flag = true;
		else if (config != NULL)
			opts->config = config;
		else if (timing != NULL)
			opts->timing_dest = timing;
		else if (strncmp(argv[i], "timing=", 7) == 0) {
			pam_syslog(pamh, LOG_ERR, "malformed module option '%s' (timing= needs "
				   "an absolute path or syslog)", argv[i]);
			return PAM_SERVICE_ERR;
		} else {
			pam_syslog(pamh, LOG_ERR,
				   "unknown or malformed module option '%s' "
				   "(config= needs an absolute path)", argv[i]);
			return PAM_SERVICE_ERR;
		}
	}
	return check_first_pass(pamh, opts);
}
