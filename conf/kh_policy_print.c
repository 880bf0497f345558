/*
 * kh_policy_print — the effective policy, as `kubehsm config check` shows it.
 *
 * Printed in libconfig syntax with every default filled in, so what is
 * printed loads again and prints the same; the issuer PIN is named, never
 * read.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/kh_policy.h"
#include "lib/kh_duration.h"
#include "lib/kh_template.h"
#include "lib/kh_words.h"

/* A libconfig string literal; control characters never load, so \ and " suffice. */
static int
kh_print_quoted(FILE *out, const char *v)
{
	if (fputc('"', out) == EOF)
		return -1;
	for (; *v != '\0'; v++) {
		if ((*v == '"' || *v == '\\') && fputc('\\', out) == EOF)
			return -1;
		if (fputc(*v, out) == EOF)
			return -1;
	}
	return fputc('"', out) == EOF ? -1 : 0;
}

static int
kh_print_str(FILE *out, const char *indent, const char *key, const char *v)
{
	if (fprintf(out, "%s%s = ", indent, key) < 0 || kh_print_quoted(out, v) != 0)
		return -1;
	return fputs(";\n", out) == EOF ? -1 : 0;
}

/*
 * identity.uid and, as a comment, what it becomes for an example login of
 * "alice" (uid 1000) on this host: the value the API server's audit shows.
 */
static int
kh_print_uid(FILE *out, const struct kh_policy *p)
{
	char host[256], *kube = NULL, *ex;
	struct kh_template_var vars[5];
	kh_error err = { 0 };
	int rc;

	if (kh_print_str(out, "  ", "uid", p->identity.uid) != 0)
		return -1;
	if (p->identity.uid[0] == '\0')
		return fputs("  # no UID attribute in session certificates\n", out) == EOF ? -1 : 0;
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	kube = kh_template_expand(p->identity.username, "alice", &err);
	vars[0] = (struct kh_template_var){ 'h', host };
	vars[1] = (struct kh_template_var){ 'u', "alice" };
	vars[2] = (struct kh_template_var){ 'U', "1000" };
	vars[3] = (struct kh_template_var){ 'k', kube != NULL ? kube : "alice" };
	vars[4] = (struct kh_template_var){ 's', "3f2a9c0e5b7d41e8a06c9d2f1b4e7a35" };
	ex = kh_template_expand_vars(p->identity.uid, vars, 5, &err);
	if (ex != NULL && strlen(ex) > KH_KUBE_UID_MAX)
		rc = fprintf(out, "  # too long: over %d bytes for alice here; logins would "
			     "fail\n", KH_KUBE_UID_MAX) < 0 ? -1 : 0;
	else if (ex != NULL)
		rc = fputs("  # e.g. for alice (uid 1000) here: ", out) == EOF ||
		     kh_print_quoted(out, ex) != 0 || fputs("\n", out) == EOF ? -1 : 0;
	else
		rc = fprintf(out, "  # cannot expand: %s\n", err.msg) < 0 ? -1 : 0;
	free(ex);
	free(kube);
	return rc;
}

/* `key = [ "a", "b" ];` on one line. */
static int
kh_print_list(FILE *out, const char *indent, const char *key, char *const *v, size_t n)
{
	size_t i;

	if (fprintf(out, "%s%s = [", indent, key) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (fputs(i == 0 ? " " : ", ", out) == EOF || kh_print_quoted(out, v[i]) != 0)
			return -1;
	}
	return fputs(" ];\n", out) == EOF ? -1 : 0;
}

static int
kh_print_group_rule(FILE *out, const struct kh_group_rule *r, bool last)
{
	static const char *const prefix[] = {
		[KH_GROUP_CERT] = "cert:", [KH_GROUP_UNIX] = "unix:", [KH_GROUP_STATIC] = "static:",
	};
	const char *v;

	if (fprintf(out, "    \"%s", prefix[r->source]) < 0)
		return -1;
	for (v = r->arg; *v != '\0'; v++) {
		if ((*v == '"' || *v == '\\') && fputc('\\', out) == EOF)
			return -1;
		if (fputc(*v, out) == EOF)
			return -1;
	}
	return fputs(last ? "\"\n" : "\",\n", out) == EOF ? -1 : 0;
}

