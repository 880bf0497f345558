/*
 * kubehsm token [--user USER] [--config FILE] [--json] — what an admin or a
 * user runs when a card "does not work": the slots and tokens the policy's
 * module shows (with pkcs11.env, narrowed by token.uri), their PIN state,
 * every certificate with whose it is and why, the key that goes with it,
 * and which token and certificate kubehsm would use for USER — or exactly
 * why none, or why it will not guess.  pam_kubehsm's own selection
 * (lib/kh_token) decides, so what this says is what a login does.
 *
 * It never asks for a PIN and never tries one: nothing here logs in.
 *
 * Also here: the notes `kubehsm config check` prints about the tokens
 * (keys that want a PIN per signature) and the warning both print when
 * OpenSC would leave a card verified after logout.
 */
#include "config.h"

#include <errno.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/asn1.h>
#include <openssl/x509.h>

#include "conf/kh_policy.h"
#include "helper/kh_cli.h"
#include "lib/kh_opensc_conf.h"
#include "lib/kh_pkcs11.h"
#include "lib/kh_template.h"
#include "lib/kh_token.h"
#include "lib/kh_x509.h"

#define KH_OPENSC_MANUFACTURER "OpenSC"

static void
kh_token_usage(FILE *out)
{
	fprintf(out,
		"Usage: kubehsm token [--user USER] [--config FILE] [--json]\n\n"
		"Show what the policy's PKCS#11 module sees (pkcs11.module with pkcs11.env,\n"
		"narrowed by token.uri): slots, tokens, PIN state, and every certificate\n"
		"with its subject, validity, whether it chains to trust.ca_file, which user\n"
		"it maps to (trust.map) and the key that goes with it; then which token\n"
		"and certificate kubehsm would use for USER, or why none.  Never asks for\n"
		"a PIN and never tries one.\n\n"
		"  --user USER     whose token to look for (default: you)\n"
		"  --config FILE   policy file (default $KUBEHSM_CONFIG, then %s)\n"
		"  --json          one JSON object instead of text\n"
		"  -h, --help      show this help\n\n"
		"Exit status: 0 kubehsm would use a token for USER, 1 it would not (the\n"
		"reason is printed) or the module cannot be read, 2 usage error.\n",
		KH_DEFAULT_CONFIG);
}

/* Everything one look at the tokens holds. */
struct view {
	const struct kh_policy *policy;
	const char *user;
	char *label, *key_label;        /* templates expanded for user */
	unsigned char *key_id;
	size_t key_id_len;
	struct kh_p11_uri uri;
	struct kh_p11 *p11;
	struct kh_token_choice choice;
	int rc;                          /* kh_token_choose's */
	kh_error why;                    /* its reason when none was chosen */
};

static void
view_clear(struct view *v)
{
	kh_token_choice_free(&v->choice);
	kh_p11_close(v->p11);
	kh_p11_uri_clear(&v->uri);
	free(v->label);
	free(v->key_label);
	free(v->key_id);
	memset(v, 0, sizeof(*v));
}

/* The selection rules the PAM module would use for v->user. */
static int
view_rules(struct view *v, struct kh_token_rules *r, kh_error *err)
{
	const struct kh_policy *p = v->policy;

	if ((v->label = kh_template_expand(p->token.label, v->user, err)) == NULL ||
	    (v->key_label = kh_template_expand(p->token.key_label, v->user, err)) == NULL ||
	    (p->token.key_id[0] != '\0' &&
	     kh_p11_hex_decode(p->token.key_id, &v->key_id, &v->key_id_len, err) != 0) ||
	    (p->token.uri[0] != '\0' && kh_p11_uri_parse_token(p->token.uri, &v->uri, err) != 0))
		return -1;
	*r = (struct kh_token_rules){
		.uri = &v->uri, .label = v->label, .key_label = v->key_label,
		.key_id = v->key_id, .key_id_len = v->key_id_len,
		.ca_file = p->trust.ca_file, .crl_file = p->trust.crl_file, .map = p->trust.map,
		.domains = (const char *const *)p->trust.domains, .ndomains = p->trust.ndomains,
	};
	return 0;
}

/* Load the module and look for user's token.  -1 only when the module or
 * the trust CA cannot be read at all; no token is a verdict, not a failure. */
