#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libp11.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/rand.h>

#include "lib/kh_dl.h"
#include "lib/kh_mem.h"
#include "lib/kh_pkcs11.h"

/*
 * The few PKCS#11 return values we act on.  libp11 reports a failed call as
 * an OpenSSL error whose library is ERR_get_CKR_code() and whose reason is
 * the CK_RV; the values are fixed by the PKCS#11 standard, so there is no
 * need to pull in a pkcs11.h just for them.
 */
#define KH_CKR_DEVICE_REMOVED     0x32ul
#define KH_CKR_PIN_INCORRECT      0xa0ul
#define KH_CKR_PIN_INVALID        0xa1ul
#define KH_CKR_PIN_LEN_RANGE      0xa2ul
#define KH_CKR_PIN_EXPIRED        0xa3ul
#define KH_CKR_PIN_LOCKED         0xa4ul
#define KH_CKR_TOKEN_NOT_PRESENT  0xe0ul

#define KH_CHALLENGE_LEN 32

struct kh_p11 {
	char *path;
	PKCS11_CTX *ctx;
	bool loaded;
	PKCS11_SLOT *slots;
	unsigned int nslots;
	PKCS11_SLOT *slot;      /* the selected token's slot, inside slots */
	bool logged_in;
};

/* The CK_RV behind the last libp11 failure, 0 if it was not a PKCS#11 one. */
static unsigned long
kh_p11_last_ckr(void)
{
	unsigned long e = ERR_peek_last_error();

	if (e == 0 || ERR_GET_LIB(e) != ERR_get_CKR_code())
		return 0;
	return (unsigned long)ERR_GET_REASON(e);
}

static bool
kh_p11_token_gone(unsigned long ckr)
{
	return ckr == KH_CKR_TOKEN_NOT_PRESENT || ckr == KH_CKR_DEVICE_REMOVED;
}

/* A failed token operation: "removed" when the token went away, else the
 * library's own reason. */
static int
kh_p11_fail_op(kh_error *err, const char *label, const char *what)
{
	if (kh_p11_token_gone(kh_p11_last_ckr())) {
		ERR_clear_error();
		return kh_fail(err, KH_ERR_NOTFOUND, "token '%s' was removed", label);
	}
	return kh_fail_ssl(err, KH_ERR_TOKEN, "token '%s': %s", label, what);
}

struct kh_p11 *
kh_p11_open(const char *path, kh_error *err)
{
	struct kh_p11 *p;
	void *dl;

	if (path == NULL || path[0] == '\0') {
		kh_fail(err, KH_ERR_CONFIG, "no PKCS#11 module configured");
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL || (p->path = strdup(path)) == NULL) {
		free(p);
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	p->ctx = PKCS11_CTX_new();
	if (p->ctx == NULL) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot create a PKCS#11 context");
		goto fail;
	}
	/* Try the module ourselves first: libp11 writes dlerror() to stderr
	 * (the PAM host's terminal) and reports only "unable to load".  Our
	 * handle also keeps the library mapped while libp11 loads it. */
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (dl == NULL) {
		const char *why = dlerror();

		kh_fail(err, KH_ERR_TOKEN, "cannot load PKCS#11 module %s: %s", path,
			why != NULL ? why : "unknown error");
		goto fail;
	}
	if (dlsym(dl, "C_GetFunctionList") == NULL) {
		kh_fail(err, KH_ERR_TOKEN, "%s is not a PKCS#11 module (no C_GetFunctionList)", path);
		dlclose(dl);
		goto fail;
	}
	ERR_clear_error();
	if (PKCS11_CTX_load(p->ctx, path) != 0) {
		kh_fail_ssl(err, KH_ERR_TOKEN, "cannot initialise PKCS#11 module %s", path);
		dlclose(dl);
		goto fail;
	}
	dlclose(dl);
	p->loaded = true;
	return p;
fail:
	kh_p11_close(p);
	return NULL;
}

