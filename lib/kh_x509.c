#include "config.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/objects.h>
#include <openssl/x509v3.h>

#include "lib/kh_mem.h"
#include "lib/kh_x509.h"

#define KH_SERIAL_BYTES 16
#define KH_NAME_MAX 256   /* longest mapped user name or group we accept */

/* ---- small helpers ---- */

/* A one-line subject for messages; always terminated. */
static void
kh_subject_str(X509 *cert, char *buf, size_t len)
{
	BIO *b = BIO_new(BIO_s_mem());
	int n = 0;

	buf[0] = '\0';
	if (b == NULL)
		return;
	if (X509_NAME_print_ex(b, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) >= 0)
		n = BIO_read(b, buf, (int)len - 1);
	buf[n > 0 ? n : 0] = '\0';
	BIO_free(b);
}

static void
kh_time_str(const ASN1_TIME *t, char *buf, size_t len)
{
	BIO *b = BIO_new(BIO_s_mem());
	int n = 0;

	buf[0] = '\0';
	if (b == NULL || t == NULL) {
		BIO_free(b);
		return;
	}
	if (ASN1_TIME_print(b, t) == 1)
		n = BIO_read(b, buf, (int)len - 1);
	buf[n > 0 ? n : 0] = '\0';
	BIO_free(b);
}

/*
 * Names that end up as unix or Kubernetes identities: printable ASCII only,
 * so that no control character, NUL or look-alike code point can make two
 * different certificates map to the same-looking name.
 */
static bool
kh_printable(const unsigned char *s, size_t n, bool allow_space)
{
	size_t i;

	if (n == 0 || n > KH_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] == ' ' && allow_space)
			continue;
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	}
	if (allow_space && (s[0] == ' ' || s[n - 1] == ' '))
		return false;
	return true;
}

