/*
 * kubehsm kubeconfig --relay [--config FILE] [--cluster NAME] [--write FILE]
 *
 * The kubeconfig every user of the host shares when kubehsm-relayd serves
 * the clusters (session.deliver = "relay" or "both"): one cluster and one
 * context per relay cluster, server http://127.0.0.1:PORT, no user entry
 * and no credentials at all, because the relay knows who connects from the
 * kernel.  Printed, or written (--write, e.g. /etc/kubehsm/kubeconfig:
 * mode 0644, replaced atomically).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helper/kh_cli.h"
#include "conf/kh_policy.h"

static void
kh_kubeconfig_relay_usage(FILE *out)
{
	fprintf(out,
		"Usage: kubehsm kubeconfig --relay [--config FILE] [--cluster NAME]\n"
		"                                  [--write FILE]\n\n"
		"Print the kubeconfig every user shares when kubehsm-relayd serves the\n"
		"policy's relay clusters: server http://127.0.0.1:PORT per cluster and no\n"
		"credentials (the relay tells users apart by the kernel's word).\n\n"
		"  --config FILE   the policy (default $KUBEHSM_CONFIG, else %s)\n"
		"  --cluster NAME  current-context (default: the first relay cluster)\n"
		"  --write FILE    write it to FILE (mode 0644, replaced atomically),\n"
		"                  e.g. /etc/kubehsm/kubeconfig\n"
		"  -h, --help      show this help\n", KH_DEFAULT_CONFIG);
}

static int
kh_kubeconfig_relay_emit(FILE *f, const struct kh_relay_policy *r, const char *current)
{
	size_t i;

	fprintf(f, "# kubehsm-relayd: no credentials here; each user is served with\n"
		"# their own kube session (kubehsm-relayd(8)).\n"
		"apiVersion: v1\nkind: Config\nclusters:\n");
	for (i = 0; i < r->nclusters; i++)
		fprintf(f, "- name: %s\n  cluster:\n    server: http://127.0.0.1:%d\n",
			r->clusters[i].name, r->clusters[i].listen);
	fprintf(f, "contexts:\n");
	for (i = 0; i < r->nclusters; i++)
		fprintf(f, "- name: %s\n  context:\n    cluster: %s\n", r->clusters[i].name,
			r->clusters[i].name);
	fprintf(f, "current-context: %s\n", current);
	return ferror(f) ? -1 : 0;
}

/* Write to a temporary file beside path, then rename: readers never see half. */
static int
kh_kubeconfig_relay_write(const char *path, const struct kh_relay_policy *r,
			  const char *current)
{
	char tmp[4096];
	FILE *f;
	int fd, n;

	n = snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		kh_cli_error("kubeconfig: %s: path too long", path);
		return -1;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		kh_cli_error("kubeconfig: cannot write beside %s: %s", path, strerror(errno));
		return -1;
	}
	f = fdopen(fd, "w");
	if (f == NULL || fchmod(fd, 0644) != 0 || kh_kubeconfig_relay_emit(f, r, current) != 0 ||
	    fflush(f) != 0 || fsync(fd) != 0) {
		kh_cli_error("kubeconfig: cannot write %s: %s", tmp, strerror(errno));
		if (f != NULL)
			(void)fclose(f);
		else
			(void)close(fd);
		(void)unlink(tmp);
		return -1;
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		kh_cli_error("kubeconfig: cannot write %s: %s", path, strerror(errno));
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

int
kh_cmd_kubeconfig_relay(int argc, char **argv)
{
	const char *config = NULL, *cluster = NULL, *write = NULL;
	struct kh_policy_load_opts lo = { .skip_secret_file_checks = true };
	struct kh_policy *policy;
	kh_error err;
	size_t i;
	int rc = KH_EXIT_FAIL;

	for (i = 1; i < (size_t)argc; i++) {
		const char *a = argv[i], *v = i + 1 < (size_t)argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			kh_kubeconfig_relay_usage(stdout);
			return KH_EXIT_OK;
		} else if (strcmp(a, "--relay") == 0) {
			continue;
		} else if (v != NULL && strcmp(a, "--config") == 0) {
			config = v; i++;
		} else if (v != NULL && strcmp(a, "--cluster") == 0) {
			cluster = v; i++;
		} else if (v != NULL && strcmp(a, "--write") == 0) {
			write = v; i++;
		} else {
			kh_cli_error("kubeconfig --relay: unexpected argument '%s'; run "
				     "'kubehsm kubeconfig --relay --help'", a);
			return KH_EXIT_USAGE;
		}
	}
	policy = kh_policy_load(kh_cli_config_path(config), &lo, &err);
	if (policy == NULL) {
		kh_cli_error("kubeconfig: %s", err.msg);
		return KH_EXIT_FAIL;
	}
	if (!policy->relay.configured) {
		kh_cli_error("kubeconfig: %s has no relay section: kubehsm-relayd serves no "
			     "cluster (see kubehsm.conf(5))", policy->path);
		goto out;
	}
	for (i = 0; cluster != NULL && i < policy->relay.nclusters; i++) {
		if (strcmp(policy->relay.clusters[i].name, cluster) == 0)
			break;
	}
	if (cluster != NULL && i == policy->relay.nclusters) {
		kh_cli_error("kubeconfig: no relay cluster named '%s'", cluster);
		goto out;
	}
	if (cluster == NULL)
		cluster = policy->relay.clusters[0].name;
	if (write != NULL)
		rc = kh_kubeconfig_relay_write(write, &policy->relay, cluster) == 0 ?
		     KH_EXIT_OK : KH_EXIT_FAIL;
	else
		rc = kh_kubeconfig_relay_emit(stdout, &policy->relay, cluster) == 0 &&
		     fflush(stdout) == 0 ? KH_EXIT_OK : KH_EXIT_FAIL;
out:
	kh_policy_free(policy);
	return rc;
}
