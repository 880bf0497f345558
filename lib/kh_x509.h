/*
 * kh_x509 — certificates: validating the user's token certificate, mapping
 * it to a user name and groups, and minting the short-lived session
 * certificate.  OpenSSL 3 does all ASN.1, PEM and signature work; the
 * issuer key may live on a PKCS#11 token (an EVP_PKEY from kh_pkcs11).
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set; pointer functions return NULL with err set.
 */
#ifndef KH_X509_H
#define KH_X509_H

#include <stddef.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/kh_error.h"
#include "lib/kh_template.h"
#include "lib/kh_words.h"

/* notBefore of a minted certificate is this far in the past (clock skew). */
#define KH_X509_BACKDATE 300

/*
 * Validate a user certificate for client authentication: chain to a CA in
 * ca_file, within its validity at `now` (0 = the current time), keyUsage
 * digitalSignature if the extension is present, extendedKeyUsage clientAuth
 * if present, and not revoked when crl_file is non-empty.  Errors:
 * KH_ERR_EXPIRED (expired), KH_ERR_REVOKED, KH_ERR_REFUSED (not yet valid,
 * untrusted issuer, wrong usage, ...), KH_ERR_CONFIG (unreadable CA/CRL file).
 */
int kh_x509_validate(X509 *cert, const char *ca_file, const char *crl_file,
		     time_t now, kh_error *err);

/*
 * The user name a certificate maps to under `rule`.  Exactly one candidate
 * value must exist; it must be printable ASCII without spaces and without
 * embedded NULs.  For email and upn the local part (before the single '@')
 * is returned, and only when the domain is one of `domains` (trust.domains,
 * compared whole, case-insensitively).  *name is freed with free().
 */
int kh_x509_map_user(X509 *cert, enum kh_map_rule rule, const char *const *domains,
		     size_t ndomains, char **name, kh_error *err);

/*
 * All values of subject attribute `attr` ("O" or "OU"), in certificate
 * order; none is fine (*n = 0).  A value with a NUL or a non-printable
 * character refuses the whole certificate.  Free with kh_x509_strv_free.
 */
int kh_x509_subject_values(X509 *cert, const char *attr, char ***values, size_t *n,
			   kh_error *err);
void kh_x509_strv_free(char **v, size_t n);

struct kh_mint_request {
	X509 *issuer_cert;
	EVP_PKEY *issuer_key;        /* software or PKCS#11 */
	EVP_PKEY *session_key;       /* its public half is certified */
	const char *username;        /* subject CN */
	const char *const *groups;   /* one subject O each */
	size_t ngroups;
	/* The caller's min(now + ttl, token cert notAfter, issuer cert
	 * notAfter): a session outliving the issuer certificate is refused. */
	time_t not_after;
	time_t now;                  /* 0 = the current time */
	/* identity.uid: NULL or "": no UID attribute.  Else a template whose
	 * %s is the certificate's serial number (hex, set here) and whose
	 * other escapes are uid_vars; the result is checked as
	 * kh_x509_uid_check does and becomes the subject's KH_KUBE_UID_OID. */
	const char *uid_template;
	const struct kh_template_var *uid_vars;
	size_t nuid_vars;
};

/* The subject attribute Kubernetes (>= 1.33, AllowParsingUserUIDFromCertAuth)
 * reads as the user's UID, a UTF8String; older API servers ignore it. */
#define KH_KUBE_UID_OID "1.3.6.1.4.1.57683.2"

/* A UID as it may be minted: 1..KH_KUBE_UID_MAX bytes of valid UTF-8 with
 * no control character (C0, DEL, C1).  0, or -1 + err (KH_ERR_INPUT). */
int kh_x509_uid_check(const char *uid, kh_error *err);

/* The certificate's UID attribute: *uid = a new string (free()), or NULL
 * when it has none.  Two of them, or one that fails kh_x509_uid_check,
 * are refused.  0, or -1 + err. */
int kh_x509_kube_uid(X509 *cert, char **uid, kh_error *err);

/* Issue the session certificate; *pem is a NUL-terminated PEM string (free()). */
int kh_x509_mint(const struct kh_mint_request *req, char **pem, kh_error *err);

/* Same, handing back the certificate object. */
int kh_x509_mint_cert(const struct kh_mint_request *req, X509 **cert, kh_error *err);

/* A fresh in-memory key of the given type. NULL + err on failure. */
EVP_PKEY *kh_x509_keygen(enum kh_key_type type, kh_error *err);

/* PKCS#8 PEM of a private key.  *pem (len bytes + NUL) holds key material:
 * release it with kh_secure_free(*pem, *len).  The BIO buffer is wiped. */
int kh_x509_key_to_pem(EVP_PKEY *key, char **pem, size_t *len, kh_error *err);

/* PEM of one certificate (free()). */
int kh_x509_cert_to_pem(X509 *cert, char **pem, kh_error *err);

/*
 * Load the issuer's certificate file: the issuer certificate first, then any
 * intermediates (PEM).  When issuer_key is given, the first certificate's
 * public key must be the key's (compared with EVP_PKEY_eq, which works for
 * token keys too).  Either output may be NULL.  *chain is freed with
 * OSSL_STACK_OF_X509_free / sk_X509_pop_free(…, X509_free); *pem (all
 * certificates, re-encoded) with free().
 */
int kh_x509_load_chain(const char *path, EVP_PKEY *issuer_key,
		       STACK_OF(X509) **chain, char **pem, kh_error *err);

/* A certificate's notAfter as unix seconds. */
int kh_x509_not_after(const X509 *cert, time_t *t, kh_error *err);

/* Read the first certificate of a PEM file. */
X509 *kh_x509_load_cert(const char *path, kh_error *err);

#endif