static int
view_open(const struct kh_policy *policy, const char *user, struct view *v, kh_error *err)
{
	struct kh_token_rules r;

	memset(v, 0, sizeof(*v));
	v->policy = policy;
	v->user = user;
	if (view_rules(v, &r, err) != 0)
		return -1;
	v->p11 = kh_p11_open(policy->pkcs11.module, &policy->pkcs11.env, err);
	if (v->p11 == NULL)
		return -1;
	v->rc = kh_token_choose(v->p11, &r, user, &v->choice, &v->why);
	if (v->rc != 0 && v->choice.tokens == NULL) {
		*err = v->why;
		return -1;
	}
	if (v->rc != 0 && (v->why.code == KH_ERR_CONFIG || v->why.code == KH_ERR_INTERNAL)) {
		*err = v->why;
		return -1;
	}
	return 0;
}

/* ---- the OpenSC warning -------------------------------------------------- */

/* The opensc.conf OpenSC reads under this policy. */
static const char *
opensc_conf_path(const struct kh_policy *p)
{
	for (size_t i = 0; i < p->pkcs11.env.n; i++)
		if (strcmp(p->pkcs11.env.names[i], "OPENSC_CONF") == 0)
			return p->pkcs11.env.values[i];
	return KH_OPENSC_CONF_DEFAULT;
}

/*
 * A warning (a static buffer) when the module is OpenSC and its
 * configuration leaves a card verified after kubehsm logs out; NULL when
 * there is nothing to say.
 */
static const char *
opensc_warning(const struct kh_policy *p, struct kh_p11 *p11)
{
	static char w[1024];
	const char *conf = opensc_conf_path(p);
	kh_error err = { 0 };
	int r;

	if (strncmp(kh_p11_module_manufacturer(p11), KH_OPENSC_MANUFACTURER,
		    strlen(KH_OPENSC_MANUFACTURER)) != 0)
		return NULL;
	r = kh_opensc_resets_card(conf, &err);
	if (r == 1)
		return NULL;
	if (r < 0) {
		(void)snprintf(w, sizeof(w), "cannot tell whether OpenSC resets a card after use: %s",
			       err.msg);
		return w;
	}
	(void)snprintf(w, sizeof(w),
		       "OpenSC leaves a card verified after kubehsm logs out: it sends nothing to "
		       "the card on C_Logout, and %s does not set disconnect_action = reset for its "
		       "PC/SC reader driver, so while any other process keeps the card connected, "
		       "every local user who can reach pcscd can sign with it without the PIN.  "
		       "Add to %s:  app default { reader_driver pcsc { disconnect_action = reset; } }",
		       conf, conf);
	return w;
}

/* ---- text ---------------------------------------------------------------- */

static void
name_str(X509 *x, char *buf, size_t size)
{
	BIO *b = BIO_new(BIO_s_mem());
	int n = 0;

	buf[0] = '\0';
	if (b != NULL && X509_NAME_print_ex(b, X509_get_subject_name(x), 0,
					    XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) >= 0)
		n = BIO_read(b, buf, (int)size - 1);
	buf[n > 0 ? n : 0] = '\0';
	BIO_free(b);
}

static void
time_str(const ASN1_TIME *t, char *buf, size_t size)
{
	struct tm tm;

	if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1 ||
	    strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
		(void)snprintf(buf, size, "?");
}

static const char *
pin_state(unsigned f)
{
	if (f & KH_P11_PIN_LOCKED)
		return "locked: a login is refused without trying the PIN";
	if (f & KH_P11_PIN_FINAL_TRY)
		return "final try: one more wrong PIN locks the token (the user is warned first)";
	if (f & KH_P11_PIN_COUNT_LOW)
		return "count low: a wrong PIN was entered recently";
	return "ok";
}

/*
 * A key the token hides before login can still be known to want a PIN per
 * signature: on a PIV card CKA_ID 02 is slot 9C, the Digital Signature
 * key, whose access rule is "PIN Always" (SP 800-73-4), and both OpenSC's
 * PIV emulation and ykcs11 mark it CKA_ALWAYS_AUTHENTICATE after login.
 */
static bool
piv_9c(const struct kh_p11_token *t, const struct kh_p11_cert *c)
{
	return c->id_len == 1 && c->id[0] == 0x02 &&
	       (strcmp(t->manufacturer, "piv_II") == 0 ||
		strncmp(t->manufacturer, "Yubico", strlen("Yubico")) == 0);
}

/* The key of certificate c, as the token shows it before login; *known:
 * whether ki->always_auth is known (shown, or PIV's 9C). */
