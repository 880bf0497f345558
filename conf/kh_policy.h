/*
 * kh_policy — the validated admin policy (/etc/kubehsm/kubehsm.conf).
 *
 * The file is parsed with libconfig into exactly one typed structure; every
 * optional value has its default filled in, so consumers never look at the
 * raw configuration.  Loading is all-or-nothing: on any error the caller
 * gets NULL and one "file:line: what is wrong" message.
 *
 * Return convention: the loaders and kh_policy_forward_socket return NULL
 * on failure with err set; the lookups kh_policy_issuer and
 * kh_policy_relay_cluster_for return NULL when nothing matches, which is no
 * error.  kh_policy_print returns 0, or -1 when it cannot print (no err:
 * the caller owns the stream and says what failed).
 */
#ifndef KH_POLICY_H
#define KH_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "lib/kh_env.h"
#include "lib/kh_error.h"
#include "lib/kh_words.h"

#define KH_POLICY_VERSION 1

/* Largest policy file kh_policy_load reads (bytes). */
#define KH_POLICY_MAX_SIZE (256 * 1024)

/* session.ttl bounds, seconds.  Above KH_TTL_LONG only with
 * session.allow_long_ttl: in exec mode a revoked user keeps a valid
 * certificate until it expires. */
#define KH_TTL_MIN 60L
#define KH_TTL_LONG (24L * 3600)
#define KH_TTL_MAX (7L * 24 * 3600)

/* Longest trust.domains, identity.allow_groups, identity.deny_groups. */
#define KH_POLICY_LIST_MAX 64

/* Where a group name in identity.groups comes from. */
enum kh_group_source {
	KH_GROUP_CERT,    /* "cert:O", "cert:OU": subject attribute values */
	KH_GROUP_UNIX,    /* "unix:k8s-*": the user's unix groups matching a glob */
	KH_GROUP_STATIC,  /* "static:name": always this group */
};

struct kh_group_rule {
	enum kh_group_source source;
	char *arg;              /* "O" / "OU"; the glob; the literal name */
};

struct kh_issuer {
	char *id;               /* "" for the single default issuer */
	char *key;              /* PKCS#11 URI of the issuer private key */
	char *module;           /* PKCS#11 module for the issuer (default pkcs11.module) */
	struct kh_env env;      /* set around its C_Initialize (default pkcs11.env
				 * with pkcs11.module, none with another module) */
	char *cert_file;        /* issuer certificate, then any intermediates (PEM) */
	char *pin_file;         /* root-only file holding the issuer token PIN */
	enum kh_key_type key_type;
};

/* ---- relay (kubehsm-relayd) ---- */

/* relay.clusters[].listen: a privileged loopback port. */
#define KH_RELAY_PORT_MAX 1023
#define KH_RELAY_CLUSTERS_MAX 64
#define KH_RELAY_NAME_MAX 32
/* relay.rundir when the policy does not say. */
#define KH_RELAY_DEFAULT_RUNDIR "/run/kubehsm-relayd"
/* relay.audit.file when the policy does not say. */
#define KH_RELAY_DEFAULT_AUDIT "/var/log/kubehsm/audit.log"

/* One API server the relay serves on one loopback port. */
struct kh_relay_cluster {
	char *name;             /* [A-Za-z0-9._-], unique */
	int listen;             /* port on 127.0.0.1 and [::1], 1..1023, unique */
	char *server;           /* "https://host[:port]", as written */
	char *server_host;      /* host from server (IPv6 without brackets) */
	int server_port;        /* port from server (default 443) */
	char *ca_file;          /* CA bundle the API server's certificate chains to */
	char *server_name;      /* name verified and sent as SNI; "" = server_host */
	char *issuer;           /* id of the issuer whose session certificate is used */
};

struct kh_relay_policy {
	bool configured;        /* a relay section exists */
	char *run_as;           /* the daemon's unprivileged system user */
	char *rundir;           /* control.sock and user.sock */
	long handshake_timeout; /* seconds: first bytes + upstream TLS */
	long idle_timeout;      /* seconds with no byte either way */
	long max_sessions;
	long max_connections;
	long max_connections_per_user;
	long upstream_idle_timeout; /* seconds a pooled upstream connection waits */
	char *audit_file;       /* relay.audit.file: one JSON line per request; "" = none */
	bool audit_syslog;      /* relay.audit.syslog: the same lines to syslog (authpriv) */
	struct kh_relay_cluster *clusters;
	size_t nclusters;
};

struct kh_policy {
	char *path;             /* the file it came from */
	int version;