/* Convert an ASN.1 string to a checked C string. */
static int
kh_asn1_string(const ASN1_STRING *as, bool allow_space, char **out, const char *what,
	       kh_error *err)
{
	unsigned char *utf8 = NULL;
	int n;

	*out = NULL;
	n = ASN1_STRING_to_UTF8(&utf8, as);
	if (n < 0)
		return kh_fail_ssl(err, KH_ERR_REFUSED, "certificate %s cannot be decoded", what);
	if (memchr(utf8, '\0', (size_t)n) != NULL) {
		OPENSSL_free(utf8);
		return kh_fail(err, KH_ERR_REFUSED, "certificate %s contains a NUL byte", what);
	}
	if (!kh_printable(utf8, (size_t)n, allow_space)) {
		OPENSSL_free(utf8);
		return kh_fail(err, KH_ERR_REFUSED,
			       "certificate %s is empty, too long or not printable ASCII%s", what,
			       allow_space ? "" : " without spaces");
	}
	*out = strndup((const char *)utf8, (size_t)n);
	OPENSSL_free(utf8);
	if (*out == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	return 0;
}

/* ---- validation ---- */

static int
kh_check_usage(X509 *cert, kh_error *err)
{
	uint32_t flags = X509_get_extension_flags(cert);

	if (flags & EXFLAG_INVALID)
		return kh_fail(err, KH_ERR_REFUSED, "certificate has malformed or duplicate extensions");
	if ((flags & EXFLAG_KUSAGE) && !(X509_get_key_usage(cert) & KU_DIGITAL_SIGNATURE))
		return kh_fail(err, KH_ERR_REFUSED,
			       "certificate keyUsage does not allow digitalSignature");
	if ((flags & EXFLAG_XKUSAGE) && !(X509_get_extended_key_usage(cert) & XKU_SSL_CLIENT))
		return kh_fail(err, KH_ERR_REFUSED,
			       "certificate extendedKeyUsage does not allow clientAuth");
	return 0;
}

static int
kh_verify_failure(X509_STORE_CTX *ctx, X509 *cert, const char *ca_file,
		  const char *crl_file, kh_error *err)
{
	int e = X509_STORE_CTX_get_error(ctx);
	int depth = X509_STORE_CTX_get_error_depth(ctx);
	X509 *bad = X509_STORE_CTX_get_current_cert(ctx);
	const char *which = depth > 0 ? "CA certificate" : "certificate";
	char subj[256], when[64];

	kh_subject_str(bad != NULL ? bad : cert, subj, sizeof(subj));
	switch (e) {
	case X509_V_ERR_CERT_HAS_EXPIRED:
		kh_time_str(X509_get0_notAfter(bad != NULL ? bad : cert), when, sizeof(when));
		return kh_fail(err, KH_ERR_EXPIRED, "%s '%s' expired on %s", which, subj, when);
	case X509_V_ERR_CERT_NOT_YET_VALID:
		kh_time_str(X509_get0_notBefore(bad != NULL ? bad : cert), when, sizeof(when));
		return kh_fail(err, KH_ERR_REFUSED, "%s '%s' is not yet valid (valid from %s)",
			       which, subj, when);
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
	case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
	case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
	case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
	case X509_V_ERR_CERT_UNTRUSTED:
	case X509_V_ERR_CERT_REJECTED:
	case X509_V_ERR_CERT_SIGNATURE_FAILURE:
		return kh_fail(err, KH_ERR_REFUSED,
			       "certificate '%s' has an untrusted issuer: no CA in %s vouches for it (%s)",
			       subj, ca_file, X509_verify_cert_error_string(e));
	case X509_V_ERR_CERT_REVOKED:
		return kh_fail(err, KH_ERR_REVOKED, "%s '%s' has been revoked (CRL %s)",
			       which, subj, crl_file);
	case X509_V_ERR_UNABLE_TO_GET_CRL:
		return kh_fail(err, KH_ERR_REFUSED,
			       "%s holds no CRL from the issuer of '%s'; cannot check revocation",
			       crl_file, subj);
	case X509_V_ERR_CRL_HAS_EXPIRED:
		return kh_fail(err, KH_ERR_REFUSED, "CRL %s has expired; publish a fresh one", crl_file);
	case X509_V_ERR_CRL_NOT_YET_VALID:
		return kh_fail(err, KH_ERR_REFUSED, "CRL %s is not yet valid", crl_file);
	case X509_V_ERR_INVALID_PURPOSE:
		return kh_fail(err, KH_ERR_REFUSED,
			       "%s '%s' is not valid for TLS client authentication", which, subj);
	default:
		return kh_fail(err, KH_ERR_REFUSED, "%s '%s' rejected: %s", which, subj,
			       X509_verify_cert_error_string(e));
	}
}

int
kh_x509_validate(X509 *cert, const char *ca_file, const char *crl_file, time_t now,
		 kh_error *err)
{
	X509_STORE *store = NULL;
	X509_STORE_CTX *ctx = NULL;
	X509_LOOKUP *lookup;
	bool crl = crl_file != NULL && crl_file[0] != '\0';
	int rc = -1;

	if (cert == NULL || ca_file == NULL || ca_file[0] == '\0')
		return kh_fail(err, KH_ERR_CONFIG, "no certificate or CA file to validate against");
	if (kh_check_usage(cert, err) != 0)
		return -1;
	ERR_clear_error();
	store = X509_STORE_new();
	if (store == NULL) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	if (X509_STORE_load_file(store, ca_file) != 1) {
		kh_fail_ssl(err, KH_ERR_CONFIG, "cannot read CA certificates from %s", ca_file);
		goto out;
	}
	if (crl) {
		lookup = X509_STORE_add_lookup(store, X509_LOOKUP_file());
		if (lookup == NULL ||
		    X509_load_crl_file(lookup, crl_file, X509_FILETYPE_PEM) <= 0) {
			kh_fail_ssl(err, KH_ERR_CONFIG, "cannot read the CRL from %s", crl_file);
			goto out;
		}
	}
	ctx = X509_STORE_CTX_new();
	if (ctx == NULL || X509_STORE_CTX_init(ctx, store, cert, NULL) != 1) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot set up certificate verification");
		goto out;
	}
	/* SSL client purpose: the chain's CAs may issue client certificates,
	 * and the leaf's KU/EKU (when present) allow client authentication. */
	if (X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT) != 1) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot set the verification purpose");
		goto out;
	}
	if (crl)
		X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_CRL_CHECK);
	if (now != 0)
		X509_STORE_CTX_set_time(ctx, 0, now);
	if (X509_verify_cert(ctx) != 1) {
		kh_verify_failure(ctx, cert, ca_file, crl ? crl_file : "", err);
		ERR_clear_error();
		goto out;
	}
	rc = 0;
out:
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return rc;
}

/* ---- identity mapping ---- */

