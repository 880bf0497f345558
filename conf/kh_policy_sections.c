/*
 * kh_policy_sections — the sections of the policy, from pkcs11 to polkit.
 *
 * Each loader fills its part of struct kh_policy with defaults for what is
 * absent, then checks what no getter can see alone: values that must agree
 * across keys (map and domains, signer and cache_pin, a long ttl) and the
 * files a section names.  The relay section has its own file.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>

#include "lib/kh_env.h"
#include "lib/kh_error.h"
#include "lib/kh_p11_uri.h"
#include "lib/kh_template.h"
#include "conf/kh_policy.h"
#include "conf/kh_policy_int.h"

#define KH_DEFAULT_USERNAME      "%u"
#define KH_DEFAULT_TTL           "8h"
#define KH_KEY_ID_HEX_MAX        128  /* 64 bytes of CKA_ID is plenty */

static const char *const kh_pkcs11_keys[] = { "module", "env", "forward", NULL };
static const char *const kh_forward_keys[] = { "module", "socket", NULL };
static const char *const kh_token_keys[] = { "uri", "label", "key_label", "key_id", NULL };
static const char *const kh_trust_keys[] = { "ca_file", "crl_file", "map", "domains", NULL };
static const char *const kh_identity_keys[] = {
	"username", "uid", "groups", "allow_groups", "deny_groups", NULL,
};
static const char *const kh_issuer_keys[] = {
	"id", "key", "module", "env", "cert_file", "pin_file", "key_type", NULL,
};
static const char *const kh_session_keys[] = {
	"ttl", "scope", "revoke_on_logout", "cache_pin", "allow_long_ttl", "deliver", NULL,
};
static const char *const kh_signer_keys[] = { "key", NULL };
static const char *const kh_polkit_keys[] = { "mode", NULL };

/*
 * An env group (pkcs11.env, issuer.env): NAME = "value" pairs set around
 * the module's C_Initialize (lib/kh_env.h).  Names are what modules read
 * (upper case, digits, '_'), never the dynamic loader's; values are
 * bounded and free of control characters.
 */
static int
kh_load_env(const struct kh_loader *ld, const config_setting_t *parent, const char *section,
	    struct kh_env *env)
{
	config_setting_t *g = parent != NULL ? config_setting_get_member(parent, "env") : NULL;
	const char *problem, *name, *value;
	unsigned int i, n;

	if (g == NULL)
		return 0;
	if (!config_setting_is_group(g))
		return kh_pol_fail_at(ld, g, "%s.env must be a group of strings: env = { NAME = "
				      "\"value\"; };", section);
	n = (unsigned int)config_setting_length(g);
	if (n > KH_ENV_MAX)
		return kh_pol_fail_at(ld, g, "%s.env has %u variables; at most %d", section, n,
				      KH_ENV_MAX);
	if (n == 0)
		return 0;
	env->names = calloc(n, sizeof(*env->names));
	env->values = calloc(n, sizeof(*env->values));
	if (env->names == NULL || env->values == NULL)
		return kh_pol_fail_oom(ld);
	for (i = 0; i < n; i++) {
		const config_setting_t *v = config_setting_get_elem(g, i);

		name = v != NULL ? config_setting_name(v) : NULL;
		if (name == NULL)
			return kh_pol_fail_at(ld, g, "%s.env: unreadable entry", section);
		if ((problem = kh_env_name_problem(name)) != NULL)
			return kh_pol_fail_at(ld, v, "%s.env: variable name '%s' %s", section, name,
					      problem);
		if (config_setting_type(v) != CONFIG_TYPE_STRING ||
		    (value = config_setting_get_string(v)) == NULL)
			return kh_pol_fail_at(ld, v, "%s.env.%s must be a string (\"...\")", section,
					      name);
		if ((problem = kh_env_value_problem(value)) != NULL)
			return kh_pol_fail_at(ld, v, "%s.env.%s %s", section, name, problem);
		env->names[i] = strdup(name);
		env->values[i] = strdup(value);
		if (env->names[i] == NULL || env->values[i] == NULL) {
			free(env->names[i]);
			free(env->values[i]);
			return kh_pol_fail_oom(ld);
		}
		env->n++;
	}
	return 0;
}

