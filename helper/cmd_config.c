/*
 * kubehsm config check [--quiet] [FILE] — validate the policy like `sshd -t`.
 * kubehsm config ca-bundle [--issuer ID] [--root CA-FILE] [FILE] — print the
 * client CA bundle the Kubernetes API server must trust.
 *
 * Both run the very loader the PAM module uses, with the same trust rule:
 * the file (and the issuer PIN file) must belong to root.  A non-root admin
 * can check /etc/kubehsm/kubehsm.conf this way; a config owned by the
 * caller is rejected, because the PAM module would reject it too.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "helper/kh_cli.h"
#include "conf/kh_policy.h"
#include "lib/kh_x509.h"

enum kh_config_cmd {
	KH_CONFIG_CHECK,
	KH_CONFIG_CA_BUNDLE,
};

struct kh_config_args {
	enum kh_config_cmd cmd;
	const char *file;
	const char *issuer;   /* ca-bundle: --issuer, NULL = the default issuer */
	const char *root;     /* ca-bundle: --root, NULL = from issuer.cert_file */
	bool quiet;           /* check: --quiet */
};

static void
kh_config_usage(FILE *out)
{
	fprintf(out,
		"Usage: kubehsm config check [--quiet] [FILE]\n"
		"       kubehsm config ca-bundle [--issuer ID] [--root CA-FILE] [FILE]\n\n"
		"check      validate the kubehsm policy and print the effective policy\n"
		"           (defaults filled in, secrets never shown); then, as comments,\n"
		"           the keys of present tokens that want a PIN per signature, and a\n"
		"           warning when OpenSC would leave a card verified after logout\n"
		"  -q, --quiet      print nothing on success; only the exit status tells\n\n"
		"ca-bundle  print the client CA bundle to hand to the cluster admin for\n"
		"           kube-apiserver --client-ca-file: the issuer certificate, the\n"
		"           intermediates of issuer.cert_file and their root, PEM, issuer\n"
		"           first, checked to chain.  The issuer certificate itself must\n"
		"           be trusted, not only its root: some clients (ruby-kubeclient)\n"
		"           present the session certificate without the issuer chain.\n"
		"  --issuer ID      the issuer to bundle (default: the default issuer)\n"
		"  --root CA-FILE   the root CA the issuer chain ends at, when\n"
		"                   issuer.cert_file does not hold it\n\n"
		"FILE defaults to $KUBEHSM_CONFIG, then %s.\n"
		"  -h, --help       show this help\n\n"
		"Exit status: 0 success, 1 invalid policy or certificates (one line on\n"
		"stderr, nothing on stdout), 2 usage error.  See kubehsm.conf(5).\n",
		KH_DEFAULT_CONFIG);
}

/* The policy, checked exactly as the PAM module will load it. */
static struct kh_policy *
kh_config_load(const char *path)
{
	/* Root must own what the PAM module will trust, whoever runs the check. */
	struct kh_policy_load_opts opts = { .trusted_uid = 0, .skip_file_checks = false };
	struct kh_policy *policy;
	kh_error err;

	policy = kh_policy_load(path, &opts, &err);
	if (policy == NULL)
		kh_cli_error("%s", err.msg);
	return policy;
}

static int
kh_config_check(const struct kh_config_args *a)
{
	struct kh_policy *policy;
	int rc = KH_EXIT_OK;

	policy = kh_config_load(kh_cli_config_path(a->file));
	if (policy == NULL)
		return KH_EXIT_FAIL;
	if (!a->quiet && kh_policy_print(policy, stdout) != 0) {
		kh_cli_error("cannot write the policy to stdout");
		rc = KH_EXIT_FAIL;
	}
	/* What the tokens present now mean for this policy: informational,
	 * never a failed check (a token may be absent when the policy is). */
	if (!a->quiet && rc == KH_EXIT_OK)
		kh_cli_token_notes(policy, stdout);
	kh_policy_free(policy);
	return rc;
}