/* The one value of a subject attribute; none or several is refused. */
static int
kh_subject_single(X509 *cert, int nid, char **out, const char *what, kh_error *err)
{
	X509_NAME *name = X509_get_subject_name(cert);
	int idx = X509_NAME_get_index_by_NID(name, nid, -1);

	*out = NULL;
	if (idx < 0)
		return kh_fail(err, KH_ERR_REFUSED, "certificate subject has no %s", what);
	if (X509_NAME_get_index_by_NID(name, nid, idx) >= 0)
		return kh_fail(err, KH_ERR_REFUSED,
			       "certificate subject has several %s values; cannot tell which names the user",
			       what);
	return kh_asn1_string(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx)),
			      false, out, what, err);
}

/*
 * "local@domain" → "local" in place; exactly one '@' with text on both
 * sides, and the domain one of `domains` (compared whole and without
 * regard to case): the local part alone names a local user only within
 * domains the admin vouches for, or alice@partner.example would be alice.
 */
static int
kh_local_part(char *addr, const char *what, const char *const *domains,
	      size_t ndomains, kh_error *err)
{
	char *at = strchr(addr, '@');
	size_t i;

	if (at == NULL || at == addr || at[1] == '\0' || strchr(at + 1, '@') != NULL)
		return kh_fail(err, KH_ERR_REFUSED, "certificate %s '%s' is not of the form user@domain",
			       what, addr);
	for (i = 0; i < ndomains; i++)
		if (strcasecmp(at + 1, domains[i]) == 0)
			break;
	if (i == ndomains)
		return kh_fail(err, KH_ERR_REFUSED, "certificate %s '%s': domain '%s' is not one "
			       "of trust.domains", what, addr, at + 1);
	*at = '\0';
	return 0;
}

/* The subjectAltName names; *names NULL when there is no SAN. */
static int
kh_san(X509 *cert, GENERAL_NAMES **names, kh_error *err)
{
	int crit = 0;

	*names = X509_get_ext_d2i(cert, NID_subject_alt_name, &crit, NULL);
	if (*names == NULL && crit != -1) {
		/* -2: several SAN extensions; >= 0: present but undecodable. */
		ERR_clear_error();
		return kh_fail(err, KH_ERR_REFUSED,
			       "certificate subjectAltName is duplicated or malformed");
	}
	return 0;
}

static bool
kh_is_upn(const GENERAL_NAME *gn)
{
	return gn->type == GEN_OTHERNAME &&
	       OBJ_obj2nid(gn->d.otherName->type_id) == NID_ms_upn;
}

/* The single SAN entry of `type` (GEN_EMAIL, or GEN_OTHERNAME for UPN); 0 found = *found NULL. */
static int
kh_san_single(GENERAL_NAMES *names, int type, const GENERAL_NAME **found,
	      const char *what, kh_error *err)
{
	int i, n = 0;

	*found = NULL;
	for (i = 0; names != NULL && i < sk_GENERAL_NAME_num(names); i++) {
		const GENERAL_NAME *gn = sk_GENERAL_NAME_value(names, i);

		if (type == GEN_OTHERNAME ? kh_is_upn(gn) : gn->type == type) {
			*found = gn;
			n++;
		}
	}
	if (n > 1) {
		*found = NULL;
		return kh_fail(err, KH_ERR_REFUSED,
			       "certificate has several %s names; cannot tell which names the user", what);
	}
	return 0;
}

static int
kh_map_email(X509 *cert, const char *const *domains, size_t ndomains, char **name,
	     kh_error *err)
{
	GENERAL_NAMES *names;
	const GENERAL_NAME *gn;
	int rc;

	if (kh_san(cert, &names, err) != 0)
		return -1;
	rc = kh_san_single(names, GEN_EMAIL, &gn, "rfc822Name", err);
	if (rc == 0 && gn != NULL)
		rc = kh_asn1_string(gn->d.rfc822Name, false, name, "rfc822Name", err);
	else if (rc == 0)
		rc = kh_subject_single(cert, NID_pkcs9_emailAddress, name, "emailAddress", err);
	GENERAL_NAMES_free(names);
	if (rc == 0 && (rc = kh_local_part(*name, "email address", domains, ndomains, err)) != 0) {
		free(*name);
		*name = NULL;
	}
	return rc;
}

