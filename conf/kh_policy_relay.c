/*
 * kh_policy_relay — the relay section (kubehsm-relayd) and what callers
 * ask of it.
 *
 * The relay serves API servers on privileged loopback ports with the
 * session certificate of the issuer each cluster names, so this section is
 * checked against the issuers and against session.deliver: it loads last.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include <libconfig.h>

#include "lib/kh_error.h"
#include "conf/kh_policy.h"
#include "conf/kh_policy_int.h"

#define KH_RELAY_DEFAULT_RUN_AS          "kubehsm"
#define KH_RELAY_DEFAULT_HANDSHAKE       "10s"
#define KH_RELAY_DEFAULT_IDLE            "1h"
#define KH_RELAY_DEFAULT_MAX_SESSIONS    1024
#define KH_RELAY_DEFAULT_MAX_CONNS       4096
#define KH_RELAY_DEFAULT_MAX_CONNS_USER  128
#define KH_RELAY_USER_MAX                32

static const char *const kh_relay_keys[] = {
	"run_as", "rundir", "handshake_timeout", "idle_timeout", "max_sessions",
	"max_connections", "max_connections_per_user", "upstream_idle_timeout", "audit",
	"clusters", NULL,
};
static const char *const kh_relay_cluster_keys[] = {
	"name", "listen", "server", "ca_file", "server_name", "issuer", NULL,
};

/* A DNS name as an API server has one: letters, digits, '-' and '.' only. */
static bool
kh_valid_hostname(const char *h)
{
	size_t n = strlen(h), i;

	if (n < 1 || n > 253 || h[0] == '.' || h[0] == '-')
		return false;
	for (i = 0; i < n; i++) {
		if (!isalnum((unsigned char)h[i]) && h[i] != '-' && h[i] != '.')
			return false;
	}
	return true;
}

/*
 * relay.clusters[].server: "https://HOST[:PORT]" with an optional "/"; HOST
 * is a DNS name, an IPv4 address or a bracketed IPv6 address.  The relay
 * forwards requests unchanged, so a path prefix could not be honoured.
 */
static int
kh_parse_server_url(const struct kh_loader *ld, const config_setting_t *s,
		    struct kh_relay_cluster *c)
{
	const char *u = c->server, *h, *end, *port = NULL;
	unsigned char bin[16];
	char *host;
	size_t hlen;

	if (strncmp(u, "https://", 8) != 0)
		return kh_pol_fail_at(ld, s, "relay.clusters.server \"%s\" must start with https:// "
				      "(the relay speaks mTLS to the API server)", u);
	h = u + 8;
	if (h[0] == '[') {
		end = strchr(h, ']');
		if (end == NULL)
			return kh_pol_fail_at(ld, s, "relay.clusters.server \"%s\": missing ']'", u);
		host = strndup(h + 1, (size_t)(end - h - 1));
		end++;
	} else {
		end = h + strcspn(h, ":/");
		host = strndup(h, (size_t)(end - h));
	}
	if (host == NULL)
		return kh_pol_fail_oom(ld);
	c->server_host = host;
	if (*end == ':') {
		port = end + 1;
		end = port + strspn(port, "0123456789");
	}
	if (strcmp(end, "") != 0 && strcmp(end, "/") != 0)
		return kh_pol_fail_at(ld, s, "relay.clusters.server \"%s\": only https://HOST[:PORT] "
				      "is allowed (no path, query or user)", u);
	hlen = strlen(host);
	if (hlen == 0 ||
	    (h[0] == '[' && inet_pton(AF_INET6, host, bin) != 1) ||
	    (h[0] != '[' && inet_pton(AF_INET, host, bin) != 1 && !kh_valid_hostname(host)))
		return kh_pol_fail_at(ld, s, "relay.clusters.server \"%s\": \"%s\" is not a host name "
				      "or IP address (IPv6 goes in brackets)", u, host);
	c->server_port = 443;
	if (port != NULL) {
		long v = 0;

		for (const char *d = port; d < end; d++)
			v = v > 65535 ? v : v * 10 + (*d - '0');
		if (port == end || v < 1 || v > 65535)
			return kh_pol_fail_at(ld, s, "relay.clusters.server \"%s\": bad port", u);
		c->server_port = (int)v;
	}
	return 0;
}

