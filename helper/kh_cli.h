/*
 * kh_cli — the `kubehsm` subcommands.  Each takes argv after the
 * subcommand name (argv[0] is the subcommand) and returns the exit status.
 */
#ifndef KH_CLI_H
#define KH_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "cache/kh_cache.h"

/* Exit statuses, documented in kubehsm(1). */
#define KH_EXIT_OK       0
#define KH_EXIT_FAIL     1  /* the operation failed (no session, bad config, ...) */
#define KH_EXIT_USAGE    2  /* bad command line */
/* Not an exit status: kh_exec_main could not decide with what it was given
 * and wrote nothing (see helper/kubehsm.c). */
#define KH_EXIT_DELEGATE (-1)

/* What exec and sign say when the session key is with kubehsm-relayd. */
#define KH_CLI_RELAY_ONLY \
	"your kube session's key is held by kubehsm-relayd, not handed to kube " \
	"clients (session.deliver = \"relay\"): use the relay's kubeconfig instead, " \
	"e.g. KUBECONFIG=/etc/kubehsm/kubeconfig kubectl ..."

struct kh_cli_command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

/* Print "kubehsm: <msg>" as one line on stderr. */
void kh_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Before a secret is read into memory (the session key, a cached PIN):
 * no core dump and no ptrace/proc access by other processes of the user
 * (PR_SET_DUMPABLE 0, RLIMIT_CORE 0).  Two system calls: it runs on the
 * exec warm path.  -1 (errno) if either fails. */
int kh_cli_no_dumps(void);

/* The config file to use: --config, then $KUBEHSM_CONFIG, then the default. */
const char *kh_cli_config_path(const char *option);

int kh_cmd_config(int argc, char **argv);
/* kubehsm exec, checking the record's account with `account`: the front end
 * passes kh_cache_account_logname and gets KH_EXIT_DELEGATE when that cannot
 * tell; kubehsm-tool passes kh_cache_account_db. */
int kh_exec_main(int argc, char **argv, kh_cache_account_fn account);
int kh_cmd_sign(int argc, char **argv);
int kh_cmd_status(int argc, char **argv);
int kh_cmd_logout(int argc, char **argv);
int kh_cmd_login(int argc, char **argv);
int kh_cmd_kubeconfig(int argc, char **argv);
int kh_cmd_kubeconfig_relay(int argc, char **argv);
int kh_cmd_admin(int argc, char **argv);
/* kubehsm admin scan (argv[1] is "scan"); cmd_scan.c. */
int kh_cmd_admin_scan(int argc, char **argv);
int kh_cmd_token(int argc, char **argv);

struct kh_policy;
/* `kubehsm config check`'s notes on the tokens the policy's module shows
 * (comment lines on out) and the OpenSC warning (stderr); cmd_token.c. */
void kh_cli_token_notes(const struct kh_policy *policy, FILE *out);

#endif