/*
 * pkcs11.forward: the user's own token, forwarded from their laptop with
 * p11-kit over ssh -R, for `kubehsm login`.  The socket is a template of
 * the uid, under the user's runtime directory; only kubehsm login's root
 * program (PAM service kubehsm, option `forwarded`) uses it.
 */
static int
kh_load_forward(const struct kh_loader *ld, const config_setting_t *pkcs11,
		struct kh_policy *p)
{
	config_setting_t *g = pkcs11 != NULL ? config_setting_get_member(pkcs11, "forward") : NULL;
	const config_setting_t *mod, *sock;
	const char *bad;

	if (g == NULL)
		return 0;
	if (!config_setting_is_group(g))
		return kh_pol_fail_at(ld, g, "pkcs11.forward must be a group: forward = { module "
				      "= \"...\"; socket = \"...\"; };");
	if (kh_pol_check_keys(ld, g, "pkcs11.forward", kh_forward_keys) != 0 ||
	    kh_pol_get_string(ld, g, "pkcs11.forward", "module", NULL,
			      KH_STR_NONEMPTY | KH_STR_ABSPATH, &p->pkcs11.forward_module, &mod) != 0 ||
	    kh_pol_get_string(ld, g, "pkcs11.forward", "socket", NULL,
			      KH_STR_NONEMPTY | KH_STR_ABSPATH, &p->pkcs11.forward_socket, &sock) != 0)
		return -1;
	bad = kh_template_check_escape(p->pkcs11.forward_socket, 'U');
	if (bad != NULL)
		return kh_pol_fail_at(ld, sock, "pkcs11.forward.socket: \"%s\": '%%%c' is not a "
				      "template escape; only %%U (the user's uid) and %%%% are",
				      p->pkcs11.forward_socket, bad[1] != '\0' ? bad[1] : ' ');
	if (!kh_template_uses(p->pkcs11.forward_socket, 'U'))
		return kh_pol_fail_at(ld, sock, "pkcs11.forward.socket must name each user's own "
				      "socket with %%U (the uid), e.g. "
				      "\"/run/user/%%U/p11-kit/pkcs11\"");
	return kh_pol_check_named_file(ld, mod, "pkcs11.forward.module", p->pkcs11.forward_module,
				       KH_FILE_PUBLIC);
}
int
kh_pol_load_pkcs11(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g;
	const config_setting_t *where;

	if (kh_pol_get_section(ld, root, "pkcs11", true, kh_pkcs11_keys, &g) != 0 ||
	    kh_pol_get_string(ld, g, "pkcs11", "module", NULL, KH_STR_NONEMPTY | KH_STR_ABSPATH,
			      &p->pkcs11.module, &where) != 0 ||
	    kh_pol_check_named_file(ld, where, "pkcs11.module", p->pkcs11.module, KH_FILE_PUBLIC) != 0 ||
	    kh_load_env(ld, g, "pkcs11", &p->pkcs11.env) != 0)
		return -1;
	return kh_load_forward(ld, g, p);
}

static bool
kh_is_hex(const char *s)
{
	for (; *s != '\0'; s++) {
		if (!isxdigit((unsigned char)*s))
			return false;
	}
	return true;
}

/* token.uri: a token URI the runtime parses the same way. */
static int
kh_check_token_uri(const struct kh_loader *ld, const config_setting_t *where, const char *uri)
{
	struct kh_p11_uri u;
	kh_error e = { 0 };

	if (uri[0] == '\0')
		return 0;
	if (kh_p11_uri_parse_token(uri, &u, &e) != 0)
		return kh_pol_fail_at(ld, where, "token.uri: %s", e.msg);
	kh_p11_uri_clear(&u);
	return 0;
}

int
kh_pol_load_token(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g;
	const config_setting_t *where, *uriw;
	size_t n;

	if (kh_pol_get_section(ld, root, "token", false, kh_token_keys, &g) != 0 ||
	    kh_pol_get_string(ld, g, "token", "uri", "", 0, &p->token.uri, &uriw) != 0 ||
	    kh_pol_get_string(ld, g, "token", "label", "", KH_STR_TEMPLATE, &p->token.label,
			      NULL) != 0 ||
	    kh_pol_get_string(ld, g, "token", "key_label", "", KH_STR_TEMPLATE,
			      &p->token.key_label, NULL) != 0 ||
	    kh_pol_get_string(ld, g, "token", "key_id", "", 0, &p->token.key_id, &where) != 0)
		return -1;
	n = strlen(p->token.key_id);
	if (!kh_is_hex(p->token.key_id) || n % 2 != 0 || n > KH_KEY_ID_HEX_MAX)
		return kh_pol_fail_at(ld, where, "token.key_id \"%s\" must be an even number of hex "
				      "digits (at most %d), e.g. \"01\" or \"a1b2\"",
				      p->token.key_id, KH_KEY_ID_HEX_MAX);
	return kh_check_token_uri(ld, uriw, p->token.uri);
}