static int
kh_load_relay_cluster(const struct kh_loader *ld, const config_setting_t *g,
		      const struct kh_policy *p, struct kh_relay_cluster *c)
{
	const config_setting_t *w, *caw, *snw;
	long port;

	if (kh_pol_check_keys(ld, g, "relay.clusters", kh_relay_cluster_keys) != 0 ||
	    kh_pol_get_string(ld, g, "relay.clusters", "name", NULL, KH_STR_NONEMPTY, &c->name, &w) != 0)
		return -1;
	if (!kh_word_valid(c->name, strlen(c->name), KH_RELAY_NAME_MAX))
		return kh_pol_fail_at(ld, w, "relay.clusters.name \"%s\" must be 1 to %d characters "
				      "from A-Z a-z 0-9 . _ -", c->name, KH_RELAY_NAME_MAX);
	if (config_setting_get_member(g, "listen") == NULL)
		return kh_pol_fail_at(ld, g, "relay.clusters.listen is required (a port below 1024, "
				      "e.g. listen = 644;)");
	if (kh_pol_get_long(ld, g, "relay.clusters", "listen", 0, 1, KH_RELAY_PORT_MAX, &port,
			    &w) != 0) {
		kh_error_append(ld->err, "; a privileged port, so no user can stand in for "
				"the relay while it is down");
		return -1;
	}
	c->listen = (int)port;
	if (kh_pol_get_string(ld, g, "relay.clusters", "server", NULL, KH_STR_NONEMPTY,
			      &c->server, &w) != 0 ||
	    kh_parse_server_url(ld, w, c) != 0 ||
	    kh_pol_get_string(ld, g, "relay.clusters", "ca_file", NULL,
			      KH_STR_NONEMPTY | KH_STR_ABSPATH, &c->ca_file, &caw) != 0 ||
	    kh_pol_get_string(ld, g, "relay.clusters", "server_name", "", 0, &c->server_name,
			      &snw) != 0 ||
	    kh_pol_get_string(ld, g, "relay.clusters", "issuer", "", 0, &c->issuer, &w) != 0)
		return -1;
	if (c->server_name[0] != '\0' && !kh_valid_hostname(c->server_name))
		return kh_pol_fail_at(ld, snw, "relay.clusters.server_name \"%s\" is not a host name",
				      c->server_name);
	if (kh_policy_issuer(p, c->issuer) == NULL)
		return kh_pol_fail_at(ld, w, "relay.clusters.issuer \"%s\" names no configured issuer",
				      c->issuer);
	return kh_pol_check_named_file(ld, caw, "relay.clusters.ca_file", c->ca_file, KH_FILE_PUBLIC);
}

static int
kh_load_relay_clusters(const struct kh_loader *ld, const config_setting_t *g,
		       struct kh_policy *p)
{
	config_setting_t *list = config_setting_get_member(g, "clusters"), *e;
	struct kh_relay_policy *r = &p->relay;
	size_t i, j;
	int n;