	struct {
		char *module;   /* PKCS#11 module for user tokens */
		struct kh_env env;  /* pkcs11.env: set around its C_Initialize */
		/* A token forwarded from the user's laptop (kubehsm login):
		 * p11-kit's client module and the per-user socket ("%U" = the
		 * uid).  NULL/NULL when not configured. */
		char *forward_module;
		char *forward_socket;
	} pkcs11;

	/* Which token and key are the user's: the token whose certificate
	 * maps to the user (lib/kh_token.h), narrowed by these when set. */
	struct {
		char *uri;        /* token URI (RFC 7512, token attributes); "" = every token */
		char *label;      /* template, %u = PAM user; "" = any label */
		char *key_label;  /* template; "" = any CKA_LABEL */
		char *key_id;     /* hex CKA_ID; "" = any (the key has the certificate's) */
	} token;

	struct {
		char *ca_file;
		char *crl_file;   /* "" = no CRL */
		enum kh_map_rule map;
		char **domains;   /* map email/upn: the domains whose local parts
				   * are local users (lower case, exact match) */
		size_t ndomains;
	} trust;

	struct {
		char *username;   /* template, %u = PAM user */
		/* template of the certificate's UID attribute ("": none):
		 * KH_UID_ESCAPES, see kh_policy_uid_expand */
		char *uid;
		struct kh_group_rule *groups;
		size_t ngroups;
		/* A kube group is minted only if it matches an allow glob and no
		 * deny glob (whatever its source); default allow "*", deny
		 * "system:*" (no certificate O= becomes system:masters). */
		char **allow_groups;
		size_t nallow_groups;
		char **deny_groups;
		size_t ndeny_groups;
	} identity;

	struct kh_issuer *issuers;  /* at least one; ids unique */
	size_t nissuers;

	struct {
		long ttl;                 /* seconds */
		enum kh_scope scope;
		bool revoke_on_logout;
		bool cache_pin;
		bool allow_long_ttl;      /* ttl may exceed KH_TTL_LONG */
		enum kh_deliver deliver;
	} session;

	struct {
		enum kh_signer_key key;
	} signer;

	struct {
		enum kh_polkit_mode mode;
	} polkit;

	struct kh_relay_policy relay;
};

struct kh_policy_load_opts {
	/*
	 * The uid that must own the config and issuer PIN file.  Production
	 * callers leave this 0 (root); unit tests running unprivileged pass
	 * geteuid().  Files owned by anyone else are rejected.
	 */
	uid_t trusted_uid;
	/* Skip checks that named files exist (used only by the fuzzer). */
	bool skip_file_checks;
	/*
	 * Skip only the issuer PIN file check.  For unprivileged readers
	 * (`kubehsm sign`) that need a setting but never the issuer: they
	 * cannot reach a PIN file inside a root-only directory, and never
	 * use it.  The config file and other named files are still checked.
	 */
	bool skip_secret_file_checks;
};

/* Load and validate. Returns NULL and fills err ("file:line: ...") on failure. */
struct kh_policy *kh_policy_load(const char *path,
				 const struct kh_policy_load_opts *opts,
				 kh_error *err);

/* Same, from an in-memory buffer; `name` is used in messages.  File checks
 * on the config itself are skipped; named files are checked unless
 * opts->skip_file_checks. */
struct kh_policy *kh_policy_load_string(const char *text, const char *name,
					const struct kh_policy_load_opts *opts,
					kh_error *err);

void kh_policy_free(struct kh_policy *policy);

/* Issuer by id ("" or NULL = the first/default). NULL if none matches. */
const struct kh_issuer *kh_policy_issuer(const struct kh_policy *policy,
					 const char *id);

/* The forwarded-token socket of uid (pkcs11.forward.socket with %U
 * expanded).  Returns a new string, or NULL with err (also when no forward
 * is configured). */
char *kh_policy_forward_socket(const struct kh_policy *policy, uid_t uid, kh_error *err);

/* May `group` become a kube group (identity.allow_groups/deny_groups)? */
bool kh_policy_group_allowed(const struct kh_policy *policy, const char *group);

/* Print the effective policy (defaults filled in, no secrets) in libconfig syntax. */
int kh_policy_print(const struct kh_policy *policy, FILE *out);



/* The relay cluster serving issuer_id ("" = default), or NULL. */
const struct kh_relay_cluster *kh_policy_relay_cluster_for(const struct kh_policy *policy,
							   const char *issuer_id);

/* Whether the session key goes to kubehsm-relayd / stays in the record. */
bool kh_policy_delivers_to_relay(const struct kh_policy *policy);
bool kh_policy_delivers_to_exec(const struct kh_policy *policy);

#endif
