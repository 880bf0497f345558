/*
 * kh_policy — load /etc/kubehsm/kubehsm.conf into one validated structure.
 *
 * The policy decides who may mint credentials and with which keys, so the
 * loader is deliberately unforgiving: every key must be known, every value
 * well-typed and in range, and the files it trusts must be owned and
 * protected as the man page says.  The first problem found is reported as
 * one "file:line: what is wrong" line and nothing partial is returned.
 *
 * This file drives a load — open and screen the text, hand it to libconfig,
 * fill the sections in order — and owns the result: freeing it and the
 * small questions callers ask of it.  The other jobs have a file each
 * (conf/kh_policy_int.h lists them).
 */
#include "config.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libconfig.h>

#include "lib/kh_error.h"
#include "lib/kh_template.h"
#include "conf/kh_policy.h"
#include "conf/kh_policy_int.h"

static const char *const kh_root_keys[] = {
	"version", "pkcs11", "token", "trust", "identity", "issuer", "session",
	"signer", "polkit", "relay", NULL,
};

static int
kh_load_version(const struct kh_loader *ld, const config_setting_t *root, struct kh_policy *p)
{
	const config_setting_t *s = config_setting_get_member(root, "version");
	long long v;

	if (s == NULL)
		return kh_pol_fail_at(ld, NULL, "missing 'version = %d;' at the top",
				      KH_POLICY_VERSION);
	if (config_setting_type(s) != CONFIG_TYPE_INT && config_setting_type(s) != CONFIG_TYPE_INT64)
		return kh_pol_fail_at(ld, s, "version must be an integer (version = %d;)",
				      KH_POLICY_VERSION);
	v = config_setting_get_int64(s);
	if (v != KH_POLICY_VERSION)
		return kh_pol_fail_at(ld, s, "version %lld is not supported; this kubehsm reads "
				      "version %d", v, KH_POLICY_VERSION);
	p->version = (int)v;
	return 0;
}

