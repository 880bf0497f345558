/*
 * kubehsm — the front end kubectl runs on every invocation.
 *
 * `kubehsm exec` is the warm path of every kube client on the host, so this
 * program links only libc, jansson and libkeyutils: it reads the keyring
 * record and prints the ExecCredential with no crypto library, no PKCS#11
 * module, no policy file and no D-Bus.  Every other subcommand needs more
 * (OpenSSL, libp11, libconfig) and is run by kubehsm-tool, which this
 * program execs with the same arguments.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kh_cli.h"
#include "kh_json.h"

/*
 * kubehsm-tool beside this binary (a build tree), else the configured
 * libexec path.  Neither program is privileged: whoever could place a file
 * beside this one could as well replace this one.
 */
static int
tool_path(char *buf, size_t size)
{
	char self[PATH_MAX];
	ssize_t n;
	char *slash;
	int len;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash != NULL) {
			*slash = '\0';
			len = snprintf(buf, size, "%s/kubehsm-tool", self);
			if (len > 0 && (size_t)len < size && access(buf, X_OK) == 0)
				return 0;
		}
	}
	len = snprintf(buf, size, "%s", KH_TOOL_PATH);
	return len > 0 && (size_t)len < size ? 0 : -1;
}

int
main(int argc, char **argv)
{
	char tool[PATH_MAX];

	if (argc >= 2 && strcmp(argv[1], "exec") == 0) {
		kh_json_seed();
		kh_json_wipe_on_free(true);
		return kh_cmd_exec(argc - 1, argv + 1);
	}
	if (tool_path(tool, sizeof(tool)) != 0) {
		kh_cli_error("cannot locate kubehsm-tool");
		return KH_EXIT_FAIL;
	}
	execv(tool, argv);
	kh_cli_error("cannot run %s: %s; is kubehsm completely installed?", tool,
		     strerror(errno));
	return KH_EXIT_FAIL;
}
