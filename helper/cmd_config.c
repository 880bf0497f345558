/*
 * kubehsm config check [--quiet] [FILE] — validate the policy like `sshd -t`.
 *
 * It runs the very loader the PAM module uses, with the same trust rule:
 * the file (and the issuer PIN file) must belong to root.  A non-root admin
 * can check /etc/kubehsm/kubehsm.conf this way; a config owned by the
 * caller is rejected, because the PAM module would reject it too.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kh_cli.h"
#include "kh_policy.h"

static void
kh_config_usage(FILE *out)
{
	fprintf(out,
		"Usage: kubehsm config check [--quiet] [FILE]\n\n"
		"Validate the kubehsm policy and print the effective policy (defaults\n"
		"filled in, secrets never shown).  FILE defaults to $KUBEHSM_CONFIG,\n"
		"then %s.\n\n"
		"  -q, --quiet   print nothing on success; only the exit status tells\n"
		"  -h, --help    show this help\n\n"
		"Exit status: 0 valid, 1 invalid (one 'file:line: problem' line on\n"
		"stderr), 2 usage error.  See kubehsm.conf(5).\n", KH_DEFAULT_CONFIG);
}

static int
kh_config_check(const char *path, bool quiet)
{
	/* Root must own what the PAM module will trust, whoever runs the check. */
	struct kh_policy_load_opts opts = { .trusted_uid = 0, .skip_file_checks = false };
	struct kh_policy *policy;
	kh_error err;
	int rc = KH_EXIT_OK;

	policy = kh_policy_load(path, &opts, &err);
	if (policy == NULL) {
		kh_cli_error("%s", err.msg);
		return KH_EXIT_FAIL;
	}
	if (!quiet && kh_policy_print(policy, stdout) != 0) {
		kh_cli_error("cannot write the policy to stdout");
		rc = KH_EXIT_FAIL;
	}
	kh_policy_free(policy);
	return rc;
}

int
kh_cmd_config(int argc, char **argv)
{
	const char *file = NULL;
	bool quiet = false, options_done = false;
	int i;

	if (argc < 2) {
		kh_config_usage(stderr);
		return KH_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		kh_config_usage(stdout);
		return KH_EXIT_OK;
	}
	if (strcmp(argv[1], "check") != 0) {
		kh_cli_error("unknown config command '%s'; run 'kubehsm config --help'", argv[1]);
		return KH_EXIT_USAGE;
	}
	for (i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (!options_done && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
			kh_config_usage(stdout);
			return KH_EXIT_OK;
		} else if (!options_done && (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0)) {
			quiet = true;
		} else if (!options_done && strcmp(a, "--") == 0) {
			options_done = true;
		} else if (!options_done && a[0] == '-' && a[1] != '\0') {
			kh_cli_error("config check: unknown option '%s'; run "
				     "'kubehsm config --help'", a);
			return KH_EXIT_USAGE;
		} else if (file == NULL) {
			file = a;
		} else {
			kh_cli_error("config check: only one FILE may be given");
			return KH_EXIT_USAGE;
		}
	}
	return kh_config_check(kh_cli_config_path(file), quiet);
}
