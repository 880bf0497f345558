/*
 * kubehsm sign '<json>' — the external signer (external-signer.authentication.k8s.io/v1alpha1).
 *
 * A client's crypto.Signer execs this with one JSON request; the answer goes
 * to stdout.  CertificateRequest -> CertificateResponse (base64 DER),
 * SignRequest -> SignResponse (base64 signature, as Go's crypto.Signer
 * returns it).  The client never receives key material.
 *
 * signer.key = "session": the cached session key and certificate.
 * signer.key = "token":   the user's token key, unlocked with the PIN cached
 *                         at login (session.cache_pin), and the token
 *                         certificate.  The token is the one holding the
 *                         certificate the session was started with; a key
 *                         with CKA_ALWAYS_AUTHENTICATE gets that PIN again
 *                         for each signature (lib/kh_p11_ui.h), never a
 *                         prompt.
 * A "pin" in the request's configuration map is ignored with a warning.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "cache/kh_cache.h"
#include "helper/kh_cli.h"
#include "lib/kh_io.h"
#include "lib/kh_mem.h"
#include "lib/kh_pkcs11.h"
#include "lib/kh_pkey.h"
#include "conf/kh_policy.h"
#include "lib/kh_signer_proto.h"
#include "lib/kh_sign.h"
#include "lib/kh_template.h"
#include "lib/kh_token.h"

static void
kh_sign_usage(FILE *out)
{
	fprintf(out,
		"Usage: kubehsm sign [--key session|token] [--issuer ID] [--config FILE] REQUEST\n\n"
		"External signer (%s): REQUEST is one JSON\n"
		"CertificateRequest or SignRequest; the CertificateResponse (base64 DER\n"
		"certificate) or SignResponse (base64 signature) goes to stdout.\n"
		"Signs with your kube session: the client never sees a key.  RSA\n"
		"PKCS#1 v1.5, RSA-PSS and ECDSA; SHA-256/384/512 (Go crypto.Hash 5/6/7).\n\n"
		"  --key session   sign with the session key, answer the session certificate\n"
		"  --key token     sign on your token with the PIN cached at login\n"
		"                  (session.cache_pin), answer the token certificate\n"
		"                  (default: the policy's signer.key, else session)\n"
		"  --issuer ID     the issuer's session (default: the default issuer)\n"
		"  --config FILE   policy file (default $KUBEHSM_CONFIG, then %s)\n"
		"  -h, --help      show this help\n\n"
		"A \"pin\" in the request's configuration is ignored with a warning: PINs do\n"
		"not belong in kubeconfig.  Exit status: 0 answered, 1 failed (one line on\n"
		"stderr, nothing on stdout), 2 usage error.\n",
		KH_SIGNER_API_VERSION, KH_DEFAULT_CONFIG);
}

/* DER of the first certificate in a PEM bundle; malloc'd. */
static int
kh_pem_first_der(const char *pem, unsigned char **der, size_t *der_len, kh_error *err)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	unsigned char *p = NULL;
	int n = -1;

	if (x != NULL)
		n = i2d_X509(x, &p);
	X509_free(x);
	BIO_free(b);
	if (n <= 0)
		return kh_fail_ssl(err, KH_ERR_REFUSED, "the cached certificate cannot be read");
	*der = malloc((size_t)n);
	if (*der == NULL) {
		OPENSSL_free(p);
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	}
	memcpy(*der, p, (size_t)n);
	OPENSSL_free(p);
	*der_len = (size_t)n;
	return 0;
}

/*
 * signer.key from the policy (*out, which the caller frees); "session" and
 * no policy when no policy file exists.  The policy file itself is always
 * checked (owner, mode and every directory above it): signer.key is
 * trusted from it.  The files it
 * names are checked only when `named` — signing on the token, the one case
 * in which this command opens one of them (the PKCS#11 module).  A session
 * signature reads none, and checking them (a realpath and a stat per
 * directory of each named file: ninety system calls for a typical policy)
 * cost more than the rest of the command's own work.
 */
static int
kh_signer_mode(const char *config, bool named, enum kh_signer_key *mode,
	       struct kh_policy **out, kh_error *err)
{
	/* Root-owned config; the issuer PIN file is root's and never used here. */
	struct kh_policy_load_opts opts = { .trusted_uid = 0, .skip_file_checks = !named,
					    .skip_secret_file_checks = true };
	const char *path = kh_cli_config_path(config);
	struct kh_policy *policy;
	struct stat st;