/* One-line RFC 2253 name for messages; always terminated. */
static void
kh_name_str(const X509_NAME *name, char *buf, size_t size)
{
	BIO *b = BIO_new(BIO_s_mem());
	int n = 0;

	buf[0] = '\0';
	if (b != NULL && X509_NAME_print_ex(b, name, 0, XN_FLAG_RFC2253) >= 0)
		n = BIO_read(b, buf, (int)size - 1);
	buf[n > 0 ? n : 0] = '\0';
	BIO_free(b);
}

/*
 * The trust anchor the issuer chain must end at: the certificates of
 * --root, else the last certificate of issuer.cert_file if it is
 * self-signed.  An intermediate is no anchor for an OpenSSL-based endpoint
 * (nginx, a TLS proxy in front of the API server): without the root the
 * bundle would work for one server and not another.
 */
static int
kh_bundle_anchor(X509_STORE *store, STACK_OF(X509) *chain, const char *cert_file,
		 const char *root, kh_error *err)
{
	X509 *last = sk_X509_value(chain, sk_X509_num(chain) - 1);
	char subject[256], issuer[256];
	FILE *f;

	if (root != NULL) {
		/* OpenSSL would report a missing file as "system lib". */
		f = fopen(root, "r");
		if (f == NULL)
			return kh_fail(err, KH_ERR_CONFIG, "--root %s: %s", root, strerror(errno));
		(void)fclose(f);
		if (X509_STORE_load_file(store, root) != 1)
			return kh_fail_ssl(err, KH_ERR_CONFIG,
					   "--root %s holds no readable PEM certificate", root);
		return 0;
	}
	if (X509_self_signed(last, 1) == 1)
		return X509_STORE_add_cert(store, last) == 1 ? 0 :
		       kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot add the root CA");
	kh_name_str(X509_get_subject_name(last), subject, sizeof(subject));
	kh_name_str(X509_get_issuer_name(last), issuer, sizeof(issuer));
	return kh_fail(err, KH_ERR_CONFIG,
		       "%s ends with '%s', not with its root CA: pass --root with the "
		       "certificate of '%s'", cert_file, subject, issuer);
}

/*
 * The issuer chain up to its root, built and checked by OpenSSL as a TLS
 * server will (signatures, CA constraints, validity now): *bundle is the
 * issuer certificate first, the self-signed root last.
 */