/* Parse text (already read and screened) into a new policy. */
static struct kh_policy *
kh_policy_parse(const struct kh_loader *ld, const char *text)
{
	struct kh_policy *p;
	config_setting_t *root;
	config_t cfg;
	int rc = -1;

	if (kh_pol_check_text(ld, text) != 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return kh_pol_fail_oom(ld), NULL;
	config_init(&cfg);
	if (config_read_string(&cfg, text) != CONFIG_TRUE) {
		kh_fail(ld->err, KH_ERR_CONFIG, "%s:%d: %s", ld->name, config_error_line(&cfg),
			config_error_text(&cfg) != NULL ? config_error_text(&cfg) : "parse error");
		goto out;
	}
	root = config_root_setting(&cfg);
	p->path = strdup(ld->name);
	if (p->path == NULL) {
		kh_pol_fail_oom(ld);
		goto out;
	}
	/* Sections in file order of the man page; session before signer (cache_pin). */
	if (kh_pol_check_keys(ld, root, NULL, kh_root_keys) != 0 ||
	    kh_load_version(ld, root, p) != 0 ||
	    kh_pol_load_pkcs11(ld, root, p) != 0 ||
	    kh_pol_load_token(ld, root, p) != 0 ||
	    kh_pol_load_trust(ld, root, p) != 0 ||
	    kh_pol_load_identity(ld, root, p) != 0 ||
	    kh_pol_load_issuers(ld, root, p) != 0 ||
	    kh_pol_load_session(ld, root, p) != 0 ||
	    kh_pol_load_signer(ld, root, p) != 0 ||
	    kh_pol_load_polkit(ld, root, p) != 0 ||
	    kh_pol_load_relay(ld, root, p) != 0)
		goto out;
	rc = 0;
out:
	config_destroy(&cfg);
	if (rc != 0) {
		kh_policy_free(p);
		return NULL;
	}
	return p;
}

static const struct kh_policy_load_opts kh_default_opts = { .trusted_uid = 0 };

struct kh_policy *
kh_policy_load_string(const char *text, const char *name,
		      const struct kh_policy_load_opts *opts, kh_error *err)
{
	kh_error local;
	struct kh_loader ld = {
		.name = (name != NULL && name[0] != '\0') ? name : "(string)",
		.opts = opts != NULL ? opts : &kh_default_opts,
		.err = err != NULL ? err : &local,
	};

	kh_error_clear(ld.err);
	if (text == NULL)
		return kh_fail(ld.err, KH_ERR_INPUT, "%s: no policy text", ld.name), NULL;
	return kh_policy_parse(&ld, text);
}

struct kh_policy *
kh_policy_load(const char *path, const struct kh_policy_load_opts *opts, kh_error *err)
{
	kh_error local;
	struct kh_loader ld = {
		.name = path,
		.opts = opts != NULL ? opts : &kh_default_opts,
		.err = err != NULL ? err : &local,
	};
	struct kh_policy *p;
	char *text;
	int fd;

	kh_error_clear(ld.err);
	if (path == NULL || path[0] == '\0')
		return kh_fail(ld.err, KH_ERR_INPUT, "no policy file named"), NULL;
	fd = kh_pol_open_file(&ld, path);
	if (fd < 0)
		return NULL;
	text = kh_pol_read_file(&ld, fd);
	(void)close(fd);
	if (text == NULL)
		return NULL;
	p = kh_policy_parse(&ld, text);
	free(text);
	return p;
}

void
kh_policy_free(struct kh_policy *p)
{
	size_t i;

	if (p == NULL)
		return;
	free(p->path);
	free(p->pkcs11.module);
	kh_env_clear(&p->pkcs11.env);
	free(p->pkcs11.forward_module);
	free(p->pkcs11.forward_socket);
	free(p->token.uri);
	free(p->token.label);
	free(p->token.key_label);
	free(p->token.key_id);
	free(p->trust.ca_file);
	free(p->trust.crl_file);
	kh_pol_strv_free(p->trust.domains, p->trust.ndomains);
	free(p->identity.username);
	free(p->identity.uid);
	kh_pol_strv_free(p->identity.allow_groups, p->identity.nallow_groups);
	kh_pol_strv_free(p->identity.deny_groups, p->identity.ndeny_groups);
	for (i = 0; i < p->identity.ngroups; i++)
		free(p->identity.groups[i].arg);
	free(p->identity.groups);
	for (i = 0; p->issuers != NULL && i < p->nissuers; i++) {
		free(p->issuers[i].id);
		free(p->issuers[i].key);
		free(p->issuers[i].module);
		kh_env_clear(&p->issuers[i].env);
		free(p->issuers[i].cert_file);
		free(p->issuers[i].pin_file);
	}
	free(p->issuers);
	kh_pol_relay_free(&p->relay);
	free(p);
}

bool
kh_policy_group_allowed(const struct kh_policy *p, const char *group)
{
	size_t i;
	bool allowed = false;

	for (i = 0; i < p->identity.nallow_groups && !allowed; i++)
		allowed = fnmatch(p->identity.allow_groups[i], group, 0) == 0;
	for (i = 0; i < p->identity.ndeny_groups && allowed; i++)
		allowed = fnmatch(p->identity.deny_groups[i], group, 0) != 0;
	return allowed;
}

const struct kh_issuer *
kh_policy_issuer(const struct kh_policy *p, const char *id)
{
	size_t i;

	if (p == NULL || p->nissuers == 0)
		return NULL;
	if (id == NULL || id[0] == '\0')
		return &p->issuers[0];
	for (i = 0; i < p->nissuers; i++) {
		if (strcmp(p->issuers[i].id, id) == 0)
			return &p->issuers[i];
	}
	return NULL;
}

/* pkcs11.forward.socket was checked at load: only %U and %% escapes. */
char *
kh_policy_forward_socket(const struct kh_policy *p, uid_t uid, kh_error *err)
{
	char uidbuf[16];

	if (p->pkcs11.forward_socket == NULL) {
		kh_fail(err, KH_ERR_CONFIG, "the policy names no forwarded token "
			"(pkcs11.forward)");
		return NULL;
	}
	(void)snprintf(uidbuf, sizeof(uidbuf), "%u", (unsigned)uid);
	return kh_template_expand_escape(p->pkcs11.forward_socket, 'U', uidbuf, err);
}
