/*
 * kubehsm — the front end kubectl runs on every invocation.
 *
 * `kubehsm exec` is the warm path of every kube client on the host, so this
 * program maps only libc (jansson and libkeyutils are embedded): it reads
 * the keyring record and prints the ExecCredential with no crypto library,
 * no PKCS#11 module, no policy file and no D-Bus.  Every other subcommand
 * needs more (OpenSSL, libp11, libconfig) and lives in kubehsm-tool.so,
 * which this program loads only for them, running them in this process.
 */
#include "config.h"

#include <dlfcn.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "helper/kh_cli.h"
#include "lib/kh_json.h"
#include "lib/kh_path.h"

/*
 * kubehsm-tool.so beside this binary (an install layout that keeps them
 * together, or libtool's .libs in a build tree), else the configured
 * $(pkglibdir) path (kh_path_beside).
 */
static int
tool_path(char *buf, size_t size)
{
	static const char *const beside[] = { "kubehsm-tool.so", ".libs/kubehsm-tool.so" };
	char self[PATH_MAX];
	ssize_t n;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0)
		self[n] = '\0';
	return kh_path_beside(n > 0 ? self : NULL, beside, sizeof(beside) / sizeof(beside[0]),
			      KH_TOOL_PATH, buf, size);
}

/* Load kubehsm-tool.so and run the subcommand in this process. */
static int
run_tool(int argc, char **argv)
{
	int (*tool_main)(int, char **);
	char tool[PATH_MAX];
	const char *why;
	void *handle;

	if (tool_path(tool, sizeof(tool)) != 0) {
		kh_cli_error("cannot locate kubehsm-tool.so");
		return KH_EXIT_FAIL;
	}
	handle = dlopen(tool, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL) {
		why = dlerror();
		kh_cli_error("cannot load %s; is kubehsm completely installed?",
			     why != NULL ? why : tool);
		return KH_EXIT_FAIL;
	}
	*(void **)&tool_main = dlsym(handle, "kh_tool_main");
	if (tool_main == NULL) {
		kh_cli_error("%s is not kubehsm's tool module", tool);
		return KH_EXIT_FAIL;
	}
	return tool_main(argc, argv);   /* the module stays loaded until exit */
}

int
main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "exec") == 0) {
		kh_json_seed();
		kh_json_wipe_on_free(true);
		return kh_cmd_exec(argc - 1, argv + 1);
	}
	return run_tool(argc, argv);
}