static int
kh_issuer_bundle(const struct kh_issuer *is, const char *root,
		 STACK_OF(X509) **bundle, kh_error *err)
{
	STACK_OF(X509) *chain = NULL, *untrusted = NULL;
	X509_STORE *store = NULL;
	X509_STORE_CTX *ctx = NULL;
	X509 *bad;
	char subject[256];
	int e, rc = -1;

	*bundle = NULL;
	if (kh_x509_load_chain(is->cert_file, NULL, &chain, NULL, err) != 0)
		return -1;
	ERR_clear_error();
	store = X509_STORE_new();
	ctx = X509_STORE_CTX_new();
	untrusted = sk_X509_dup(chain);
	if (store == NULL || ctx == NULL || untrusted == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	if (kh_bundle_anchor(store, chain, is->cert_file, root, err) != 0)
		goto out;
	(void)sk_X509_shift(untrusted);   /* the issuer is the one verified */
	if (X509_STORE_CTX_init(ctx, store, sk_X509_value(chain, 0), untrusted) != 1) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot set up certificate verification");
		goto out;
	}
	if (X509_verify_cert(ctx) != 1) {
		e = X509_STORE_CTX_get_error(ctx);
		bad = X509_STORE_CTX_get_current_cert(ctx);
		kh_name_str(X509_get_subject_name(bad != NULL ? bad : sk_X509_value(chain, 0)),
			    subject, sizeof(subject));
		kh_fail(err, KH_ERR_CONFIG, "the issuer chain of %s does not verify%s%s at '%s': %s",
			is->cert_file, root != NULL ? " against " : "", root != NULL ? root : "",
			subject, X509_verify_cert_error_string(e));
		ERR_clear_error();
		goto out;
	}
	*bundle = X509_STORE_CTX_get1_chain(ctx);
	if (*bundle == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	rc = 0;
out:
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	sk_X509_free(untrusted);
	sk_X509_pop_free(chain, X509_free);
	return rc;
}

static int
kh_config_ca_bundle(const struct kh_config_args *a)
{
	struct kh_policy *policy;
	const struct kh_issuer *is;
	STACK_OF(X509) *bundle = NULL;
	kh_error err;
	int i, rc = KH_EXIT_FAIL;

	policy = kh_config_load(kh_cli_config_path(a->file));
	if (policy == NULL)
		return KH_EXIT_FAIL;
	is = kh_policy_issuer(policy, a->issuer);
	if (is == NULL) {
		kh_cli_error("config ca-bundle: %s has no issuer '%s'", policy->path,
			     a->issuer != NULL ? a->issuer : "");
		goto out;
	}
	if (kh_issuer_bundle(is, a->root, &bundle, &err) != 0) {
		kh_cli_error("%s", err.msg);
		goto out;
	}
	for (i = 0; i < sk_X509_num(bundle); i++) {
		if (PEM_write_X509(stdout, sk_X509_value(bundle, i)) != 1) {
			kh_cli_error("cannot write the CA bundle to stdout");
			goto out;
		}
	}
	if (fflush(stdout) != 0) {
		kh_cli_error("cannot write the CA bundle to stdout");
		goto out;
	}
	rc = KH_EXIT_OK;
out:
	sk_X509_pop_free(bundle, X509_free);
	kh_policy_free(policy);
	return rc;
}

/* argv[1] is the config command; returns -1 to go on, else an exit status. */
static int
kh_config_parse(int argc, char **argv, struct kh_config_args *a)
{
	const char *sub = argv[1];
	bool bundle, options_done = false;
	int i;

	if (strcmp(sub, "check") == 0) {
		a->cmd = KH_CONFIG_CHECK;
	} else if (strcmp(sub, "ca-bundle") == 0) {
		a->cmd = KH_CONFIG_CA_BUNDLE;
	} else {
		kh_cli_error("unknown config command '%s'; run 'kubehsm config --help'", sub);
		return KH_EXIT_USAGE;
	}
	bundle = a->cmd == KH_CONFIG_CA_BUNDLE;
	for (i = 2; i < argc; i++) {
		const char *o = argv[i];
		bool has_value = i + 1 < argc;

		if (!options_done && (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0)) {
			kh_config_usage(stdout);
			return KH_EXIT_OK;
		} else if (!options_done && !bundle &&
			   (strcmp(o, "--quiet") == 0 || strcmp(o, "-q") == 0)) {
			a->quiet = true;
		} else if (!options_done && bundle && has_value && strcmp(o, "--issuer") == 0) {
			a->issuer = argv[++i];
		} else if (!options_done && bundle && has_value && strcmp(o, "--root") == 0) {
			a->root = argv[++i];
		} else if (!options_done && strcmp(o, "--") == 0) {
			options_done = true;
		} else if (!options_done && o[0] == '-' && o[1] != '\0') {
			kh_cli_error("config %s: unknown option '%s' or missing value; run "
				     "'kubehsm config --help'", sub, o);
			return KH_EXIT_USAGE;
		} else if (a->file == NULL) {
			a->file = o;
		} else {
			kh_cli_error("config %s: only one FILE may be given", sub);
			return KH_EXIT_USAGE;
		}
	}
	return -1;
}

int
kh_cmd_config(int argc, char **argv)
{
	struct kh_config_args a = { .cmd = KH_CONFIG_CHECK };
	int rc;

	if (argc < 2) {
		kh_config_usage(stderr);
		return KH_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		kh_config_usage(stdout);
		return KH_EXIT_OK;
	}
	rc = kh_config_parse(argc, argv, &a);
	if (rc >= 0)
		return rc;
	return a.cmd == KH_CONFIG_CHECK ? kh_config_check(&a) : kh_config_ca_bundle(&a);
}
