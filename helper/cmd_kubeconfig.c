/*
 * kubehsm kubeconfig [--name NAME] [--issuer ID] [--api-version V] [--merge FILE]
 *
 * Print a kubeconfig `users:` entry that runs `kubehsm exec` with
 * interactiveMode: Never, or (--merge) the kubectl commands that add it to
 * a kubeconfig.  Nothing is written: kubeconfig is the user's file.
 *
 * The entry names its apiVersion twice, as `apiVersion` and as
 * `--api-version` in args: client-go and the Python client send the former
 * in KUBERNETES_EXEC_INFO, while @kubernetes/client-node and ruby-kubeclient
 * run the plugin without that variable, and kubehsm exec answers them in the
 * latter.
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helper/kh_cli.h"
#include "lib/kh_exec_proto.h"
#include "lib/kh_words.h"

static void
kh_kubeconfig_usage(FILE *out)
{
	fprintf(out,
		"Usage: kubehsm kubeconfig [--name NAME] [--issuer ID] [--api-version V]\n"
		"                          [--command PATH] [--merge FILE]\n\n"
		"Print a kubeconfig users: entry that gets credentials from 'kubehsm exec'\n"
		"(interactiveMode: Never, provideClusterInfo: true).  Point a context's\n"
		"user at NAME.  The entry passes its apiVersion to kubehsm exec as\n"
		"--api-version too, for clients that do not set KUBERNETES_EXEC_INFO.\n\n"
		"  --name NAME      the user entry's name (default: kubehsm)\n"
		"  --issuer ID      pass --issuer ID to kubehsm exec (several issuers)\n"
		"  --api-version V  client.authentication.k8s.io/v1 (default) or v1beta1\n"
		"  --command PATH   the kubehsm to run (default: this program's path)\n"
		"  --merge FILE     print the kubectl commands that add the entry to FILE\n"
		"                   instead of the YAML\n"
		"  --relay          the shared, credential-less kubeconfig of kubehsm-relayd\n"
		"                   instead (see 'kubehsm kubeconfig --relay --help')\n"
		"  -h, --help       show this help\n");
}

/*
 * The kubehsm a kubeconfig should run: the front end.  This code runs in
 * kubehsm-tool, which the front end executed in its place, so
 * /proc/self/exe names the tool: the front end is the "kubehsm" beside it
 * (a build tree), else the installed one (KH_FRONT_PATH).  Were the exec
 * plugin the tool, every kube request would pay the dynamic program the
 * front end exists to spare it.
 */
static const char *
front_end_path(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	char *slash;

	if (n <= 0)
		return KH_FRONT_PATH;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (slash == NULL || strcmp(slash + 1, "kubehsm-tool") != 0)
		return buf;             /* not the tool: this program itself */
	if ((size_t)(slash - buf) + sizeof("/kubehsm") > size)
		return KH_FRONT_PATH;
	memcpy(slash + 1, "kubehsm", sizeof("kubehsm"));
	return access(buf, X_OK) == 0 ? buf : KH_FRONT_PATH;
}

/*
 * kubectl 1.35's kuberc may restrict credential plugins
 * (credentialPluginPolicy: DenyAll, or Allowlist): the entry above then
 * fails with 'plugin "..." not allowed'.  Comment lines (YAML and shell
 * alike) say what to allow; the allowlist entry's field is "name" in
 * kubectl 1.35 and "command" from 1.36.  The relay's kubeconfig runs no
 * plugin at all.
 */
static void
kh_kubeconfig_kuberc_note(const char *command)
{
	printf("# kubectl 1.35+ with a kuberc credentialPluginPolicy (e.g. DenyAll) refuses\n"
	       "# this plugin ('plugin \"...\" not allowed'): allow it in ~/.kube/kuberc:\n"
	       "#   apiVersion: kubectl.config.k8s.io/v1beta1\n"
	       "#   kind: Preference\n"
	       "#   credentialPluginPolicy: Allowlist\n"
	       "#   credentialPluginAllowlist:\n"
	       "#   - name: %s      # kubectl 1.35\n"
	       "#   - command: %s   # kubectl 1.36 and later\n"
	       "# (keep the one your kubectl reads), or use kubehsm-relayd's kubeconfig\n"
	       "# ('kubehsm kubeconfig --relay'), which needs no plugin at all.\n",
	       command, command);
}