void
kh_p11_close(struct kh_p11 *p)
{
	if (p == NULL)
		return;
	/* Logging out first keeps the token from staying unlocked in a
	 * module that outlives us (proxy modules, p11-kit). */
	if (p->logged_in && p->slot != NULL)
		(void)PKCS11_logout(p->slot);
	if (p->slots != NULL)
		PKCS11_release_all_slots(p->ctx, p->slots, p->nslots);
	if (p->loaded)
		PKCS11_CTX_unload(p->ctx);
	if (p->ctx != NULL)
		PKCS11_CTX_free(p->ctx);
	free(p->path);
	free(p);
	/* libp11 and the module leave their failures in the queue: they must
	 * not surface in an unrelated later kh_fail_ssl. */
	ERR_clear_error();
}

void
kh_p11_token_info_clear(struct kh_p11_token_info *info)
{
	if (info == NULL)
		return;
	free(info->label);
	free(info->serial);
	memset(info, 0, sizeof(*info));
}

static unsigned
kh_p11_pin_flags(const PKCS11_TOKEN *tok)
{
	unsigned f = 0;

	if (tok->userPinCountLow)
		f |= KH_P11_PIN_COUNT_LOW;
	if (tok->userPinFinalTry)
		f |= KH_P11_PIN_FINAL_TRY;
	if (tok->userPinLocked)
		f |= KH_P11_PIN_LOCKED;
	if (tok->userPinToBeChanged)
		f |= KH_P11_PIN_TO_BE_CHANGED;
	return f;
}

int
kh_p11_find_token(struct kh_p11 *p, const char *label,
		  struct kh_p11_token_info *info, kh_error *err)
{
	PKCS11_SLOT *found = NULL;
	unsigned int i, n = 0;

