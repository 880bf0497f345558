/*
 * kubehsm — the front end kubectl runs on every invocation.
 *
 * `kubehsm exec` is the warm path of every kube client on the host.  This
 * program is linked static-pie (configure.ac, --enable-static-front): no
 * dynamic loader, no shared library to map or relocate, no symbol lookups;
 * it reads the keyring record and writes the answer the login rendered into
 * it.  A static glibc program must not use NSS or dlopen (glibc would load
 * the modules of whatever glibc is installed into it), so nothing here does:
 * the record's account is checked against LOGNAME alone
 * (kh_cache_account_logname).
 *
 * Every other subcommand needs OpenSSL, libp11 and libconfig, and lives in
 * kubehsm-tool, an ordinary dynamic program in $(pkglibexecdir) that this
 * one executes in its own place (same process, same arguments, same
 * environment).  So does `exec` in the rare case LOGNAME cannot vouch for
 * the record's account (unset, or naming another user): the tool asks the
 * account database, before anything was written.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "helper/kh_cli.h"
#include "lib/kh_json.h"

/* The tool beside this program (a build tree, or an install that keeps
 * them together), else at its configured path. */
static const char *
self_dir_tool(char *buf, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;
	int len;

	if (n <= 0)
		return NULL;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash == NULL)
		return NULL;
	len = snprintf(buf, size, "%.*s/kubehsm-tool", (int)(slash - self), self);
	return len > 0 && (size_t)len < size ? buf : NULL;
}

/*
 * Run the subcommand in kubehsm-tool, in this process's place.  Returns
 * only on failure.  A tool beside this program that is missing (ENOENT) is
 * passed over; any other failure there is reported rather than hidden by
 * the installed tool.
 */
static int
run_tool(int argc, char **argv)
{
	char beside[PATH_MAX];
	const char *tool = self_dir_tool(beside, sizeof(beside));

	(void)argc;
	if (tool != NULL) {
		execv(tool, argv);
		if (errno != ENOENT) {
			kh_cli_error("cannot run %s: %s; is kubehsm completely installed?",
				     tool, strerror(errno));
			return KH_EXIT_FAIL;
		}
	}
	execv(KH_TOOL_PATH, argv);
	kh_cli_error("cannot run %s: %s; is kubehsm completely installed?", KH_TOOL_PATH,
		     strerror(errno));
	return KH_EXIT_FAIL;
}

int
main(int argc, char **argv)
{
	int rc;

	if (argc >= 2 && strcmp(argv[1], "exec") == 0) {
		/* jansson parses only KUBERNETES_EXEC_INFO and the record's
		 * header here, neither of which holds a secret (the key stays in
		 * the exec part, which jansson never sees): no wiping allocator
		 * (kh_json_wipe_on_free), which would cleanse every block. */
		kh_json_seed();
		rc = kh_exec_main(argc - 1, argv + 1, kh_cache_account_logname);
		if (rc != KH_EXIT_DELEGATE)
			return rc;
	}
	return run_tool(argc, argv);
}