	if (list == NULL)
		return kh_pol_fail_at(ld, g, "relay.clusters is required: ( { name = \"prod\"; "
				      "listen = 644; server = \"https://...\"; ca_file = \"...\"; } )");
	if (!config_setting_is_list(list))
		return kh_pol_fail_at(ld, list, "relay.clusters must be a list of groups "
				      "( { ... }, ... )");
	n = config_setting_length(list);
	if (n < 1 || n > KH_RELAY_CLUSTERS_MAX)
		return kh_pol_fail_at(ld, list, "relay.clusters must name 1 to %d clusters",
				      KH_RELAY_CLUSTERS_MAX);
	r->clusters = calloc((size_t)n, sizeof(*r->clusters));
	if (r->clusters == NULL)
		return kh_pol_fail_oom(ld);
	for (i = 0; i < (size_t)n; i++) {
		e = config_setting_get_elem(list, (unsigned int)i);
		if (e == NULL || !config_setting_is_group(e))
			return kh_pol_fail_at(ld, e != NULL ? e : list,
					      "relay.clusters entries must be groups "
					      "{ name = ...; ... }");
		r->nclusters++;
		if (kh_load_relay_cluster(ld, e, p, &r->clusters[i]) != 0)
			return -1;
		for (j = 0; j < i; j++) {
			if (strcmp(r->clusters[j].name, r->clusters[i].name) == 0)
				return kh_pol_fail_at(ld, e, "relay.clusters.name \"%s\" is used twice",
						      r->clusters[i].name);
			if (r->clusters[j].listen == r->clusters[i].listen)
				return kh_pol_fail_at(ld, e, "relay.clusters.listen %d is used twice",
						      r->clusters[i].listen);
		}
	}
	return 0;
}

/*
 * relay.upstream_idle_timeout and relay.audit = { file = "..."; syslog = b; }:
 * how long a pooled upstream connection waits for its uid's next request,
 * and where the one-line-per-request audit log goes (file "" = none).
 */
#define KH_RELAY_DEFAULT_UPSTREAM_IDLE   "30s"
static const char *const kh_relay_audit_keys[] = { "file", "syslog", NULL };

static int
kh_load_relay_audit(const struct kh_loader *ld, const config_setting_t *g,
		    struct kh_relay_policy *r)
{
	const config_setting_t *a = config_setting_get_member(g, "audit");

	if (kh_pol_get_duration(ld, g, "relay", "upstream_idle_timeout",
				KH_RELAY_DEFAULT_UPSTREAM_IDLE, 1, 3600,
				&r->upstream_idle_timeout) != 0)
		return -1;
	if (a != NULL && !config_setting_is_group(a))
		return kh_pol_fail_at(ld, a, "relay.audit must be a group: audit = { file = \"%s\"; "
				      "syslog = false; };", KH_RELAY_DEFAULT_AUDIT);
	if (a != NULL && kh_pol_check_keys(ld, a, "relay.audit", kh_relay_audit_keys) != 0)
		return -1;
	if (kh_pol_get_string(ld, a, "relay.audit", "file", KH_RELAY_DEFAULT_AUDIT,
			      KH_STR_ABSPATH, &r->audit_file, NULL) != 0 ||
	    kh_pol_get_bool(ld, a, "relay.audit", "syslog", false, &r->audit_syslog) != 0)
		return -1;
	return 0;
}