static int
kh_map_upn(X509 *cert, const char *const *domains, size_t ndomains, char **name,
	   kh_error *err)
{
	GENERAL_NAMES *names;
	const GENERAL_NAME *gn;
	const ASN1_TYPE *v;
	int rc;

	if (kh_san(cert, &names, err) != 0)
		return -1;
	rc = kh_san_single(names, GEN_OTHERNAME, &gn, "UPN", err);
	if (rc == 0 && gn == NULL)
		rc = kh_fail(err, KH_ERR_REFUSED, "certificate has no UPN subjectAltName");
	if (rc == 0) {
		v = gn->d.otherName->value;
		if (v == NULL || v->type != V_ASN1_UTF8STRING)
			rc = kh_fail(err, KH_ERR_REFUSED, "certificate UPN is not a UTF8String");
		else
			rc = kh_asn1_string(v->value.utf8string, false, name, "UPN", err);
	}
	GENERAL_NAMES_free(names);
	if (rc == 0 && (rc = kh_local_part(*name, "UPN", domains, ndomains, err)) != 0) {
		free(*name);
		*name = NULL;
	}
	return rc;
}

int
kh_x509_map_user(X509 *cert, enum kh_map_rule rule, const char *const *domains,
		 size_t ndomains, char **name, kh_error *err)
{
	*name = NULL;
	if (cert == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "no certificate to map");
	switch (rule) {
	case KH_MAP_CN:
		return kh_subject_single(cert, NID_commonName, name, "commonName (CN)", err);
	case KH_MAP_UID:
		return kh_subject_single(cert, NID_userId, name, "userId (UID)", err);
	case KH_MAP_EMAIL:
		return kh_map_email(cert, domains, ndomains, name, err);
	case KH_MAP_UPN:
		return kh_map_upn(cert, domains, ndomains, name, err);
	}
	return kh_fail(err, KH_ERR_INTERNAL, "unknown mapping rule %d", (int)rule);
}

void
kh_x509_strv_free(char **v, size_t n)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int
kh_x509_subject_values(X509 *cert, const char *attr, char ***values, size_t *n,
		       kh_error *err)
{
	X509_NAME *name;
	char **v = NULL, **nv;
	size_t count = 0;
	int nid, idx = -1;

	*values = NULL;
	*n = 0;
	if (attr != NULL && strcmp(attr, "O") == 0)
		nid = NID_organizationName;
	else if (attr != NULL && strcmp(attr, "OU") == 0)
		nid = NID_organizationalUnitName;
	else
		return kh_fail(err, KH_ERR_INPUT, "groups come from O or OU, not '%s'",
			       attr != NULL ? attr : "");
	name = X509_get_subject_name(cert);
	while ((idx = X509_NAME_get_index_by_NID(name, nid, idx)) >= 0) {
		nv = realloc(v, (count + 1) * sizeof(*v));
		if (nv == NULL) {
			kh_x509_strv_free(v, count);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
		v = nv;
		/* Group names may contain inner spaces ("Platform Team"). */
		if (kh_asn1_string(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx)),
				   true, &v[count], attr, err) != 0) {
			kh_x509_strv_free(v, count);
			return -1;
		}
		count++;
	}
	*values = v;
	*n = count;
	return 0;
}

/* ---- the UID attribute ---- */

int
kh_x509_uid_check(const char *uid, kh_error *err)
{
	ASN1_STRING *as = NULL;
	size_t n, i;

	n = uid != NULL ? strlen(uid) : 0;
	if (n == 0 || n > KH_KUBE_UID_MAX)
		return kh_fail(err, KH_ERR_INPUT, "the UID is empty or longer than %d bytes",
			       KH_KUBE_UID_MAX);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)uid[i];

		/* C0 and DEL; C1 (U+0080..U+009F) is 0xC2 0x80..0x9F in UTF-8. */
		if (c < 0x20 || c == 0x7f ||
		    (c == 0xc2 && i + 1 < n && (unsigned char)uid[i + 1] >= 0x80 &&
		     (unsigned char)uid[i + 1] <= 0x9f))
			return kh_fail(err, KH_ERR_INPUT, "the UID contains a control character");
	}
	/* OpenSSL's own UTF-8 decoder says whether it is UTF-8 at all. */
	if (ASN1_mbstring_copy(&as, (const unsigned char *)uid, (int)n, MBSTRING_UTF8,
			       B_ASN1_UTF8STRING) < 0)
		return kh_fail_ssl(err, KH_ERR_INPUT, "the UID is not valid UTF-8");
	ASN1_STRING_free(as);
	return 0;
}