int
kh_cmd_kubeconfig(int argc, char **argv)
{
	const char *name = "kubehsm", *issuer = NULL, *merge = NULL, *command = NULL;
	const char *api = "client.authentication.k8s.io/v1";
	char self[PATH_MAX];
	int i;

	/* kubehsm-relayd's kubeconfig is another document: cmd_kubeconfig_relay.c */
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--relay") == 0)
			return kh_cmd_kubeconfig_relay(argc, argv);
	}
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			kh_kubeconfig_usage(stdout);
			return KH_EXIT_OK;
		} else if (v != NULL && strcmp(a, "--name") == 0) {
			name = v; i++;
		} else if (v != NULL && strcmp(a, "--issuer") == 0) {
			issuer = v; i++;
		} else if (v != NULL && strcmp(a, "--merge") == 0) {
			merge = v; i++;
		} else if (v != NULL && strcmp(a, "--command") == 0) {
			command = v; i++;
		} else if (v != NULL && strcmp(a, "--api-version") == 0) {
			if (kh_exec_api_from_string(v) == KH_EXEC_API_NONE) {
				kh_cli_error("kubeconfig: unsupported --api-version '%s'", v);
				return KH_EXIT_USAGE;
			}
			api = v; i++;
		} else {
			kh_cli_error("kubeconfig: unexpected argument '%s'; run 'kubehsm kubeconfig --help'", a);
			return KH_EXIT_USAGE;
		}
	}
	if (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-") !=
	    strlen(name) || name[0] == '\0') {
		kh_cli_error("kubeconfig: --name may use letters, digits and . _ @ - only");
		return KH_EXIT_USAGE;
	}
	if (issuer != NULL && !kh_issuer_id_valid(issuer, strlen(issuer))) {
		kh_cli_error("kubeconfig: --issuer must be 1-%d of [A-Za-z0-9._-]", KH_ISSUER_ID_MAX);
		return KH_EXIT_USAGE;
	}
	if (command == NULL)
		command = front_end_path(self, sizeof(self));
	if (strpbrk(command, "'\"\\\n: #") != NULL) {
		kh_cli_error("kubeconfig: the command path '%s' needs quoting; pass --command", command);
		return KH_EXIT_USAGE;
	}

	if (merge != NULL) {
		printf("# Add the kubehsm user entry to %s (kubectl 1.30 or later):\n"
		       "kubectl --kubeconfig '%s' config set-credentials %s \\\n"
		       "  --exec-api-version=%s --exec-command=%s \\\n"
		       "  --exec-arg=exec --exec-arg=--api-version --exec-arg=%s%s%s \\\n"
		       "  --exec-interactive-mode=Never\n"
		       "# kubectl 1.27-1.29 lack --exec-interactive-mode: drop it (kubehsm\n"
		       "# never prompts either way) or paste the YAML from 'kubehsm kubeconfig'.\n"
		       "# Then use it in a context:\n"
		       "kubectl --kubeconfig '%s' config set-context --current --user=%s\n",
		       merge, merge, name, api, command, api,
		       issuer ? " --exec-arg=--issuer --exec-arg=" : "",
		       issuer ? issuer : "", merge, name);
		kh_kubeconfig_kuberc_note(command);
		return fflush(stdout) == 0 ? KH_EXIT_OK : KH_EXIT_FAIL;
	}
	printf("users:\n"
	       "- name: %s\n"
	       "  user:\n"
	       "    exec:\n"
	       "      apiVersion: %s\n"
	       "      command: %s\n"
	       "      args:\n"
	       "      - exec\n"
	       "      - --api-version\n"
	       "      - %s\n", name, api, command, api);
	if (issuer != NULL)
		printf("      - --issuer\n      - %s\n", issuer);
	printf("      interactiveMode: Never\n"
	       "      provideClusterInfo: true\n");
	kh_kubeconfig_kuberc_note(command);
	return fflush(stdout) == 0 ? KH_EXIT_OK : KH_EXIT_FAIL;
}