/* A DNS domain name as written in certificates: letters, digits, '-' and
 * inner dots; lowered in place for exact, case-insensitive matching. */
static bool
kh_valid_domain(char *d)
{
	size_t n = strlen(d), i;

	if (n == 0 || n > 253 || d[0] == '.' || d[0] == '-' || d[n - 1] == '.' ||
	    strstr(d, "..") != NULL)
		return false;
	for (i = 0; i < n; i++) {
		if (!isalnum((unsigned char)d[i]) && d[i] != '.' && d[i] != '-')
			return false;
		d[i] = (char)tolower((unsigned char)d[i]);
	}
	return true;
}

int
kh_pol_load_trust(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g;
	const config_setting_t *ca, *crl, *doms;
	int map;
	size_t i;

	if (kh_pol_get_section(ld, root, "trust", true, kh_trust_keys, &g) != 0 ||
	    kh_pol_get_string(ld, g, "trust", "ca_file", NULL, KH_STR_NONEMPTY | KH_STR_ABSPATH,
			      &p->trust.ca_file, &ca) != 0 ||
	    kh_pol_get_string(ld, g, "trust", "crl_file", "", KH_STR_ABSPATH,
			      &p->trust.crl_file, &crl) != 0 ||
	    kh_pol_get_enum(ld, g, "trust", "map", kh_map_words, KH_MAP_CN, &map, NULL) != 0 ||
	    kh_pol_get_string_list(ld, g, "trust", "domains", NULL, KH_STR_NONEMPTY,
				   &p->trust.domains, &p->trust.ndomains, &doms) != 0)
		return -1;
	p->trust.map = (enum kh_map_rule)map;
	for (i = 0; i < p->trust.ndomains; i++)
		if (!kh_valid_domain(p->trust.domains[i]))
			return kh_pol_fail_at(ld, doms, "trust.domains: \"%s\" is not a domain name "
					      "(e.g. \"example.com\", no '@')", p->trust.domains[i]);
	/* email and upn keep only the part before the @: a CA that certifies
	 * more than one domain would make alice@partner.example local alice. */
	if ((map == KH_MAP_EMAIL || map == KH_MAP_UPN) && p->trust.ndomains == 0)
		return kh_pol_fail_at(ld, g, "trust.domains is required with map = \"%s\": the "
				      "user is the part before the @, so name the domain(s) whose "
				      "users are this host's, e.g. domains = [ \"example.com\" ]",
				      kh_map_rule_name(p->trust.map));
	if (map != KH_MAP_EMAIL && map != KH_MAP_UPN && p->trust.ndomains > 0)
		return kh_pol_fail_at(ld, doms, "trust.domains applies only to map = \"email\" or "
				      "\"upn\", not \"%s\"", kh_map_rule_name(p->trust.map));
	if (kh_pol_check_named_file(ld, ca, "trust.ca_file", p->trust.ca_file, KH_FILE_PUBLIC) != 0)
		return -1;
	return kh_pol_check_named_file(ld, crl, "trust.crl_file", p->trust.crl_file, KH_FILE_PUBLIC);
}