static void
key_str(struct view *v, const struct kh_p11_token *t, const struct kh_p11_cert *c,
	char *buf, size_t size, struct kh_p11_key_info *ki, bool *known)
{
	char hex[2 * KH_P11_ID_MAX + 1];
	kh_error err = { 0 };

	*known = false;
	if (c->id_len == 0) {
		(void)snprintf(buf, size, "the certificate has no CKA_ID to find its key by");
		return;
	}
	kh_p11_hex_encode(c->id, c->id_len, hex, sizeof(hex));
	if (kh_p11_key_info(v->p11, t, c->id, c->id_len, ki, &err) != 0) {
		(void)snprintf(buf, size, "CKA_ID %s: cannot look: %s", hex, err.msg);
		return;
	}
	*known = ki->visible;
	if (!ki->visible && piv_9c(t, c)) {
		*known = true;
		ki->always_auth = true;
		(void)snprintf(buf, size, "CKA_ID %s: not shown before login; PIN per signature: "
			       "yes (PIV slot 9C, \"PIN Always\"; kubehsm answers it with the "
			       "login's PIN)", hex);
	} else if (!ki->visible) {
		(void)snprintf(buf, size, "CKA_ID %s: not shown before login (kubehsm finds it "
			       "after login)", hex);
	} else
		(void)snprintf(buf, size, "CKA_ID %s: shown before login; PIN per signature: %s",
			       hex, ki->always_auth ? "yes (CKA_ALWAYS_AUTHENTICATE; kubehsm "
			       "answers it with the login's PIN)" : "no");
}

static void
print_cert(struct view *v, size_t ti, size_t ci)
{
	const struct kh_p11_token *t = &v->choice.tokens[ti];
	const struct kh_p11_cert *c = &t->certs[ci];
	const struct kh_cert_eval *e = &v->choice.evals[ti].certs[ci];
	bool chosen = v->rc == 0 && v->choice.token == ti && v->choice.cert == ci, known;
	char hex[2 * KH_P11_ID_MAX + 1], subj[512], nb[64], na[64], key[KH_ERROR_MAX + 256];
	struct kh_p11_key_info ki;

	printf("  certificate %zu of %zu: CKA_ID %s '%s'\n", ci + 1, t->ncerts,
	       c->id_len ? kh_p11_hex_encode(c->id, c->id_len, hex, sizeof(hex)) : "(none)",
	       c->label);
	if (c->x509 == NULL) {
		printf("    not an X.509 certificate kubehsm can read\n");
		return;
	}
	name_str(c->x509, subj, sizeof(subj));
	time_str(X509_get0_notBefore(c->x509), nb, sizeof(nb));
	time_str(X509_get0_notAfter(c->x509), na, sizeof(na));
	key_str(v, t, c, key, sizeof(key), &ki, &known);
	printf("    subject    %s\n    valid      %s to %s\n", subj, nb, na);
	if (e->valid)
		printf("    trust      chains to %s\n", v->policy->trust.ca_file);
	else
		printf("    trust      not valid: %s\n", e->problem.msg);
	if (e->user != NULL)
		printf("    maps to    %s (trust.map = %s)\n", e->user,
		       kh_map_rule_name(v->policy->trust.map));
	else
		printf("    maps to    nobody: %s\n", e->valid ? e->problem.msg : "(see trust)");
	printf("    usage      %s\n", e->client_auth ? "extendedKeyUsage clientAuth" :
	       "no extendedKeyUsage clientAuth (preferred: the ones that have it)");
	printf("    key        %s\n", key);
	printf("    for %-6s %s%s\n", v->user, kh_cert_verdict_name(e->verdict),
	       chosen ? "  <- kubehsm uses this one" : "");
}

static void
print_slot(struct view *v, size_t i)
{
	const struct kh_p11_token *t = &v->choice.tokens[i];
	const struct kh_token_eval *te = &v->choice.evals[i];

	printf("\nslot %lu '%s'\n", t->slot_id, t->slot_description);
	if (!t->present || !t->initialized) {
		printf("  %s\n", t->present ? "a token that is not initialised" : "no token");
		return;
	}
	printf("  token      '%s'  %s / %s  serial %s\n", t->label, t->manufacturer, t->model,
	       t->serial[0] != '\0' ? t->serial : "(none)");
	printf("  PIN        %s\n", pin_state(t->pin_flags));
	if (te->skip != NULL) {
		printf("  left out   %s\n", te->skip);
		return;
	}
	if (t->certs_error != NULL)
		printf("  certificates cannot be listed: %s\n", t->certs_error);
	else if (t->ncerts == 0)
		printf("  no certificate (readable without login)\n");
	for (size_t j = 0; j < t->ncerts; j++)
		print_cert(v, i, j);
}