/* `env = { NAME = "value"; ... };` (pkcs11.env, issuer.env), nothing when empty. */
static int
kh_print_env(FILE *out, const char *indent, const struct kh_env *env)
{
	size_t i;

	if (env->n == 0)
		return 0;
	if (fprintf(out, "%senv = {\n", indent) < 0)
		return -1;
	for (i = 0; i < env->n; i++) {
		if (fprintf(out, "%s  ", indent) < 0 ||
		    kh_print_str(out, "", env->names[i], env->values[i]) != 0)
			return -1;
	}
	return fprintf(out, "%s};\n", indent) < 0 ? -1 : 0;
}

static int
kh_print_issuer(FILE *out, const struct kh_issuer *is, const char *indent)
{
	if (kh_print_str(out, indent, "id", is->id) != 0 ||
	    kh_print_str(out, indent, "key", is->key) != 0 ||
	    kh_print_str(out, indent, "module", is->module) != 0 ||
	    kh_print_env(out, indent, &is->env) != 0 ||
	    kh_print_str(out, indent, "cert_file", is->cert_file) != 0 ||
	    fprintf(out, "%s# the PIN itself is never printed\n", indent) < 0 ||
	    kh_print_str(out, indent, "pin_file", is->pin_file) != 0 ||
	    kh_print_str(out, indent, "key_type", kh_key_type_name(is->key_type)) != 0)
		return -1;
	return 0;
}

static int
kh_print_issuers(FILE *out, const struct kh_policy *p)
{
	size_t i;

	if (p->nissuers == 1) {
		if (fputs("issuer = {\n", out) == EOF ||
		    kh_print_issuer(out, &p->issuers[0], "  ") != 0 ||
		    fputs("};\n", out) == EOF)
			return -1;
		return 0;
	}
	if (fputs("issuer = (\n", out) == EOF)
		return -1;
	for (i = 0; i < p->nissuers; i++) {
		if (fputs("  {\n", out) == EOF ||
		    kh_print_issuer(out, &p->issuers[i], "    ") != 0 ||
		    fputs(i + 1 < p->nissuers ? "  },\n" : "  }\n", out) == EOF)
			return -1;
	}
	return fputs(");\n", out) == EOF ? -1 : 0;
}

/* The relay section (its loader is in kh_policy_relay.c). */
static int
kh_print_relay(FILE *out, const struct kh_policy *p)
{
	const struct kh_relay_policy *r = &p->relay;
	char hs[32], idle[32], upidle[32];
	size_t i;

	if (!r->configured)
		return fputs("# relay: not configured (kubehsm-relayd does not run)\n", out) == EOF ?
			-1 : 0;
	if (kh_duration_format(r->handshake_timeout, hs, sizeof(hs)) != 0 ||
	    kh_duration_format(r->idle_timeout, idle, sizeof(idle)) != 0 ||
	    kh_duration_format(r->upstream_idle_timeout, upidle, sizeof(upidle)) != 0)
		return -1;
	if (fputs("relay = {\n", out) == EOF ||
	    kh_print_str(out, "  ", "run_as", r->run_as) != 0 ||
	    kh_print_str(out, "  ", "rundir", r->rundir) != 0 ||
	    fprintf(out, "  handshake_timeout = \"%s\";\n  idle_timeout = \"%s\";\n"
		    "  max_sessions = %ld;\n  max_connections = %ld;\n"
		    "  max_connections_per_user = %ld;\n  upstream_idle_timeout = \"%s\";\n",
		    hs, idle, r->max_sessions, r->max_connections, r->max_connections_per_user,
		    upidle) < 0 ||
	    fputs("  audit = {\n", out) == EOF ||
	    kh_print_str(out, "    ", "file", r->audit_file) != 0 ||
	    fprintf(out, "    syslog = %s;\n  };\n  clusters = (\n",
		    r->audit_syslog ? "true" : "false") < 0)
		return -1;
	for (i = 0; i < r->nclusters; i++) {
		const struct kh_relay_cluster *c = &r->clusters[i];

		if (fputs("    {\n", out) == EOF ||
		    kh_print_str(out, "      ", "name", c->name) != 0 ||
		    fprintf(out, "      listen = %d;  # 127.0.0.1 and [::1]\n", c->listen) < 0 ||
		    kh_print_str(out, "      ", "server", c->server) != 0 ||
		    kh_print_str(out, "      ", "ca_file", c->ca_file) != 0 ||
		    kh_print_str(out, "      ", "server_name", c->server_name) != 0 ||
		    kh_print_str(out, "      ", "issuer", c->issuer) != 0 ||
		    fputs(i + 1 < r->nclusters ? "    },\n" : "    }\n", out) == EOF)
			return -1;
	}
	return fputs("  );\n};\n", out) == EOF ? -1 : 0;
}