/* One identity.groups entry: "cert:O", "cert:OU", "unix:<glob>", "static:<name>". */
static int
kh_parse_group_rule(const struct kh_loader *ld, const config_setting_t *s,
		    const char *v, struct kh_group_rule *rule)
{
	const char *arg;

	if (strncmp(v, "cert:", 5) == 0) {
		arg = v + 5;
		if (strcmp(arg, "O") != 0 && strcmp(arg, "OU") != 0)
			return kh_pol_fail_at(ld, s, "identity.groups: \"%s\": the certificate "
					      "attribute must be O or OU", v);
		rule->source = KH_GROUP_CERT;
	} else if (strncmp(v, "unix:", 5) == 0) {
		arg = v + 5;
		rule->source = KH_GROUP_UNIX;
	} else if (strncmp(v, "static:", 7) == 0) {
		arg = v + 7;
		rule->source = KH_GROUP_STATIC;
	} else {
		return kh_pol_fail_at(ld, s, "identity.groups: \"%s\" must start with cert:, unix: "
				      "or static: (e.g. \"cert:O\", \"unix:k8s-*\", "
				      "\"static:devs\")", v);
	}
	if (arg[0] == '\0')
		return kh_pol_fail_at(ld, s, "identity.groups: \"%s\" has nothing after the ':'", v);
	if (kh_pol_has_control_char(arg))
		return kh_pol_fail_at(ld, s, "identity.groups: entry contains a control character");
	rule->arg = strdup(arg);
	if (rule->arg == NULL)
		return kh_pol_fail_oom(ld);
	return 0;
}

int
kh_pol_load_identity(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g, *list, *e;
	const char *v;
	int i, n;

	static const char *const allow_all[] = { "*", NULL };
	static const char *const deny_system[] = { "system:*", NULL };

	if (kh_pol_get_section(ld, root, "identity", false, kh_identity_keys, &g) != 0 ||
	    kh_pol_get_string(ld, g, "identity", "username", KH_DEFAULT_USERNAME,
			      KH_STR_NONEMPTY | KH_STR_TEMPLATE, &p->identity.username, NULL) != 0 ||
	    kh_pol_get_string(ld, g, "identity", "uid", "", KH_STR_UID_TEMPLATE,
			      &p->identity.uid, NULL) != 0 ||
	    kh_pol_get_string_list(ld, g, "identity", "allow_groups", allow_all, KH_STR_NONEMPTY,
				   &p->identity.allow_groups, &p->identity.nallow_groups, NULL) != 0 ||
	    kh_pol_get_string_list(ld, g, "identity", "deny_groups", deny_system, KH_STR_NONEMPTY,
				   &p->identity.deny_groups, &p->identity.ndeny_groups, NULL) != 0)
		return -1;
	list = g != NULL ? config_setting_get_member(g, "groups") : NULL;
	if (list == NULL)
		return 0;
	if (!config_setting_is_array(list) && !config_setting_is_list(list))
		return kh_pol_fail_at(ld, list, "identity.groups must be a list of strings, "
				      "e.g. [ \"cert:O\", \"unix:k8s-*\" ]");
	n = config_setting_length(list);
	if (n == 0)
		return 0;
	p->identity.groups = calloc((size_t)n, sizeof(*p->identity.groups));
	if (p->identity.groups == NULL)
		return kh_pol_fail_oom(ld);
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(list, (unsigned int)i);
		if (e == NULL || config_setting_type(e) != CONFIG_TYPE_STRING ||
		    (v = config_setting_get_string(e)) == NULL)
			return kh_pol_fail_at(ld, e != NULL ? e : list,
					      "identity.groups entries must be strings");
		if (kh_parse_group_rule(ld, e, v, &p->identity.groups[i]) != 0)
			return -1;
		p->identity.ngroups++;
	}
	return 0;
}

static int
kh_env_copy(const struct kh_loader *ld, const struct kh_env *from, struct kh_env *to)
{
	if (from->n == 0)
		return 0;
	to->names = calloc(from->n, sizeof(*to->names));
	to->values = calloc(from->n, sizeof(*to->values));
	if (to->names == NULL || to->values == NULL)
		return kh_pol_fail_oom(ld);
	for (; to->n < from->n; to->n++) {
		to->names[to->n] = strdup(from->names[to->n]);
		to->values[to->n] = strdup(from->values[to->n]);
		if (to->names[to->n] == NULL || to->values[to->n] == NULL) {
			free(to->names[to->n]);
			free(to->values[to->n]);
			return kh_pol_fail_oom(ld);
		}
	}
	return 0;
}

/*
 * issuer.env belongs to issuer.module: an issuer on pkcs11.module takes
 * pkcs11.env (the same module needs the same settings), and an env of its
 * own without a module of its own would be two settings for one module.
 */