static ASN1_OBJECT *
kh_uid_obj(kh_error *err)
{
	/* no_name = 1: the dotted number itself, nothing registered. */
	ASN1_OBJECT *obj = OBJ_txt2obj(KH_KUBE_UID_OID, 1);

	if (obj == NULL)
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot make the UID attribute's OID");
	return obj;
}

int
kh_x509_kube_uid(X509 *cert, char **uid, kh_error *err)
{
	X509_NAME *name = X509_get_subject_name(cert);
	ASN1_OBJECT *obj;
	unsigned char *utf8 = NULL;
	int idx, n, rc = -1;

	*uid = NULL;
	if ((obj = kh_uid_obj(err)) == NULL)
		return -1;
	idx = X509_NAME_get_index_by_OBJ(name, obj, -1);
	if (idx < 0) {
		rc = 0;
		goto out;
	}
	if (X509_NAME_get_index_by_OBJ(name, obj, idx) >= 0) {
		kh_fail(err, KH_ERR_REFUSED, "the certificate names two UIDs");
		goto out;
	}
	n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx)));
	if (n < 0) {
		kh_fail_ssl(err, KH_ERR_REFUSED, "the certificate's UID cannot be decoded");
		goto out;
	}
	if (memchr(utf8, '\0', (size_t)n) != NULL) {
		kh_fail(err, KH_ERR_REFUSED, "the certificate's UID contains a NUL byte");
		goto out;
	}
	*uid = strndup((const char *)utf8, (size_t)n);
	if (*uid == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	if (kh_x509_uid_check(*uid, err) != 0) {
		free(*uid);
		*uid = NULL;
		goto out;
	}
	rc = 0;
out:
	OPENSSL_free(utf8);
	ASN1_OBJECT_free(obj);
	return rc;
}

/* identity.uid expanded for this certificate (its serial is set). */
static int
kh_mint_uid(X509 *x, X509_NAME *name, const struct kh_mint_request *req, kh_error *err)
{
	struct kh_template_var vars[16];
	ASN1_OBJECT *obj = NULL;
	BIGNUM *bn = NULL;
	char *serial = NULL, *uid = NULL;
	size_t i;
	int rc = -1;

	if (req->uid_template == NULL || req->uid_template[0] == '\0')
		return 0;
	if (req->nuid_vars >= sizeof(vars) / sizeof(vars[0]))
		return kh_fail(err, KH_ERR_INTERNAL, "too many UID template escapes");
	bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	serial = bn != NULL ? BN_bn2hex(bn) : NULL;
	if (serial == NULL) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot print the serial number");
		goto out;
	}
	for (i = 0; serial[i] != '\0'; i++)       /* as kubehsm status prints it */
		serial[i] = (char)tolower((unsigned char)serial[i]);
	for (i = 0; i < req->nuid_vars; i++)
		vars[i] = req->uid_vars[i];
	vars[i++] = (struct kh_template_var){ 's', serial };
	uid = kh_template_expand_vars(req->uid_template, vars, i, err);
	if (uid == NULL || kh_x509_uid_check(uid, err) != 0)
		goto out;
	if ((obj = kh_uid_obj(err)) == NULL)
		goto out;
	/* The bytes were checked as UTF-8 above: a UTF8String whatever
	 * OpenSSL's global string mask says. */
	if (X509_NAME_add_entry_by_OBJ(name, obj, V_ASN1_UTF8STRING, (const unsigned char *)uid,
				       -1, -1, 0) != 1) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot put the UID in the subject");
		goto out;
	}
	rc = 0;
out:
	ASN1_OBJECT_free(obj);
	OPENSSL_free(serial);
	BN_free(bn);
	free(uid);
	return rc;
}

/* ---- minting ---- */

static int
kh_random_serial(X509 *x, kh_error *err)
{
	unsigned char buf[KH_SERIAL_BYTES];
	BIGNUM *bn = NULL;
	int rc = -1;

	/* Positive (top bit clear) and never zero: RFC 5280 4.1.2.2. */
	do {
		if (RAND_bytes(buf, sizeof(buf)) != 1)
			return kh_fail_ssl(err, KH_ERR_INTERNAL, "no random bytes for the serial");
		buf[0] &= 0x7f;
	} while (buf[0] == 0);
	bn = BN_bin2bn(buf, sizeof(buf), NULL);
	if (bn != NULL && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL)
		rc = 0;
	else
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot set the serial number");
	BN_free(bn);
	return rc;
}