int
kh_pol_load_relay(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	struct kh_relay_policy *r = &p->relay;
	const config_setting_t *sess = config_setting_get_member(root, "session");
	const config_setting_t *dw = sess != NULL ? config_setting_get_member(sess, "deliver") : NULL;
	const config_setting_t *w;
	config_setting_t *g;

	if (kh_pol_get_section(ld, root, "relay", false, kh_relay_keys, &g) != 0)
		return -1;
	if (g == NULL) {
		if (p->session.deliver != KH_DELIVER_EXEC)
			return kh_pol_fail_at(ld, dw, "session.deliver = \"%s\" needs a relay section "
					      "naming the clusters kubehsm-relayd serves",
					      kh_deliver_name(p->session.deliver));
		return 0;
	}
	r->configured = true;
	if (kh_pol_get_string(ld, g, "relay", "run_as", KH_RELAY_DEFAULT_RUN_AS, KH_STR_NONEMPTY,
			      &r->run_as, &w) != 0)
		return -1;
	if (!kh_word_valid(r->run_as, strlen(r->run_as), KH_RELAY_USER_MAX) || strcmp(r->run_as, "root") == 0)
		return kh_pol_fail_at(ld, w, "relay.run_as \"%s\" must name a dedicated system user "
				      "(not root), e.g. \"kubehsm\"", r->run_as);
	if (kh_pol_get_string(ld, g, "relay", "rundir", KH_RELAY_DEFAULT_RUNDIR,
			      KH_STR_NONEMPTY | KH_STR_ABSPATH, &r->rundir, &w) != 0)
		return -1;
	if (strlen(r->rundir) > 64)
		return kh_pol_fail_at(ld, w, "relay.rundir is longer than 64 bytes (a socket path "
				      "must fit in sun_path)");
	if (kh_pol_get_duration(ld, g, "relay", "handshake_timeout", KH_RELAY_DEFAULT_HANDSHAKE,
				1, 300, &r->handshake_timeout) != 0 ||
	    kh_pol_get_duration(ld, g, "relay", "idle_timeout", KH_RELAY_DEFAULT_IDLE,
				10, KH_TTL_MAX, &r->idle_timeout) != 0 ||
	    kh_pol_get_long(ld, g, "relay", "max_sessions", KH_RELAY_DEFAULT_MAX_SESSIONS,
			    1, 65536, &r->max_sessions, NULL) != 0 ||
	    kh_pol_get_long(ld, g, "relay", "max_connections", KH_RELAY_DEFAULT_MAX_CONNS,
			    16, 262144, &r->max_connections, NULL) != 0 ||
	    kh_pol_get_long(ld, g, "relay", "max_connections_per_user",
			    KH_RELAY_DEFAULT_MAX_CONNS_USER, 1, 262144,
			    &r->max_connections_per_user, &w) != 0)
		return -1;
	if (r->max_connections_per_user > r->max_connections)
		return kh_pol_fail_at(ld, w, "relay.max_connections_per_user (%ld) is larger than "
				      "relay.max_connections (%ld)", r->max_connections_per_user,
				      r->max_connections);
	if (kh_load_relay_audit(ld, g, r) != 0 || kh_load_relay_clusters(ld, g, p) != 0)
		return -1;
	/* The relay tells users apart by uid, not by login. */
	if (p->session.deliver != KH_DELIVER_EXEC && p->session.scope != KH_SCOPE_USER)
		return kh_pol_fail_at(ld, dw, "session.deliver = \"%s\" needs session.scope = \"user\": "
				      "kubehsm-relayd knows a connection's uid, not its login",
				      kh_deliver_name(p->session.deliver));
	return 0;
}

void
kh_pol_relay_free(struct kh_relay_policy *r)
{
	size_t i;

	free(r->run_as);
	free(r->rundir);
	free(r->audit_file);
	for (i = 0; r->clusters != NULL && i < r->nclusters; i++) {
		free(r->clusters[i].name);
		free(r->clusters[i].server);
		free(r->clusters[i].server_host);
		free(r->clusters[i].ca_file);
		free(r->clusters[i].server_name);
		free(r->clusters[i].issuer);
	}
	free(r->clusters);
}

const struct kh_relay_cluster *
kh_policy_relay_cluster_for(const struct kh_policy *p, const char *issuer_id)
{
	size_t i;

	if (p == NULL || !p->relay.configured)
		return NULL;
	if (issuer_id == NULL)
		issuer_id = "";
	for (i = 0; i < p->relay.nclusters; i++) {
		const struct kh_issuer *is = kh_policy_issuer(p, p->relay.clusters[i].issuer);

		if (is != NULL && strcmp(is->id, issuer_id) == 0)
			return &p->relay.clusters[i];
	}
	return NULL;
}

bool
kh_policy_delivers_to_relay(const struct kh_policy *p)
{
	return p != NULL && p->relay.configured && p->session.deliver != KH_DELIVER_EXEC;
}

bool
kh_policy_delivers_to_exec(const struct kh_policy *p)
{
	return p == NULL || p->session.deliver != KH_DELIVER_RELAY;
}