static void
print_env_names(const struct kh_env *env)
{
	for (size_t i = 0; i < env->n; i++)
		printf("%s%s=%s", i ? ", " : "", env->names[i], env->values[i]);
}

static void
print_text(struct view *v, const char *warning)
{
	const struct kh_policy *p = v->policy;

	printf("module     %s (%s)\n", p->pkcs11.module, kh_p11_module_manufacturer(v->p11));
	printf("env        ");
	if (p->pkcs11.env.n == 0)
		printf("(pkcs11.env not set)");
	print_env_names(&p->pkcs11.env);
	printf("\nlooking    for %s's token among %s%s%s", v->user,
	       p->token.uri[0] ? "the tokens token.uri " : "every token", p->token.uri,
	       v->label[0] ? ", labelled " : "");
	printf("%s; the key: %s%s%s%s\n", v->label,
	       v->key_id_len ? "CKA_ID " : "the certificate's CKA_ID",
	       v->key_id_len ? p->token.key_id : "", v->key_label[0] ? ", labelled " : "",
	       v->key_label);
	printf("trust      %s%s%s, trust.map = %s\n", p->trust.ca_file,
	       p->trust.crl_file[0] ? ", CRL " : "", p->trust.crl_file,
	       kh_map_rule_name(p->trust.map));
	printf("rule       several certificates of the user on one token: extendedKeyUsage\n"
	       "           clientAuth first, then the lowest CKA_ID\n");
	for (size_t i = 0; i < v->choice.ntokens; i++)
		print_slot(v, i);
	if (v->choice.ntokens == 0)
		printf("\nno slot: the module sees no reader or token\n");
	if (v->rc == 0) {
		const struct kh_p11_token *t = kh_token_chosen(&v->choice);
		const struct kh_p11_cert *c = kh_token_chosen_cert(&v->choice);
		char name[192], hex[2 * KH_P11_ID_MAX + 1];

		kh_token_name(t, name, sizeof(name));
		printf("\n%s: token %s, certificate CKA_ID %s%s\n", v->user, name,
		       kh_p11_hex_encode(c->id, c->id_len, hex, sizeof(hex)),
		       t->pin_flags & KH_P11_PIN_LOCKED ? " (but its PIN is locked)" : "");
	} else {
		printf("\n%s: no token: %s\n", v->user, v->why.msg);
	}
	if (warning != NULL)
		printf("\nwarning: %s\n", warning);
}

/* ---- JSON ---------------------------------------------------------------- */

static json_t *
json_cert(struct view *v, size_t ti, size_t ci)
{
	const struct kh_p11_token *t = &v->choice.tokens[ti];
	const struct kh_p11_cert *c = &t->certs[ci];
	const struct kh_cert_eval *e = &v->choice.evals[ti].certs[ci];
	char hex[2 * KH_P11_ID_MAX + 1], subj[512], nb[64], na[64], key[KH_ERROR_MAX + 256];
	struct kh_p11_key_info ki;
	json_t *o = json_object();
	bool known;

	kh_p11_hex_encode(c->id, c->id_len, hex, sizeof(hex));
	json_object_set_new(o, "id", json_string(hex));
	json_object_set_new(o, "label", json_string(c->label));
	json_object_set_new(o, "verdict", json_string(kh_cert_verdict_name(e->verdict)));
	json_object_set_new(o, "chosen", json_boolean(v->rc == 0 && v->choice.token == ti &&
						      v->choice.cert == ci));
	if (c->x509 == NULL)
		return o;
	name_str(c->x509, subj, sizeof(subj));
	time_str(X509_get0_notBefore(c->x509), nb, sizeof(nb));
	time_str(X509_get0_notAfter(c->x509), na, sizeof(na));
	json_object_set_new(o, "subject", json_string(subj));
	json_object_set_new(o, "notBefore", json_string(nb));
	json_object_set_new(o, "notAfter", json_string(na));
	json_object_set_new(o, "valid", json_boolean(e->valid));
	json_object_set_new(o, "problem", e->problem.msg[0] ? json_string(e->problem.msg) :
			    json_null());
	json_object_set_new(o, "mapsTo", e->user != NULL ? json_string(e->user) : json_null());
	json_object_set_new(o, "clientAuth", json_boolean(e->client_auth));
	key_str(v, t, c, key, sizeof(key), &ki, &known);
	json_object_set_new(o, "key", json_pack("{s:b,s:o,s:s}", "visibleBeforeLogin", ki.visible,
						"alwaysAuthenticate", known ?
						json_boolean(ki.always_auth) : json_null(),
						"note", key));
	return o;
}