static int
kh_load_issuer_env(const struct kh_loader *ld, const config_setting_t *g,
		   const config_setting_t *modw, const char *default_module,
		   const struct kh_env *default_env, struct kh_issuer *is)
{
	const config_setting_t *envw = config_setting_get_member(g, "env");

	if (envw == NULL && strcmp(is->module, default_module) == 0)
		return kh_env_copy(ld, default_env, &is->env);
	if (modw == g) {
		if (envw != NULL)
			return kh_pol_fail_at(ld, envw, "issuer.env applies to issuer.module, which "
					      "is not set: the issuer uses pkcs11.module with "
					      "pkcs11.env");
		return kh_env_copy(ld, default_env, &is->env);
	}
	return kh_load_env(ld, g, "issuer", &is->env);
}

static int
kh_load_issuer(const struct kh_loader *ld, const config_setting_t *g, bool in_list,
	       const char *default_module, const struct kh_env *default_env,
	       struct kh_issuer *is)
{
	const config_setting_t *where, *idw, *certw, *pinw, *modw;
	int kt;

	if (kh_pol_check_keys(ld, g, "issuer", kh_issuer_keys) != 0 ||
	    kh_pol_get_string(ld, g, "issuer", "id", in_list ? NULL : "", 0, &is->id, &idw) != 0)
		return -1;
	if ((in_list || is->id[0] != '\0') && !kh_issuer_id_valid(is->id, strlen(is->id)))
		return kh_pol_fail_at(ld, idw, "issuer.id \"%s\" must be 1 to %d characters from "
				      "A-Z a-z 0-9 . _ -", is->id, KH_ISSUER_ID_MAX);
	if (kh_pol_get_string(ld, g, "issuer", "key", NULL, KH_STR_NONEMPTY, &is->key, &where) != 0)
		return -1;
	if (strncmp(is->key, "pkcs11:", 7) != 0)
		return kh_pol_fail_at(ld, where, "issuer.key must be a PKCS#11 URI starting with "
				      "\"pkcs11:\", e.g. \"pkcs11:token=kubehsm-host;object=issuer\"");
	if (kh_pol_get_string(ld, g, "issuer", "module", default_module,
			      KH_STR_NONEMPTY | KH_STR_ABSPATH, &is->module, &modw) != 0 ||
	    kh_load_issuer_env(ld, g, modw, default_module, default_env, is) != 0 ||
	    kh_pol_get_string(ld, g, "issuer", "cert_file", NULL, KH_STR_NONEMPTY | KH_STR_ABSPATH,
			      &is->cert_file, &certw) != 0 ||
	    kh_pol_get_string(ld, g, "issuer", "pin_file", NULL, KH_STR_NONEMPTY | KH_STR_ABSPATH,
			      &is->pin_file, &pinw) != 0 ||
	    kh_pol_get_enum(ld, g, "issuer", "key_type", kh_key_type_words, KH_KEY_EC_P256,
			    &kt, NULL) != 0)
		return -1;
	is->key_type = (enum kh_key_type)kt;
	/* The default module was already checked as pkcs11.module. */
	if ((modw != g &&
	     kh_pol_check_named_file(ld, modw, "issuer.module", is->module, KH_FILE_PUBLIC) != 0) ||
	    kh_pol_check_named_file(ld, certw, "issuer.cert_file", is->cert_file, KH_FILE_PUBLIC) != 0 ||
	    kh_pol_check_named_file(ld, pinw, "issuer.pin_file", is->pin_file, KH_FILE_SECRET) != 0)
		return -1;
	return 0;
}