	if (p == NULL || label == NULL || label[0] == '\0')
		return kh_fail(err, KH_ERR_INPUT, "no token label given");
	if (p->logged_in)
		return kh_fail(err, KH_ERR_INTERNAL, "a token is already logged in on this handle");
	/* Read the slot list afresh: the token may have been inserted since
	 * the module was loaded, and the PIN flags must be current.
	 * (PKCS11_update_slots would do, but crashes in libp11 0.4.12.) */
	p->slot = NULL;
	if (p->slots != NULL)
		PKCS11_release_all_slots(p->ctx, p->slots, p->nslots);
	p->slots = NULL;
	p->nslots = 0;
	ERR_clear_error();
	if (PKCS11_enumerate_slots(p->ctx, &p->slots, &p->nslots) != 0)
		return kh_fail_ssl(err, KH_ERR_TOKEN, "PKCS#11 module %s: cannot list slots", p->path);
	for (i = 0; i < p->nslots; i++) {
		PKCS11_TOKEN *tok = p->slots[i].token;

		if (tok == NULL || !tok->initialized || tok->label == NULL)
			continue;
		if (strcmp(tok->label, label) == 0) {
			found = &p->slots[i];
			n++;
		}
	}
	if (n == 0)
		return kh_fail(err, KH_ERR_NOTFOUND, "no token labelled '%s' is present", label);
	if (n > 1)
		return kh_fail(err, KH_ERR_REFUSED,
			       "%u tokens are labelled '%s'; remove all but one", n, label);
	p->slot = found;
	if (info != NULL) {
		memset(info, 0, sizeof(*info));
		info->label = strdup(found->token->label);
		info->serial = strdup(found->token->serialnr != NULL ? found->token->serialnr : "");
		info->pin_flags = kh_p11_pin_flags(found->token);
		if (info->label == NULL || info->serial == NULL) {
			kh_p11_token_info_clear(info);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
	}
	return 0;
}

int
kh_p11_hex_decode(const char *hex, unsigned char **out, size_t *len,
		  kh_error *err)
{
	long n;
	unsigned char *buf;

	*out = NULL;
	*len = 0;
	if (hex == NULL || hex[0] == '\0' || strlen(hex) % 2 != 0 || strchr(hex, ':') != NULL)
		return kh_fail(err, KH_ERR_INPUT, "key id '%s' is not an even-length hex string",
			       hex != NULL ? hex : "");
	buf = OPENSSL_hexstr2buf(hex, &n);
	if (buf == NULL) {
		ERR_clear_error();
		return kh_fail(err, KH_ERR_INPUT, "key id '%s' is not a hex string", hex);
	}
	/* Hand back malloc'ed memory so callers free with free(). */
	*out = malloc((size_t)n);
	if (*out == NULL) {
		OPENSSL_free(buf);
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	}
	memcpy(*out, buf, (size_t)n);
	OPENSSL_free(buf);
	*len = (size_t)n;
	return 0;
}

/* What identifies the user's key and certificate on the token. */
struct kh_p11_match {
	const char *label;          /* NULL = any */
	const unsigned char *id;    /* NULL = any */
	size_t id_len;
};

static bool
kh_p11_matches(const struct kh_p11_match *m, const char *label,
	       const unsigned char *id, size_t id_len)
{
	if (m->label != NULL && (label == NULL || strcmp(label, m->label) != 0))
		return false;
	if (m->id != NULL && (id_len != m->id_len || memcmp(id, m->id, id_len) != 0))
		return false;
	return true;
}

static const char *
kh_p11_match_name(const struct kh_p11_match *m)
{
	return m->label != NULL ? m->label : "(by id)";
}

static int
kh_p11_need_token(const struct kh_p11 *p, kh_error *err)
{
	if (p == NULL || p->slot == NULL || p->slot->token == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "no token selected (kh_p11_find_token first)");
	return 0;
}

static int
kh_p11_cert_by_match(struct kh_p11 *p, const struct kh_p11_match *m,
		     X509 **cert, kh_error *err)
{
	PKCS11_CERT *certs = NULL, *found = NULL;
	unsigned int i, n = 0, hits = 0;

	*cert = NULL;
	if (kh_p11_need_token(p, err) != 0)
		return -1;
	ERR_clear_error();
	if (PKCS11_enumerate_certs(p->slot->token, &certs, &n) != 0)
		return kh_p11_fail_op(err, p->slot->token->label, "cannot list certificates");
	for (i = 0; i < n; i++) {
		if (kh_p11_matches(m, certs[i].label, certs[i].id, certs[i].id_len)) {
			found = &certs[i];
			hits++;
		}
	}
	if (hits == 0)
		return kh_fail(err, KH_ERR_NOTFOUND, "token '%s' holds no certificate for key %s",
			       p->slot->token->label, kh_p11_match_name(m));
	if (hits > 1)
		return kh_fail(err, KH_ERR_REFUSED,
			       "token '%s' holds %u certificates for key %s; it must be exactly one",
			       p->slot->token->label, hits, kh_p11_match_name(m));
	if (found->x509 == NULL || X509_up_ref(found->x509) != 1)
		return kh_fail(err, KH_ERR_TOKEN, "token '%s': certificate %s cannot be read",
			       p->slot->token->label, kh_p11_match_name(m));
	*cert = found->x509;
	return 0;
}

static int
kh_p11_key_by_match(struct kh_p11 *p, const struct kh_p11_match *m,
		    EVP_PKEY **key, kh_error *err)
{
	PKCS11_KEY *keys = NULL, *found = NULL;
	unsigned int i, n = 0, hits = 0;

	*key = NULL;
	if (kh_p11_need_token(p, err) != 0)
		return -1;
	if (!p->logged_in)
		return kh_fail(err, KH_ERR_INTERNAL, "token '%s': not logged in", p->slot->token->label);
	ERR_clear_error();
	if (PKCS11_enumerate_keys(p->slot->token, &keys, &n) != 0)
		return kh_p11_fail_op(err, p->slot->token->label, "cannot list keys");
	for (i = 0; i < n; i++) {
		if (keys[i].isPrivate &&
		    kh_p11_matches(m, keys[i].label, keys[i].id, keys[i].id_len)) {
			found = &keys[i];
			hits++;
		}
	}
	if (hits == 0)
		return kh_fail(err, KH_ERR_NOTFOUND, "token '%s' holds no private key %s",
			       p->slot->token->label, kh_p11_match_name(m));
	if (hits > 1)
		return kh_fail(err, KH_ERR_REFUSED,
			       "token '%s' holds %u private keys %s; it must be exactly one",
			       p->slot->token->label, hits, kh_p11_match_name(m));
	/* libp11 returns its cached EVP_PKEY with one more reference: ours. */
	*key = PKCS11_get_private_key(found);
	if (*key == NULL)
		return kh_p11_fail_op(err, p->slot->token->label, "the key cannot be used");
	return 0;
}

/* Turn the caller's label / hex id into a match; *id_buf is freed by the caller. */
static int
kh_p11_match_init(struct kh_p11_match *m, const char *key_label, const char *key_id,
		  unsigned char **id_buf, kh_error *err)
{
	memset(m, 0, sizeof(*m));
	*id_buf = NULL;
	if (key_label != NULL && key_label[0] != '\0')
		m->label = key_label;
	if (key_id != NULL && key_id[0] != '\0') {
		if (kh_p11_hex_decode(key_id, id_buf, &m->id_len, err) != 0)
			return -1;
		m->id = *id_buf;
	}
	if (m->label == NULL && m->id == NULL)
		return kh_fail(err, KH_ERR_CONFIG, "neither a key label nor a key id is configured");
	return 0;
}

int
kh_p11_find_cert(struct kh_p11 *p, const char *key_label, const char *key_id,
		 X509 **cert, kh_error *err)
{
	struct kh_p11_match m;
	unsigned char *id = NULL;
	int rc;

	*cert = NULL;
	if (kh_p11_match_init(&m, key_label, key_id, &id, err) != 0)
		return -1;
	rc = kh_p11_cert_by_match(p, &m, cert, err);
	free(id);
	return rc;
}

int
kh_p11_find_key(struct kh_p11 *p, const char *key_label, const char *key_id,
		EVP_PKEY **key, kh_error *err)
{
	struct kh_p11_match m;
	unsigned char *id = NULL;
	int rc;

	*key = NULL;
	if (kh_p11_match_init(&m, key_label, key_id, &id, err) != 0)
		return -1;
	rc = kh_p11_key_by_match(p, &m, key, err);
	free(id);
	return rc;
}

int
kh_p11_login(struct kh_p11 *p, const char *pin, kh_error *err)
{
	const char *label;
	unsigned long ckr;

	if (kh_p11_need_token(p, err) != 0)
		return -1;
	label = p->slot->token->label;
	if (pin == NULL)
		return kh_fail(err, KH_ERR_INPUT, "no PIN given for token '%s'", label);
	if (p->logged_in)
		return 0;
	/* The flags were read by kh_p11_find_token just before: a locked PIN
	 * must not cost the user (or an attacker) another try. */
	if (p->slot->token->userPinLocked)
		return kh_fail(err, KH_ERR_LOCKED,
			       "token '%s' is locked (too many wrong PINs); ask an administrator to unlock it",
			       label);
	ERR_clear_error();
	if (PKCS11_login(p->slot, 0, pin) == 0) {
		p->logged_in = true;
		return 0;
	}
	ckr = kh_p11_last_ckr();
	ERR_clear_error();
	switch (ckr) {
	case KH_CKR_PIN_INCORRECT:
	case KH_CKR_PIN_INVALID:
	case KH_CKR_PIN_LEN_RANGE:
		return kh_fail(err, KH_ERR_AUTH, "wrong PIN for token '%s'", label);
	case KH_CKR_PIN_LOCKED:
		return kh_fail(err, KH_ERR_LOCKED, "token '%s' is locked (too many wrong PINs)", label);
	case KH_CKR_PIN_EXPIRED:
		return kh_fail(err, KH_ERR_AUTH, "the PIN of token '%s' has expired; change it first", label);
	default:
		if (kh_p11_token_gone(ckr))
			return kh_fail(err, KH_ERR_NOTFOUND, "token '%s' was removed", label);
		return kh_fail(err, KH_ERR_TOKEN, "token '%s': login failed (CKR 0x%lx)", label, ckr);
	}
}

int
kh_p11_prove_possession(EVP_PKEY *key, X509 *cert, kh_error *err)
{
	unsigned char challenge[KH_CHALLENGE_LEN];
	unsigned char *sig = NULL;
	size_t siglen = 0;
	EVP_MD_CTX *md = NULL;
	EVP_PKEY *pub;
	int rc = -1, v;

	if (key == NULL || cert == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "proof of possession needs a key and a certificate");
	pub = X509_get0_pubkey(cert);
	if (pub == NULL)
		return kh_fail_ssl(err, KH_ERR_REFUSED, "the certificate's public key cannot be read");
	if (RAND_bytes(challenge, sizeof(challenge)) != 1)
		return kh_fail_ssl(err, KH_ERR_INTERNAL, "no random bytes for the challenge");
	ERR_clear_error();
	md = EVP_MD_CTX_new();
	if (md == NULL || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(md, NULL, &siglen, challenge, sizeof(challenge)) != 1) {
		kh_fail_ssl(err, KH_ERR_TOKEN, "the token cannot sign");
		goto out;
	}
	sig = OPENSSL_malloc(siglen);
	if (sig == NULL || EVP_DigestSign(md, sig, &siglen, challenge, sizeof(challenge)) != 1) {
		if (kh_p11_token_gone(kh_p11_last_ckr())) {
			ERR_clear_error();
			kh_fail(err, KH_ERR_NOTFOUND, "the token was removed while signing");
		} else {
			kh_fail_ssl(err, KH_ERR_TOKEN, "the token failed to sign the challenge");
		}
		goto out;
	}
	EVP_MD_CTX_free(md);
	md = EVP_MD_CTX_new();
	if (md == NULL || EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pub) != 1) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot set up signature verification");
		goto out;
	}
	v = EVP_DigestVerify(md, sig, siglen, challenge, sizeof(challenge));
	if (v != 1) {
		kh_fail(err, KH_ERR_AUTH,
			"proof of possession failed: the token key does not match the certificate");
		ERR_clear_error();
		goto out;
	}
	rc = 0;