static int
kh_mint_subject(X509 *x, const struct kh_mint_request *req, kh_error *err)
{
	X509_NAME *name = X509_NAME_new();
	size_t i;
	int rc = -1;

	if (name == NULL ||
	    X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
				       (const unsigned char *)req->username, -1, -1, 0) != 1) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot build the subject");
		goto out;
	}
	for (i = 0; i < req->ngroups; i++) {
		if (X509_NAME_add_entry_by_NID(name, NID_organizationName, MBSTRING_UTF8,
					       (const unsigned char *)req->groups[i], -1, -1, 0) != 1) {
			kh_fail_ssl(err, KH_ERR_INPUT, "group '%s' cannot be put in a certificate",
				    req->groups[i]);
			goto out;
		}
	}
	if (kh_mint_uid(x, name, req, err) != 0)
		goto out;
	if (X509_set_subject_name(x, name) != 1) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot set the subject");
		goto out;
	}
	rc = 0;
out:
	X509_NAME_free(name);
	return rc;
}

static int
kh_add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value, kh_error *err)
{
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
	int ok;

	if (ext == NULL)
		return kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot build extension %s = %s",
				   OBJ_nid2sn(nid), value);
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	if (ok != 1)
		return kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot add extension %s", OBJ_nid2sn(nid));
	return 0;
}

static int
kh_mint_extensions(X509 *x, const struct kh_mint_request *req, kh_error *err)
{
	X509V3_CTX ctx;
	bool rsa = EVP_PKEY_get_base_id(req->session_key) == EVP_PKEY_RSA;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, req->issuer_cert, x, NULL, NULL, 0);
	if (kh_add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE", err) != 0 ||
	    kh_add_ext(x, &ctx, NID_key_usage,
		       rsa ? "critical,digitalSignature,keyEncipherment" : "critical,digitalSignature",
		       err) != 0 ||
	    kh_add_ext(x, &ctx, NID_ext_key_usage, "clientAuth", err) != 0 ||
	    kh_add_ext(x, &ctx, NID_subject_key_identifier, "hash", err) != 0 ||
	    /* keyid when the issuer has an SKI, issuer name + serial otherwise */
	    kh_add_ext(x, &ctx, NID_authority_key_identifier, "keyid,issuer", err) != 0)
		return -1;
	return 0;
}

/* SHA-256, or a hash matching the strength of larger EC issuer keys. */
static const EVP_MD *
kh_issuer_digest(EVP_PKEY *key)
{
	int bits = EVP_PKEY_get_bits(key);

	if (EVP_PKEY_get_base_id(key) == EVP_PKEY_EC) {
		if (bits > 384)
			return EVP_sha512();
		if (bits > 256)
			return EVP_sha384();
	}
	return EVP_sha256();
}

static int
kh_mint_check(const struct kh_mint_request *req, time_t now, kh_error *err)
{
	size_t i;

	if (req == NULL || req->issuer_cert == NULL || req->issuer_key == NULL ||
	    req->session_key == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "minting needs an issuer certificate and key and a session key");
	if (req->username == NULL ||
	    !kh_printable((const unsigned char *)req->username, strlen(req->username), false))
		return kh_fail(err, KH_ERR_INPUT, "kube user name '%s' is empty or not printable ASCII",
			       req->username != NULL ? req->username : "");
	for (i = 0; i < req->ngroups; i++)
		if (req->groups[i] == NULL ||
		    !kh_printable((const unsigned char *)req->groups[i], strlen(req->groups[i]), true))
			return kh_fail(err, KH_ERR_INPUT, "group '%s' is empty or not printable ASCII",
				       req->groups[i] != NULL ? req->groups[i] : "");
	if (req->not_after <= now)
		return kh_fail(err, KH_ERR_INPUT, "the session would end before it starts");
	if (X509_cmp_time(X509_get0_notBefore(req->issuer_cert), &now) > 0 ||
	    X509_cmp_time(X509_get0_notAfter(req->issuer_cert), &now) < 0)
		return kh_fail(err, KH_ERR_EXPIRED, "the issuer certificate is not valid now; renew it");
	if (X509_cmp_time(X509_get0_notAfter(req->issuer_cert), (time_t *)&req->not_after) < 0)
		return kh_fail(err, KH_ERR_INPUT,
			       "the session would outlive the issuer certificate; end it by the issuer's notAfter");
	return 0;
}

