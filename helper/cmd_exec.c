/*
 * kubehsm exec — the client-go exec credential plugin (KEP-541).
 *
 * This runs once per kubectl invocation, for every command of every user, so
 * the warm path is deliberately lean: no policy file, no PKCS#11, no polkit,
 * no network, no disk writes, no JSON encoding.  Parse KUBERNETES_EXEC_INFO,
 * pick the issuer, read the caller's record from the kernel keyring, check
 * it, and write the answer the login rendered into it (kh_exec_answer_*)
 * behind the asked apiVersion, in one write; wipe.  It never reads stdin or
 * prompts (spec.interactive changes nothing): with no valid session it says
 * why and what to do on one stderr line and exits 1.
 *
 * Not every client sets KUBERNETES_EXEC_INFO (@kubernetes/client-node and
 * ruby-kubeclient run the plugin without it), so the entry `kubehsm
 * kubeconfig` prints also passes its apiVersion as --api-version.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/kh_cache.h"
#include "helper/kh_cli.h"
#include "lib/kh_io.h"
#include "lib/kh_mem.h"
#include "lib/kh_exec_proto.h"

static void
kh_exec_usage(FILE *out)
{
	fprintf(out,
		"Usage: kubehsm exec [--issuer ID] [--api-version VERSION]\n\n"
		"client-go exec credential plugin: print an ExecCredential holding the\n"
		"session certificate chain, the session key and the expiry, read from\n"
		"your kube session in the kernel keyring (started at login).  kubectl\n"
		"runs it; it reads KUBERNETES_EXEC_INFO and never prompts.\n\n"
		"  --issuer ID          issuer to use when several are configured; the\n"
		"                       kubeconfig cluster extension\n"
		"                       client.authentication.k8s.io/exec {issuer: ID}\n"
		"                       (provideClusterInfo: true) takes precedence\n"
		"  --api-version V      the kubeconfig entry's apiVersion\n"
		"                       (client.authentication.k8s.io/v1 or /v1beta1):\n"
		"                       the answer's apiVersion for clients that do not\n"
		"                       set KUBERNETES_EXEC_INFO (@kubernetes/client-node,\n"
		"                       ruby-kubeclient); when it is set, the two must agree\n"
		"  -h, --help           show this help\n\n"
		"Exit status: 0 credential printed, 1 no valid session or bad input (one\n"
		"line on stderr, nothing on stdout), 2 usage error.  See kubehsm(1).\n");
}

/* Write prefix, then ans without its first byte: the answer to the asked
 * apiVersion (see kh_exec_answer_prefix), in one write. */
static int
write_answer(const char *prefix, const char *ans, size_t len)
{
	size_t plen, n;
	char *buf;
	int rc, e;

	if (prefix == NULL || len < 2) {
		errno = EINVAL;
		return -1;
	}
	plen = strlen(prefix);
	n = plen + len - 1;
	buf = malloc(n);
	if (buf == NULL) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(buf, prefix, plen);
	memcpy(buf + plen, ans + 1, len - 1);
	rc = kh_write_all(STDOUT_FILENO, buf, n);
	e = errno;
	kh_secure_free(buf, n);
	errno = e;
	return rc;
}

int
kh_exec_main(int argc, char **argv, kh_cache_account_fn account)
{
	const char *issuer_opt = NULL, *issuer;
	enum kh_exec_api arg_api = KH_EXEC_API_NONE;
	struct kh_exec_info info;
	struct kh_record *rec = NULL;
	enum kh_cache_miss miss = KH_MISS_NONE;
	kh_error err;
	int i, rc = KH_EXIT_FAIL, found;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			kh_exec_usage(stdout);
			return KH_EXIT_OK;
		} else if (strcmp(a, "--issuer") == 0 && i + 1 < argc) {
			issuer_opt = argv[++i];
		} else if (strncmp(a, "--issuer=", 9) == 0) {
			issuer_opt = a + 9;
		} else if ((strcmp(a, "--api-version") == 0 && i + 1 < argc) ||
			   strncmp(a, "--api-version=", 14) == 0) {
			const char *v = a[13] == '=' ? a + 14 : argv[++i];

			arg_api = kh_exec_api_from_string(v);
			if (arg_api == KH_EXEC_API_NONE) {
				kh_cli_error("exec: unsupported --api-version '%s'; use "
					     "client.authentication.k8s.io/v1 or /v1beta1", v);
				return KH_EXIT_USAGE;
			}
		} else {
			kh_cli_error("exec: unexpected argument '%s'; run 'kubehsm exec --help'", a);
			return KH_EXIT_USAGE;
		}
	}

	if (kh_exec_info_from_env(getenv("KUBERNETES_EXEC_INFO"), arg_api,
				  &info, &err) != 0) {
		kh_cli_error("%s%s", strncmp(err.msg, "KUBERNETES_EXEC_INFO", 20) == 0 ? "" : "KUBERNETES_EXEC_INFO: ", err.msg);
		return KH_EXIT_FAIL;
	}
	issuer = info.cluster.issuer != NULL ? info.cluster.issuer
		 : issuer_opt != NULL ? issuer_opt : "";

	if (kh_cli_no_dumps() != 0) {
		kh_cli_error("cannot keep the session key out of core dumps: %s", strerror(errno));
		goto out;
	}
	found = kh_cache_find_answer(issuer, account, &rec, &miss, &err);
	if (found == KH_CACHE_ACCOUNT_UNKNOWN) {
		rc = KH_EXIT_DELEGATE;   /* nothing written: the caller asks again */
		goto out;
	}
	if (found != 0) {
		kh_cli_error("%s", err.msg);
		goto out;
	}
	if (rec->exec_answer == NULL) {
		kh_cli_error("%s", KH_CLI_RELAY_ONLY);
		goto out;
	}
	if (write_answer(kh_exec_answer_prefix(info.api), rec->exec_answer,
			 rec->exec_answer_len) != 0) {
		kh_cli_error("cannot write the credential to stdout: %s", strerror(errno));
		goto out;
	}
	rc = KH_EXIT_OK;
out:
	kh_record_free(rec);
	kh_exec_info_free(&info);
	return rc;
}