out:
	EVP_MD_CTX_free(md);
	OPENSSL_free(sig);
	return rc;
}

/* ---- PKCS#11 URIs (RFC 7512) ---- */

void
kh_p11_uri_clear(struct kh_p11_uri *uri)
{
	if (uri == NULL)
		return;
	free(uri->token);
	free(uri->object);
	free(uri->serial);
	free(uri->id);
	memset(uri, 0, sizeof(*uri));
}

static int
kh_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode [s, s+n) into a new buffer (NUL-terminated for text use). */
static int
kh_pct_decode(const char *s, size_t n, unsigned char **out, size_t *outlen,
	      const char *what, kh_error *err)
{
	unsigned char *buf = malloc(n + 1);
	size_t i, j = 0;

	if (buf == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	for (i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi = i + 2 < n ? kh_hexval(s[i + 1]) : -1;
			int lo = i + 2 < n ? kh_hexval(s[i + 2]) : -1;

			if (hi < 0 || lo < 0) {
				free(buf);
				return kh_fail(err, KH_ERR_CONFIG,
					       "PKCS#11 URI: bad percent escape in '%s'", what);
			}
			buf[j++] = (unsigned char)(hi << 4 | lo);
			i += 2;
		} else {
			buf[j++] = (unsigned char)s[i];
		}
	}
	buf[j] = '\0';
	*out = buf;
	*outlen = j;
	return 0;
}

