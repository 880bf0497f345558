/*
 * kubehsm-tool — every kubehsm subcommand.  The `kubehsm` front end
 * (kubehsm.c, a static program) answers `exec` itself and, for anything
 * else, executes this program in its own place with its own arguments:
 * OpenSSL, libp11 and libconfig only in the commands that need them.
 *
 * kubehsm — the unprivileged kubehsm command-line tool.
 *
 * It is a client-go exec credential plugin (`kubehsm exec`), an external
 * signer (`kubehsm sign`), and the user's and admin's view of the session
 * cache.  It is never installed setuid: everything it does, it does with the
 * caller's own rights over the caller's own keyring.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helper/kh_cli.h"
#include "lib/kh_json.h"

/* exec when the front end could not tell whose the record is (LOGNAME
 * unset or naming someone else): here the account database decides. */
static int
cmd_exec(int argc, char **argv)
{
	int rc = kh_exec_main(argc, argv, kh_cache_account_db);

	return rc == KH_EXIT_DELEGATE ? KH_EXIT_FAIL : rc;
}

static const struct kh_cli_command commands[] = {
	{ "exec", "client-go exec credential plugin (kubectl runs it)", cmd_exec },
	{ "sign", "external signer: sign for a client with the session key", kh_cmd_sign },
	{ "status", "show your kube session (--json too)", kh_cmd_status },
	{ "login", "start or renew your kube session from inside a login", kh_cmd_login },
	{ "logout", "end your kube session now", kh_cmd_logout },
	{ "kubeconfig", "print or merge a kubeconfig user entry for kubehsm", kh_cmd_kubeconfig },
	{ "config", "check the policy file and print the effective policy", kh_cmd_config },
	{ "token", "which token and certificate kubehsm would use for you, and why", kh_cmd_token },
	{ "admin", "root: list all users' sessions, revoke one user's", kh_cmd_admin },
};

static void
usage(FILE *out)
{
	size_t i;

	fprintf(out, "Usage: kubehsm COMMAND [ARGS...]\n\n"
		"PIN once at login; kubectl without prompts.\n\nCommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nRun 'kubehsm COMMAND --help' for a command's options.\n"
		"See kubehsm(1) and kubehsm.conf(5).\n");
}

int
main(int argc, char **argv)
{
	size_t i;

	kh_json_seed();
	kh_json_wipe_on_free(true);
	if (argc < 2) {
		usage(stderr);
		return KH_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return KH_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("kubehsm %s\n", PACKAGE_VERSION);
		return KH_EXIT_OK;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	}
	kh_cli_error("unknown command '%s'; run 'kubehsm --help'", argv[1]);
	return KH_EXIT_USAGE;
}