	*out = NULL;
	if (config == NULL && stat(path, &st) != 0 && errno == ENOENT) {
		*mode = KH_SIGNER_SESSION;
		return 0;
	}
	policy = kh_policy_load(path, &opts, err);
	if (policy == NULL)
		return -1;
	*mode = policy->signer.key;
	if (*mode == KH_SIGNER_TOKEN && !named) {
		/* On the token after all: again, with the named files checked. */
		kh_policy_free(policy);
		return kh_signer_mode(config, true, mode, out, err);
	}
	*out = policy;
	return 0;
}

/* The key of the token certificate in rec's session on a token the
 * policy's module shows: found by that certificate (as at login, never by
 * a label the card chose), logged in with the PIN cached at login.  *p11
 * outlives the key: free the key first. */
static int
kh_token_key(const struct kh_policy *policy, const struct kh_record *rec, const char *pin,
	     struct kh_p11 **p11, EVP_PKEY **key, kh_error *err)
{
	struct kh_token_choice choice = { 0 };
	const struct kh_p11_cert *c;
	struct kh_p11_uri uri = { 0 };
	char *key_label = NULL;
	BIO *b = NULL;
	X509 *cert = NULL;
	int rc = -1;

	*p11 = NULL;
	*key = NULL;
	b = BIO_new_mem_buf(rec->token_cert_pem, -1);
	cert = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	if (cert == NULL) {
		kh_fail_ssl(err, KH_ERR_REFUSED, "the session's token certificate cannot be read");
		goto out;
	}
	if ((policy->token.uri[0] != '\0' &&
	     kh_p11_uri_parse_token(policy->token.uri, &uri, err) != 0) ||
	    (key_label = kh_template_expand(policy->token.key_label, rec->user, err)) == NULL)
		goto out;
	*p11 = kh_p11_open(policy->pkcs11.module, &policy->pkcs11.env, err);
	if (*p11 == NULL || kh_token_find_cert(*p11, &uri, cert, &choice, err) != 0 ||
	    kh_p11_login(*p11, pin, err) != 0)
		goto out;
	c = kh_token_chosen_cert(&choice);
	rc = kh_p11_find_cert_key(*p11, c, key_label, kh_token_chosen(&choice)->label, key, err);
out:
	if (rc != 0) {
		kh_p11_close(*p11);
		*p11 = NULL;
	}
	kh_token_choice_free(&choice);
	kh_p11_uri_clear(&uri);
	free(key_label);
	X509_free(cert);
	BIO_free(b);
	return rc;
}