/* Decode a text attribute: no NUL may hide inside. */
static int
kh_uri_text(const char *v, size_t n, char **dst, const char *name, kh_error *err)
{
	unsigned char *buf;
	size_t len;

	if (*dst != NULL)
		return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: '%s' given twice", name);
	if (kh_pct_decode(v, n, &buf, &len, name, err) != 0)
		return -1;
	if (len == 0 || memchr(buf, '\0', len) != NULL) {
		free(buf);
		return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: '%s' is empty or holds a NUL", name);
	}
	*dst = (char *)buf;
	return 0;
}

static int
kh_uri_attr(struct kh_p11_uri *u, const char *attr, size_t n, kh_error *err)
{
	const char *eq = memchr(attr, '=', n);
	size_t klen, vlen;
	const char *v;
	unsigned char *buf;
	size_t len;

	if (eq == NULL)
		return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: attribute '%.*s' has no '='",
			       (int)(n > 64 ? 64 : n), attr);
	klen = (size_t)(eq - attr);
	v = eq + 1;
	vlen = n - klen - 1;
#define KH_IS(k) (klen == strlen(k) && strncmp(attr, (k), klen) == 0)
	if (KH_IS("token"))
		return kh_uri_text(v, vlen, &u->token, "token", err);
	if (KH_IS("object"))
		return kh_uri_text(v, vlen, &u->object, "object", err);
	if (KH_IS("serial"))
		return kh_uri_text(v, vlen, &u->serial, "serial", err);
	if (KH_IS("id")) {
		if (u->id != NULL)
			return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: 'id' given twice");
		if (kh_pct_decode(v, vlen, &buf, &len, "id", err) != 0)
			return -1;
		if (len == 0) {
			free(buf);
			return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: 'id' is empty");
		}
		u->id = buf;
		u->id_len = len;
		return 0;
	}
	if (KH_IS("type")) {
		/* Only a private key makes sense for the issuer. */
		if (vlen == strlen("private") && strncmp(v, "private", vlen) == 0)
			return 0;
		return kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI: type must be 'private'");
	}