int
kh_x509_mint_cert(const struct kh_mint_request *req, X509 **out, kh_error *err)
{
	time_t now = req != NULL && req->now != 0 ? req->now : time(NULL);
	X509 *x = NULL;
	int v;

	*out = NULL;
	if (kh_mint_check(req, now, err) != 0)
		return -1;
	ERR_clear_error();
	x = X509_new();
	if (x == NULL || X509_set_version(x, X509_VERSION_3) != 1) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "out of memory");
		goto fail;
	}
	if (kh_random_serial(x, err) != 0 || kh_mint_subject(x, req, err) != 0)
		goto fail;
	if (X509_set_issuer_name(x, X509_get_subject_name(req->issuer_cert)) != 1 ||
	    X509_time_adj_ex(X509_getm_notBefore(x), 0, -KH_X509_BACKDATE, &now) == NULL ||
	    ASN1_TIME_set(X509_getm_notAfter(x), req->not_after) == NULL ||
	    X509_set_pubkey(x, req->session_key) != 1) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot fill in the session certificate");
		goto fail;
	}
	if (kh_mint_extensions(x, req, err) != 0)
		goto fail;
	if (X509_sign(x, req->issuer_key, kh_issuer_digest(req->issuer_key)) <= 0) {
		kh_fail_ssl(err, KH_ERR_TOKEN, "the issuer key failed to sign the session certificate");
		goto fail;
	}
	/* A signature by the wrong key (issuer cert_file not matching the
	 * token) must fail here, not in every client later. */
	v = X509_verify(x, X509_get0_pubkey(req->issuer_cert));
	if (v != 1) {
		kh_fail_ssl(err, KH_ERR_CONFIG,
			    "the session certificate does not verify with the issuer certificate; "
			    "issuer cert_file and key do not match");
		goto fail;
	}
	*out = x;
	return 0;
fail:
	X509_free(x);
	return -1;
}

int
kh_x509_cert_to_pem(X509 *cert, char **pem, kh_error *err)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data;
	long n;

	*pem = NULL;
	if (b == NULL || PEM_write_bio_X509(b, cert) != 1 ||
	    (n = BIO_get_mem_data(b, &data)) <= 0) {
		BIO_free(b);
		return kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot PEM-encode a certificate");
	}
	*pem = strndup(data, (size_t)n);
	BIO_free(b);
	if (*pem == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	return 0;
}

int
kh_x509_mint(const struct kh_mint_request *req, char **pem, kh_error *err)
{
	X509 *x;
	int rc;

	*pem = NULL;
	if (kh_x509_mint_cert(req, &x, err) != 0)
		return -1;
	rc = kh_x509_cert_to_pem(x, pem, err);
	X509_free(x);
	return rc;
}

/* ---- session keys ---- */

EVP_PKEY *
kh_x509_keygen(enum kh_key_type type, kh_error *err)
{
	EVP_PKEY *k = NULL;

	ERR_clear_error();
	switch (type) {
	case KH_KEY_EC_P256:
		k = EVP_EC_gen("P-256");
		break;
	case KH_KEY_EC_P384:
		k = EVP_EC_gen("P-384");
		break;
	case KH_KEY_RSA_2048:
		k = EVP_RSA_gen(2048);
		break;
	case KH_KEY_RSA_3072:
		k = EVP_RSA_gen(3072);
		break;
	default:
		kh_fail(err, KH_ERR_INTERNAL, "unknown key type %d", (int)type);
		return NULL;
	}
	if (k == NULL)
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot generate a %s session key",
			    kh_key_type_name(type));
	return k;
}

int
kh_x509_key_to_pem(EVP_PKEY *key, char **pem, size_t *len, kh_error *err)
{
	/* The secure-memory BIO wipes its buffer on every reallocation and on
	 * free, so no copy of the key is left behind in freed heap. */
	BIO *b = BIO_new(BIO_s_secmem());
	BUF_MEM *bm = NULL;
	int rc = -1;

	*pem = NULL;
	*len = 0;
	if (b == NULL || PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1 ||
	    BIO_get_mem_ptr(b, &bm) != 1 || bm == NULL || bm->length == 0) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot PEM-encode the session key");
		goto out;
	}
	*pem = malloc(bm->length + 1);
	if (*pem == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	memcpy(*pem, bm->data, bm->length);
	(*pem)[bm->length] = '\0';
	*len = bm->length;
	rc = 0;
out:
	if (bm != NULL && bm->data != NULL)
		OPENSSL_cleanse(bm->data, bm->max);
	BIO_free(b);
	return rc;
}