static json_t *
json_slot(struct view *v, size_t i)
{
	const struct kh_p11_token *t = &v->choice.tokens[i];
	const struct kh_token_eval *te = &v->choice.evals[i];
	json_t *o = json_object(), *tok, *certs;

	json_object_set_new(o, "slotId", json_integer((json_int_t)t->slot_id));
	json_object_set_new(o, "description", json_string(t->slot_description));
	json_object_set_new(o, "manufacturer", json_string(t->slot_manufacturer));
	if (!t->present || !t->initialized) {
		json_object_set_new(o, "token", json_null());
		return o;
	}
	tok = json_pack("{s:s,s:s,s:s,s:s,s:{s:b,s:b,s:b},s:o}", "label", t->label,
			"manufacturer", t->manufacturer, "model", t->model, "serial", t->serial,
			"pin", "countLow", (t->pin_flags & KH_P11_PIN_COUNT_LOW) != 0,
			"finalTry", (t->pin_flags & KH_P11_PIN_FINAL_TRY) != 0,
			"locked", (t->pin_flags & KH_P11_PIN_LOCKED) != 0,
			"leftOut", te->skip != NULL ? json_string(te->skip) : json_null());
	certs = json_array();
	for (size_t j = 0; te->skip == NULL && j < t->ncerts; j++)
		json_array_append_new(certs, json_cert(v, i, j));
	json_object_set_new(tok, "certificates", certs);
	if (t->certs_error != NULL)
		json_object_set_new(tok, "certificatesError", json_string(t->certs_error));
	json_object_set_new(o, "token", tok);
	return o;
}

static int
print_json(struct view *v, const char *warning)
{
	json_t *o = json_object(), *slots = json_array(), *env = json_object(), *verdict;
	const struct kh_p11_token *t = kh_token_chosen(&v->choice);
	const struct kh_p11_cert *c = kh_token_chosen_cert(&v->choice);
	char hex[2 * KH_P11_ID_MAX + 1];
	int rc;

	for (size_t i = 0; i < v->policy->pkcs11.env.n; i++)
		json_object_set_new(env, v->policy->pkcs11.env.names[i],
				    json_string(v->policy->pkcs11.env.values[i]));
	for (size_t i = 0; i < v->choice.ntokens; i++)
		json_array_append_new(slots, json_slot(v, i));
	json_object_set_new(o, "module", json_string(v->policy->pkcs11.module));
	json_object_set_new(o, "moduleManufacturer", json_string(kh_p11_module_manufacturer(v->p11)));
	json_object_set_new(o, "env", env);
	json_object_set_new(o, "user", json_string(v->user));
	json_object_set_new(o, "slots", slots);
	verdict = json_pack("{s:s,s:s}", "outcome", kh_token_outcome_word(v->choice.outcome),
			    "message", v->rc == 0 ? "" : v->why.msg);
	if (v->rc == 0) {
		json_object_set_new(verdict, "token", json_string(t->label));
		json_object_set_new(verdict, "serial", json_string(t->serial));
		json_object_set_new(verdict, "slotId", json_integer((json_int_t)t->slot_id));
		json_object_set_new(verdict, "certificateId",
				    json_string(kh_p11_hex_encode(c->id, c->id_len, hex, sizeof(hex))));
	}
	json_object_set_new(o, "verdict", verdict);
	json_object_set_new(o, "warnings", warning != NULL ? json_pack("[s]", warning) :
			    json_array());
	rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(o);
	return rc == 0 && putchar('\n') != EOF ? 0 : -1;
}

/* ---- the commands -------------------------------------------------------- */

/* The policy as an unprivileged reader loads it: the issuer PIN file is
 * root's and never used here. */