int
kh_pol_load_issuers(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *s = config_setting_get_member(root, "issuer"), *e;
	bool in_list;
	size_t i, j;
	int n;

	if (s == NULL)
		return kh_pol_fail_at(ld, NULL, "missing required section 'issuer' (issuer = { ... }; "
				      "or issuer = ( { id = ...; ... }, ... );)");
	in_list = config_setting_is_list(s);
	if (!in_list && !config_setting_is_group(s))
		return kh_pol_fail_at(ld, s, "issuer must be a group { ... } or a list of groups "
				      "( { ... }, { ... } )");
	n = in_list ? config_setting_length(s) : 1;
	if (n == 0)
		return kh_pol_fail_at(ld, s, "issuer list is empty; name at least one issuer");
	p->issuers = calloc((size_t)n, sizeof(*p->issuers));
	if (p->issuers == NULL)
		return kh_pol_fail_oom(ld);
	p->nissuers = (size_t)n;
	for (i = 0; i < p->nissuers; i++) {
		e = in_list ? config_setting_get_elem(s, (unsigned int)i) : s;
		if (e == NULL || !config_setting_is_group(e))
			return kh_pol_fail_at(ld, e != NULL ? e : s,
					      "issuer list entries must be groups "
					      "{ id = \"...\"; ... }");
		if (kh_load_issuer(ld, e, in_list, p->pkcs11.module, &p->pkcs11.env,
				   &p->issuers[i]) != 0)
			return -1;
		for (j = 0; j < i; j++) {
			if (strcmp(p->issuers[j].id, p->issuers[i].id) == 0)
				return kh_pol_fail_at(ld, config_setting_get_member(e, "id"),
						      "issuer.id \"%s\" is used twice; ids must "
						      "be unique",
						      p->issuers[i].id);
		}
	}
	return 0;
}

int
kh_pol_load_session(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g;
	int scope, deliver;

	if (kh_pol_get_section(ld, root, "session", false, kh_session_keys, &g) != 0 ||
	    kh_pol_get_duration(ld, g, "session", "ttl", KH_DEFAULT_TTL, KH_TTL_MIN, KH_TTL_MAX,
				&p->session.ttl) != 0 ||
	    kh_pol_get_enum(ld, g, "session", "scope", kh_scope_words, KH_SCOPE_USER,
			    &scope, NULL) != 0 ||
	    kh_pol_get_bool(ld, g, "session", "revoke_on_logout", true,
			    &p->session.revoke_on_logout) != 0 ||
	    kh_pol_get_bool(ld, g, "session", "cache_pin", false, &p->session.cache_pin) != 0 ||
	    kh_pol_get_bool(ld, g, "session", "allow_long_ttl", false,
			    &p->session.allow_long_ttl) != 0 ||
	    kh_pol_get_enum(ld, g, "session", "deliver", kh_deliver_words, KH_DELIVER_EXEC,
			    &deliver, NULL) != 0)
		return -1;
	p->session.scope = (enum kh_scope)scope;
	p->session.deliver = (enum kh_deliver)deliver;
	/* Handed to the user (exec, both), the session key stays valid after a
	 * revocation until the certificate expires, so a long one is a choice;
	 * held by the relay alone, revocation ends it. */
	if (p->session.ttl > KH_TTL_LONG && !p->session.allow_long_ttl &&
	    p->session.deliver != KH_DELIVER_RELAY)
		return kh_pol_fail_at(ld, g != NULL && config_setting_get_member(g, "ttl") != NULL
					  ? config_setting_get_member(g, "ttl") : g,
				      "session.ttl is longer than 24h: with deliver = \"%s\" a revoked "
				      "user keeps a valid session certificate until it expires; set "
				      "session.allow_long_ttl = true to accept that, or shorten the ttl",
				      kh_deliver_name(p->session.deliver));
	return 0;
}

int
kh_pol_load_signer(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g;
	const config_setting_t *where;
	int key;

	if (kh_pol_get_section(ld, root, "signer", false, kh_signer_keys, &g) != 0 ||
	    kh_pol_get_enum(ld, g, "signer", "key", kh_signer_words, KH_SIGNER_SESSION,
			    &key, &where) != 0)
		return -1;
	p->signer.key = (enum kh_signer_key)key;
	/* Signing on the user's token after login needs the PIN kept in the cache. */
	if (p->signer.key == KH_SIGNER_TOKEN && !p->session.cache_pin)
		return kh_pol_fail_at(ld, where, "signer.key = \"token\" needs session.cache_pin = true "
				      "(the token must be unlocked after login)");
	return 0;
}

int
kh_pol_load_polkit(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	config_setting_t *g;
	int mode;

	if (kh_pol_get_section(ld, root, "polkit", false, kh_polkit_keys, &g) != 0 ||
	    kh_pol_get_enum(ld, g, "polkit", "mode", kh_polkit_words, KH_POLKIT_IF_AVAILABLE,
			    &mode, NULL) != 0)
		return -1;
	p->polkit.mode = (enum kh_polkit_mode)mode;
	return 0;
}