int
kh_policy_print(const struct kh_policy *p, FILE *out)
{
	char ttl[32];
	size_t i;

	if (p == NULL || out == NULL || kh_duration_format(p->session.ttl, ttl, sizeof(ttl)) != 0)
		return -1;
	if (fprintf(out, "# Effective kubehsm policy from %s (defaults filled in).\n"
		    "version = %d;\n", p->path != NULL ? p->path : "(unknown)", p->version) < 0 ||
	    fputs("pkcs11 = {\n", out) == EOF ||
	    kh_print_str(out, "  ", "module", p->pkcs11.module) != 0 ||
	    kh_print_env(out, "  ", &p->pkcs11.env) != 0 ||
	    (p->pkcs11.forward_module != NULL &&
	     (fputs("  forward = {\n", out) == EOF ||
	      kh_print_str(out, "    ", "module", p->pkcs11.forward_module) != 0 ||
	      kh_print_str(out, "    ", "socket", p->pkcs11.forward_socket) != 0 ||
	      fputs("  };\n", out) == EOF)) ||
	    fputs("};\ntoken = {\n  # the token is the one whose certificate maps to the user;\n"
		  "  # these narrow which tokens and keys are looked at (\"\": any)\n", out) == EOF ||
	    kh_print_str(out, "  ", "uri", p->token.uri) != 0 ||
	    kh_print_str(out, "  ", "label", p->token.label) != 0 ||
	    kh_print_str(out, "  ", "key_label", p->token.key_label) != 0 ||
	    kh_print_str(out, "  ", "key_id", p->token.key_id) != 0 ||
	    fputs("};\ntrust = {\n", out) == EOF ||
	    kh_print_str(out, "  ", "ca_file", p->trust.ca_file) != 0 ||
	    kh_print_str(out, "  ", "crl_file", p->trust.crl_file) != 0 ||
	    kh_print_str(out, "  ", "map", kh_map_rule_name(p->trust.map)) != 0 ||
	    (p->trust.ndomains > 0 &&
	     kh_print_list(out, "  ", "domains", p->trust.domains, p->trust.ndomains) != 0) ||
	    fputs("};\nidentity = {\n", out) == EOF ||
	    kh_print_str(out, "  ", "username", p->identity.username) != 0 ||
	    kh_print_uid(out, p) != 0 ||
	    fputs(p->identity.ngroups == 0 ? "  groups = [ ];\n" : "  groups = [\n", out) == EOF)
		return -1;
	for (i = 0; i < p->identity.ngroups; i++) {
		if (kh_print_group_rule(out, &p->identity.groups[i], i + 1 == p->identity.ngroups) != 0)
			return -1;
	}
	if ((p->identity.ngroups > 0 && fputs("  ];\n", out) == EOF) ||
	    fputs("  # kube groups: minted only if allowed and not denied, whatever the source\n",
		  out) == EOF ||
	    kh_print_list(out, "  ", "allow_groups", p->identity.allow_groups,
			  p->identity.nallow_groups) != 0 ||
	    kh_print_list(out, "  ", "deny_groups", p->identity.deny_groups,
			  p->identity.ndeny_groups) != 0 ||
	    fputs("};\n", out) == EOF ||
	    kh_print_issuers(out, p) != 0 ||
	    fputs("session = {\n", out) == EOF ||
	    fprintf(out, "  ttl = \"%s\";  # %ld seconds\n", ttl, p->session.ttl) < 0 ||
	    kh_print_str(out, "  ", "scope", kh_scope_name(p->session.scope)) != 0 ||
	    fprintf(out, "  revoke_on_logout = %s;\n  cache_pin = %s;\n  allow_long_ttl = %s;\n",
		    p->session.revoke_on_logout ? "true" : "false",
		    p->session.cache_pin ? "true" : "false",
		    p->session.allow_long_ttl ? "true" : "false") < 0 ||
	    kh_print_str(out, "  ", "deliver", kh_deliver_name(p->session.deliver)) != 0 ||
	    fputs("};\n", out) == EOF ||
	    fputs("signer = {\n", out) == EOF ||
	    kh_print_str(out, "  ", "key", kh_signer_key_name(p->signer.key)) != 0 ||
	    fputs("};\npolkit = {\n", out) == EOF ||
	    kh_print_str(out, "  ", "mode", kh_polkit_mode_name(p->polkit.mode)) != 0 ||
	    fputs("};\n", out) == EOF ||
	    kh_print_relay(out, p) != 0)
		return -1;
	return fflush(out) == EOF ? -1 : 0;
}