static struct kh_policy *
load_policy(const char *config, kh_error *err)
{
	struct kh_policy_load_opts opts = { .trusted_uid = 0, .skip_secret_file_checks = true };

	return kh_policy_load(kh_cli_config_path(config), &opts, err);
}

static char *
caller_name(void)
{
	struct passwd *pw = getpwuid(getuid());

	return pw != NULL ? strdup(pw->pw_name) : NULL;
}

int
kh_cmd_token(int argc, char **argv)
{
	const char *config = NULL, *user = NULL, *warning;
	struct kh_policy *policy = NULL;
	struct view v = { 0 };
	char *me = NULL;
	bool json = false;
	kh_error err = { 0 };
	int i, rc = KH_EXIT_FAIL;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			kh_token_usage(stdout);
			return KH_EXIT_OK;
		} else if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--user") == 0 && i + 1 < argc) {
			user = argv[++i];
		} else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			config = argv[++i];
		} else {
			kh_cli_error("token: unexpected argument '%s'; run 'kubehsm token --help'",
				     argv[i]);
			return KH_EXIT_USAGE;
		}
	}
	if (user == NULL && (user = me = caller_name()) == NULL) {
		kh_cli_error("token: uid %u has no account name; pass --user", (unsigned)getuid());
		return KH_EXIT_FAIL;
	}
	if (user[0] == '\0') {
		kh_cli_error("token: --user needs a user name");
		goto out;
	}
	policy = load_policy(config, &err);
	if (policy == NULL || view_open(policy, user, &v, &err) != 0) {
		kh_cli_error("token: %s", err.msg);
		goto out;
	}
	warning = opensc_warning(policy, v.p11);
	if (json ? print_json(&v, warning) != 0 : (print_text(&v, warning), fflush(stdout) != 0)) {
		kh_cli_error("token: cannot write to stdout");
		goto out;
	}
	if (warning != NULL && !json)
		kh_cli_error("warning: %s", warning);
	rc = v.rc == 0 ? KH_EXIT_OK : KH_EXIT_FAIL;
out:
	view_clear(&v);
	kh_policy_free(policy);
	free(me);
	return rc;
}

/*
 * For `kubehsm config check`: comment lines on out about the tokens the
 * module shows now — keys that want their PIN for every signature — and
 * the OpenSC warning on stderr.  Informational: a module that cannot be
 * read is one comment line, not a failed check.
 */
void
kh_cli_token_notes(const struct kh_policy *policy, FILE *out)
{
	struct kh_p11 *p11;
	struct kh_p11_token *t = NULL;
	size_t n = 0;
	const char *warning;
	kh_error err = { 0 };

	p11 = kh_p11_open(policy->pkcs11.module, &policy->pkcs11.env, &err);
	if (p11 == NULL || kh_p11_list_tokens(p11, &t, &n, &err) != 0) {
		fprintf(out, "# tokens: not looked at: %s\n", err.msg);
		kh_p11_close(p11);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (!t[i].initialized || kh_p11_read_certs(p11, &t[i], &err) != 0)
			continue;
		for (size_t j = 0; j < t[i].ncerts; j++) {
			const struct kh_p11_cert *c = &t[i].certs[j];
			struct kh_p11_key_info ki;
			char hex[2 * KH_P11_ID_MAX + 1], name[192], subj[512];
			kh_error e = { 0 };

			if (c->x509 == NULL || c->id_len == 0 ||
			    kh_x509_validate(c->x509, policy->trust.ca_file, policy->trust.crl_file,
					     0, &e) != 0 ||
			    kh_p11_key_info(p11, &t[i], c->id, c->id_len, &ki, &e) != 0 ||
			    !(ki.always_auth || (!ki.visible && piv_9c(&t[i], c))))
				continue;
			kh_token_name(&t[i], name, sizeof(name));
			name_str(c->x509, subj, sizeof(subj));
			fprintf(out, "# token %s: the key of '%s' (CKA_ID %s) needs the PIN for every "
				"signature (%s); kubehsm answers it with the PIN typed at login\n",
				name, subj, kh_p11_hex_encode(c->id, c->id_len, hex, sizeof(hex)),
				ki.visible ? "CKA_ALWAYS_AUTHENTICATE" :
				"PIV slot 9C, \"PIN Always\"");
		}
	}
	warning = opensc_warning(policy, p11);
	if (warning != NULL)
		kh_cli_error("warning: %s", warning);
	kh_p11_tokens_free(t, n);
	kh_p11_close(p11);
}