#undef KH_IS
	return kh_fail(err, KH_ERR_CONFIG,
		       "PKCS#11 URI: unsupported attribute '%.*s' (use token, object, id, serial)",
		       (int)(klen > 64 ? 64 : klen), attr);
}

int
kh_p11_uri_parse(const char *uri, struct kh_p11_uri *out, kh_error *err)
{
	const char *s, *end;

	memset(out, 0, sizeof(*out));
	if (uri == NULL || strncasecmp(uri, "pkcs11:", 7) != 0)
		return kh_fail(err, KH_ERR_CONFIG, "'%s' is not a PKCS#11 URI (pkcs11:...)",
			       uri != NULL ? uri : "");
	s = uri + 7;
	/* Query attributes (pin-value, pin-source, module-path) would move the
	 * PIN or the module into the URI: those come from the policy instead. */
	if (strchr(s, '?') != NULL || strchr(s, '#') != NULL)
		return kh_fail(err, KH_ERR_CONFIG,
			       "PKCS#11 URI '%s': query attributes are not supported", uri);
	while (*s != '\0') {
		end = strchr(s, ';');
		if (end == NULL)
			end = s + strlen(s);
		if (end == s) {
			kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI '%s': empty attribute", uri);
			goto fail;
		}
		if (kh_uri_attr(out, s, (size_t)(end - s), err) != 0)
			goto fail;
		s = *end == ';' ? end + 1 : end;
	}
	if (out->token == NULL) {
		kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI '%s' names no token (token=...)", uri);
		goto fail;
	}
	if (out->object == NULL && out->id == NULL) {
		kh_fail(err, KH_ERR_CONFIG, "PKCS#11 URI '%s' names no key (object=... or id=...)", uri);
		goto fail;
	}
	return 0;
fail:
	kh_p11_uri_clear(out);
	return -1;
}

/* RFC 7512 pchar without escaping: unreserved characters. */
static bool
kh_uri_plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

static int
kh_uri_append(BIO *b, bool *first, const char *name, const unsigned char *v, size_t n,
	      bool all_escaped)
{
	size_t i;

	if (BIO_printf(b, "%s%s=", *first ? "" : ";", name) <= 0)
		return -1;
	*first = false;
	for (i = 0; i < n; i++) {
		if (!all_escaped && kh_uri_plain(v[i])) {
			if (BIO_write(b, &v[i], 1) != 1)
				return -1;
		} else if (BIO_printf(b, "%%%02X", v[i]) <= 0) {
			return -1;
		}
	}
	return 0;
}