int
kh_cmd_sign(int argc, char **argv)
{
	const char *request = NULL, *issuer = "", *config = NULL, *key_opt = NULL;
	enum kh_signer_key mode = KH_SIGNER_SESSION;
	struct kh_signer_request req;
	struct kh_record *rec = NULL;
	enum kh_cache_miss miss;
	struct kh_p11 *p11 = NULL;
	EVP_PKEY *pkey = NULL;
	unsigned char *der = NULL, *sig = NULL;
	size_t der_len = 0, sig_len = 0, out_len = 0;
	char *out = NULL, *pin = NULL;
	struct kh_policy *policy = NULL;
	kh_error err;
	int i, rc = KH_EXIT_FAIL;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			kh_sign_usage(stdout);
			return KH_EXIT_OK;
		} else if (strcmp(a, "--key") == 0 && i + 1 < argc) {
			key_opt = argv[++i];
		} else if (strcmp(a, "--issuer") == 0 && i + 1 < argc) {
			issuer = argv[++i];
		} else if (strcmp(a, "--config") == 0 && i + 1 < argc) {
			config = argv[++i];
		} else if (a[0] == '-' && a[1] == '-' && request == NULL && strcmp(a, "--") != 0) {
			kh_cli_error("sign: unknown option '%s'; run 'kubehsm sign --help'", a);
			return KH_EXIT_USAGE;
		} else if (strcmp(a, "--") == 0 && i + 1 < argc && request == NULL) {
			request = argv[++i];
		} else if (request == NULL) {
			request = a;
		} else {
			kh_cli_error("sign: one JSON request argument expected; run 'kubehsm sign --help'");
			return KH_EXIT_USAGE;
		}
	}
	if (request == NULL) {
		kh_cli_error("sign: no request: pass one JSON CertificateRequest or SignRequest "
			     "argument (%s)", KH_SIGNER_API_VERSION);
		return KH_EXIT_USAGE;
	}
	if (key_opt != NULL && strcmp(key_opt, "session") != 0 && strcmp(key_opt, "token") != 0) {
		kh_cli_error("sign: --key must be 'session' or 'token', not '%s'", key_opt);
		return KH_EXIT_USAGE;
	}

	if (kh_signer_request_parse(request, strlen(request), &req, &err) != 0) {
		kh_cli_error("sign: %s", err.msg);
		return KH_EXIT_FAIL;
	}
	if (req.config.pin_given)
		kh_cli_error("warning: ignoring the \"pin\" in the signer configuration: PINs do "
			     "not belong in kubeconfig; your kube session unlocks signing");

	if (key_opt != NULL) {
		mode = strcmp(key_opt, "token") == 0 ? KH_SIGNER_TOKEN : KH_SIGNER_SESSION;
		if (mode == KH_SIGNER_TOKEN &&
		    kh_signer_mode(config, true, &(enum kh_signer_key){0}, &policy, &err) != 0) {
			kh_cli_error("sign: %s", err.msg);
			goto out;
		}
	} else if (kh_signer_mode(config, false, &mode, &policy, &err) != 0) {
		kh_cli_error("sign: %s", err.msg);
		goto out;
	}

	if (kh_cli_no_dumps() != 0) {
		kh_cli_error("sign: cannot keep secrets out of core dumps: %s", strerror(errno));
		goto out;
	}
	/* A SignRequest needs the key, not the chain: the record's exec answer
	 * holds both, and decoding the chain too would cost every signature. */
	if ((req.kind == KH_SIGNER_CERTIFICATE ? kh_cache_find(issuer, &rec, &miss, &err)
	     : kh_cache_find_key(issuer, &rec, &miss, &err)) != 0) {
		kh_cli_error("%s", err.msg);
		goto out;
	}

	if (req.kind == KH_SIGNER_CERTIFICATE) {
		const char *pem = mode == KH_SIGNER_TOKEN ? rec->token_cert_pem
							       : rec->cert_chain_pem;

		if (pem == NULL || pem[0] == '\0') {
			kh_cli_error("sign: the session holds no %s certificate",
				     mode == KH_SIGNER_TOKEN ? "token" : "session");
			goto out;
		}
		if (kh_pem_first_der(pem, &der, &der_len, &err) != 0 ||
		    kh_signer_certificate_response(der, der_len, &out, &out_len, &err) != 0) {
			kh_cli_error("sign: %s", err.msg);
			goto out;
		}
	} else {
		if (mode == KH_SIGNER_TOKEN) {
			if (rec->token_cert_pem == NULL || rec->token_cert_pem[0] == '\0') {
				kh_cli_error("sign: the session holds no token certificate");
				goto out;
			}
			if (policy == NULL) {
				kh_cli_error("sign: signer.key = \"token\" needs a policy naming pkcs11.module");
				goto out;
			}
			if (kh_cache_find_pin(issuer, &pin, &err) != 0) {
				kh_cli_error("sign: %s (signer.key = \"token\" needs "
					     "session.cache_pin = true)", err.msg);
				goto out;
			}
			if (kh_token_key(policy, rec, pin, &p11, &pkey, &err) != 0) {
				/* A PIN the token refused would fail the same way on
				 * every kubectl request until the token locks: it is
				 * forgotten at once and never tried again. */
				if (err.code == KH_ERR_AUTH && kh_cache_drop_pin(issuer) > 0)
					kh_cli_error("sign: token: %s; the cached PIN was forgotten, "
						     "log in again to cache the right one", err.msg);
				else
					kh_cli_error("sign: token: %s", err.msg);
				goto out;
			}
		} else if (rec->key_pem == NULL) {
			kh_cli_error("sign: %s", KH_CLI_RELAY_ONLY);
			goto out;
		} else if ((pkey = kh_pkey_from_pkcs8_pem(rec->key_pem, &err)) == NULL) {
			kh_cli_error("sign: %s", err.msg);
			goto out;
		}
		if (kh_sign_digest(pkey, &req.opts, req.digest, req.digest_len, &sig, &sig_len,
				   &err) != 0 ||
		    kh_signer_sign_response(sig, sig_len, &out, &out_len, &err) != 0) {
			kh_cli_error("sign: %s", err.msg);
			goto out;
		}
	}
	if (kh_write_all(STDOUT_FILENO, out, out_len) != 0) {
		kh_cli_error("sign: cannot write the response: %s", strerror(errno));
		goto out;
	}
	rc = KH_EXIT_OK;
out:
	free(out);
	free(der);
	free(sig);
	EVP_PKEY_free(pkey);
	kh_p11_close(p11);
	kh_secure_strfree(pin);
	kh_policy_free(policy);
	kh_record_free(rec);
	kh_signer_request_free(&req);
	return rc;
}