int
kh_x509_not_after(const X509 *cert, time_t *t, kh_error *err)
{
	struct tm tm;

	if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) != 1)
		return kh_fail_ssl(err, KH_ERR_REFUSED, "certificate notAfter cannot be read");
	*t = timegm(&tm);
	return 0;
}

/* ---- issuer chain ---- */

X509 *
kh_x509_load_cert(const char *path, kh_error *err)
{
	BIO *b;
	X509 *x;

	ERR_clear_error();
	b = BIO_new_file(path, "r");
	if (b == NULL) {
		kh_fail_ssl(err, KH_ERR_CONFIG, "cannot open certificate file %s", path);
		return NULL;
	}
	x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	if (x == NULL)
		kh_fail_ssl(err, KH_ERR_CONFIG, "%s holds no PEM certificate", path);
	return x;
}

/* Read every PEM certificate; running out of them is the normal end. */
static int
kh_read_certs(BIO *b, const char *path, STACK_OF(X509) *sk, kh_error *err)
{
	X509 *x;
	unsigned long e;

	ERR_clear_error();
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		if (sk_X509_push(sk, x) <= 0) {
			X509_free(x);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
	}
	e = ERR_peek_last_error();
	if (ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE &&
	    sk_X509_num(sk) > 0) {
		ERR_clear_error();
		return 0;
	}
	if (sk_X509_num(sk) == 0)
		return kh_fail_ssl(err, KH_ERR_CONFIG, "%s holds no PEM certificate", path);
	return kh_fail_ssl(err, KH_ERR_CONFIG, "%s: certificate %d is malformed", path,
			   sk_X509_num(sk) + 1);
}

static int
kh_check_issuer(X509 *issuer, EVP_PKEY *key, const char *path, kh_error *err)
{
	if (X509_check_ca(issuer) < 1)
		return kh_fail(err, KH_ERR_CONFIG,
			       "the first certificate in %s is not a CA certificate (basicConstraints CA:TRUE); "
			       "it cannot issue session certificates", path);
	if (key != NULL && EVP_PKEY_eq(X509_get0_pubkey(issuer), key) != 1) {
		ERR_clear_error();
		return kh_fail(err, KH_ERR_CONFIG,
			       "the first certificate in %s is not the issuer key's certificate", path);
	}
	return 0;
}

static int
kh_chain_pem(STACK_OF(X509) *sk, char **pem, kh_error *err)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data;
	long n;
	int i;

	*pem = NULL;
	if (b == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	for (i = 0; i < sk_X509_num(sk); i++) {
		if (PEM_write_bio_X509(b, sk_X509_value(sk, i)) != 1) {
			BIO_free(b);
			return kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot PEM-encode the chain");
		}
	}
	n = BIO_get_mem_data(b, &data);
	*pem = n > 0 ? strndup(data, (size_t)n) : NULL;
	BIO_free(b);
	if (*pem == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	return 0;
}

int
kh_x509_load_chain(const char *path, EVP_PKEY *issuer_key, STACK_OF(X509) **chain,
		   char **pem, kh_error *err)
{
	STACK_OF(X509) *sk = NULL;
	BIO *b = NULL;
	int rc = -1;

	if (chain != NULL)
		*chain = NULL;
	if (pem != NULL)
		*pem = NULL;
	ERR_clear_error();
	b = BIO_new_file(path, "r");
	if (b == NULL) {
		kh_fail_ssl(err, KH_ERR_CONFIG, "cannot open issuer certificate file %s", path);
		goto out;
	}
	sk = sk_X509_new_null();
	if (sk == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	if (kh_read_certs(b, path, sk, err) != 0 ||
	    kh_check_issuer(sk_X509_value(sk, 0), issuer_key, path, err) != 0)
		goto out;
	if (pem != NULL && kh_chain_pem(sk, pem, err) != 0)
		goto out;
	if (chain != NULL) {
		*chain = sk;
		sk = NULL;
	}
	rc = 0;
out:
	sk_X509_pop_free(sk, X509_free);
	BIO_free(b);
	return rc;
}
