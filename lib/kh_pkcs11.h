/*
 * kh_pkcs11 — the PKCS#11 tokens kubehsm talks to, through libp11.
 *
 * One struct kh_p11 is one loaded module with (at most) one selected token.
 * There is no global state: everything a handle creates is released by
 * kh_p11_close, so the PAM module can be loaded and unloaded any number of
 * times.  Keys and certificates handed out are independent references the
 * caller frees (EVP_PKEY_free / X509_free) — before kh_p11_close for keys,
 * since a token key signs through the module.
 *
 * PINs are passed in, used for exactly one C_Login and never copied by this
 * code.  (libp11 itself keeps a copy inside the slot to re-login after fork;
 * it is wiped when the handle is closed.)
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set; pointer functions return NULL with err set;
 * kh_p11_pin_library returns false when it could not pin (no err).
 */
#ifndef KH_PKCS11_H
#define KH_PKCS11_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/kh_error.h"

/* PIN state the token reports before login (CK_TOKEN_INFO flags). */
#define KH_P11_PIN_COUNT_LOW      0x01u  /* a wrong PIN was entered recently */
#define KH_P11_PIN_FINAL_TRY      0x02u  /* one more wrong PIN locks the token */
#define KH_P11_PIN_LOCKED         0x04u  /* C_Login will not be tried */
#define KH_P11_PIN_TO_BE_CHANGED  0x08u

#define KH_P11_PIN_MAX 256   /* longest PIN a pin file may hold */

struct kh_p11;

struct kh_p11_token_info {
	char *label;       /* as the token reports it */
	char *serial;      /* token serial number ("" if none) */
	unsigned pin_flags;  /* KH_P11_PIN_* */
};

/* A parsed "pkcs11:" URI; only the attributes kubehsm needs. */
struct kh_p11_uri {
	char *token;       /* token= (label), NULL if absent */
	char *object;      /* object= (CKA_LABEL), NULL if absent */
	char *serial;      /* serial=, NULL if absent */
	unsigned char *id; /* id= (CKA_ID bytes), NULL if absent */
	size_t id_len;
};

/* Load and initialise the module at `path`. NULL + err if it cannot. */
struct kh_p11 *kh_p11_open(const char *path, kh_error *err);

/* Log out, release every libp11 object, finalise and unload. NULL is fine. */
void kh_p11_close(struct kh_p11 *p);

/*
 * Select the token whose label is exactly `label` and report its serial and
 * PIN flags (read fresh from the module).  No token → KH_ERR_NOTFOUND; two
 * tokens with that label → KH_ERR_REFUSED.  `info` may be NULL; otherwise
 * free it with kh_p11_token_info_clear.
 */
int kh_p11_find_token(struct kh_p11 *p, const char *label,
		      struct kh_p11_token_info *info, kh_error *err);

void kh_p11_token_info_clear(struct kh_p11_token_info *info);

/*
 * The certificate of the key named by key_label (CKA_LABEL) and/or key_id
 * (hex CKA_ID); "" or NULL means "don't match on this".  Works before login
 * (certificates are public objects).  Exactly one match or an error.
 */
int kh_p11_find_cert(struct kh_p11 *p, const char *key_label,
		     const char *key_id, X509 **cert, kh_error *err);

/*
 * C_Login as the user on the selected token — exactly once.  Refuses with
 * KH_ERR_LOCKED (without calling C_Login) when the token reports the PIN
 * locked; a wrong PIN is KH_ERR_AUTH.  The PIN is not copied.
 */
int kh_p11_login(struct kh_p11 *p, const char *pin, kh_error *err);

/* The private key (after login), same matching rules as kh_p11_find_cert. */
int kh_p11_find_key(struct kh_p11 *p, const char *key_label,
		    const char *key_id, EVP_PKEY **key, kh_error *err);

/*
 * Proof of possession: sign 32 fresh random bytes with `key` and verify the
 * signature with the public key of `cert`.  KH_ERR_AUTH if it does not
 * verify (the key on the token is not the certificate's).
 */
int kh_p11_prove_possession(EVP_PKEY *key, X509 *cert, kh_error *err);

/* Parse a PKCS#11 URI (RFC 7512 path attributes token, object, id, serial,
 * percent-decoded; anything else is refused). Free with kh_p11_uri_clear. */
int kh_p11_uri_parse(const char *uri, struct kh_p11_uri *out, kh_error *err);
void kh_p11_uri_clear(struct kh_p11_uri *uri);

/* "pkcs11:token=...;object=...;id=...;serial=..." with RFC 7512 escaping;
 * NULL/"" parts are left out. Caller frees. */
char *kh_p11_uri_format(const char *token, const char *object,
			const char *key_id_hex, const char *serial,
			kh_error *err);

/*
 * The issuer key named by `uri` on the module at `module`, logged in with
 * `pin`.  On success *handle keeps the module session open for as long as
 * the key is used: free the key first, then kh_p11_close(*handle).
 */
int kh_p11_open_uri_key(const char *module, const char *uri, const char *pin,
			struct kh_p11 **handle, EVP_PKEY **key, kh_error *err);

/*
 * Read a PIN file: no symlink, a regular file owned by the reading (effective)
 * uid with no group/other access — checked on the descriptor read, since the
 * path may have changed since the policy loader checked it — at most
 * KH_P11_PIN_MAX bytes, one trailing newline stripped, no NUL or other
 * newline inside.  *pin is freed with kh_secure_strfree.
 */
int kh_p11_read_pin_file(const char *path, char **pin, kh_error *err);

/* Hex (upper or lower, even length) → bytes. Caller frees *out. */
int kh_p11_hex_decode(const char *hex, unsigned char **out, size_t *len,
		      kh_error *err);

/* Keep libp11 mapped once loaded (for a dlclose'd PAM module). */
bool kh_p11_pin_library(void);

#endif