char *
kh_p11_uri_format(const char *token, const char *object, const char *key_id_hex,
		  const char *serial, kh_error *err)
{
	BIO *b = BIO_new(BIO_s_mem());
	unsigned char *id = NULL;
	size_t idlen = 0;
	char *data, *out = NULL;
	bool first = true;
	long n;

	if (b == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	if (key_id_hex != NULL && key_id_hex[0] != '\0' &&
	    kh_p11_hex_decode(key_id_hex, &id, &idlen, err) != 0)
		goto out;
	if (BIO_puts(b, "pkcs11:") != 7 ||
	    (token != NULL && token[0] != '\0' &&
	     kh_uri_append(b, &first, "token", (const unsigned char *)token, strlen(token), false) != 0) ||
	    (object != NULL && object[0] != '\0' &&
	     kh_uri_append(b, &first, "object", (const unsigned char *)object, strlen(object), false) != 0) ||
	    (id != NULL && kh_uri_append(b, &first, "id", id, idlen, true) != 0) ||
	    (serial != NULL && serial[0] != '\0' &&
	     kh_uri_append(b, &first, "serial", (const unsigned char *)serial, strlen(serial), false) != 0)) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	n = BIO_get_mem_data(b, &data);
	out = n > 0 ? strndup(data, (size_t)n) : NULL;
	if (out == NULL)
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
out:
	free(id);
	BIO_free(b);
	return out;
}

int
kh_p11_open_uri_key(const char *module, const char *uri, const char *pin,
		    struct kh_p11 **handle, EVP_PKEY **key, kh_error *err)
{
	struct kh_p11_uri u;
	struct kh_p11_token_info info = { 0 };
	struct kh_p11_match m;
	struct kh_p11 *p = NULL;
	int rc = -1;

	*handle = NULL;
	*key = NULL;
	if (kh_p11_uri_parse(uri, &u, err) != 0)
		return -1;
	p = kh_p11_open(module, err);
	if (p == NULL || kh_p11_find_token(p, u.token, &info, err) != 0)
		goto out;
	if (u.serial != NULL && strcmp(u.serial, info.serial) != 0) {
		kh_fail(err, KH_ERR_NOTFOUND, "token '%s' has serial %s, not %s as %s says",
			u.token, info.serial, u.serial, uri);
		goto out;
	}
	if (kh_p11_login(p, pin, err) != 0)
		goto out;
	m.label = u.object;
	m.id = u.id;
	m.id_len = u.id_len;
	if (kh_p11_key_by_match(p, &m, key, err) != 0)
		goto out;
	*handle = p;
	p = NULL;
	rc = 0;
out:
	kh_p11_close(p);
	kh_p11_token_info_clear(&info);
	kh_p11_uri_clear(&u);
	return rc;
}

/* ---- PIN files ---- */

int
kh_p11_read_pin_file(const char *path, char **pin, kh_error *err)
{
	/* Room for the longest PIN, its newline, and one byte to see overlong files. */
	const size_t cap = KH_P11_PIN_MAX + 2;
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	ssize_t r;
	int fd, rc = -1;

	*pin = NULL;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return kh_fail(err, errno == ELOOP ? KH_ERR_PERM : KH_ERR_CONFIG,
			       "PIN file %s: %s%s", path, strerror(errno),
			       errno == ELOOP ? " (symbolic links are refused)" : "");
	if (fstat(fd, &st) != 0) {
		kh_fail(err, KH_ERR_CONFIG, "PIN file %s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		kh_fail(err, KH_ERR_PERM, "PIN file %s is not a regular file", path);
		goto out;
	}
	/* The loader checked the path when it loaded the policy; this is the
	 * file actually read, which someone may have replaced since. */
	if (st.st_uid != geteuid()) {
		kh_fail(err, KH_ERR_PERM, "PIN file %s is owned by uid %lu, not by uid %lu "
			"that reads it", path, (unsigned long)st.st_uid, (unsigned long)geteuid());
		goto out;
	}
	if ((st.st_mode & 077) != 0) {
		kh_fail(err, KH_ERR_PERM, "PIN file %s has mode %04o: group/others could read "
			"the PIN; chmod 0600 %s", path, (unsigned int)(st.st_mode & 07777), path);
		goto out;
	}
	if (st.st_size > (off_t)(KH_P11_PIN_MAX + 1)) {
		kh_fail(err, KH_ERR_CONFIG, "PIN file %s is longer than %d bytes", path, KH_P11_PIN_MAX);
		goto out;
	}
	buf = malloc(cap + 1);
	if (buf == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	while (len < cap) {
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			kh_fail(err, KH_ERR_CONFIG, "PIN file %s: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len > KH_P11_PIN_MAX + 1) {
		kh_fail(err, KH_ERR_CONFIG, "PIN file %s is longer than %d bytes", path, KH_P11_PIN_MAX);
		goto out;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	if (len == 0 || len > KH_P11_PIN_MAX || memchr(buf, '\0', len) != NULL ||
	    memchr(buf, '\n', len) != NULL) {
		kh_fail(err, KH_ERR_CONFIG,
			"PIN file %s must hold one PIN of 1 to %d bytes on one line", path,
			KH_P11_PIN_MAX);
		goto out;
	}
	*pin = buf;
	buf = NULL;
	rc = 0;
out:
	if (buf != NULL)
		kh_secure_free(buf, cap + 1);
	(void)close(fd);
	return rc;
}

/*
 * libp11 0.4.12 allocates its OpenSSL EC and RSA method tables once per
 * load and never frees them: a PAM host that unloads it with the module at
 * every pam_end would lose them at every login.
 */
bool
kh_p11_pin_library(void)
{
	return kh_pin_library_of((const void *)PKCS11_CTX_new);
}
