/*
 * kh_pkcs11 — the PKCS#11 tokens kubehsm talks to: libp11 loads the module
 * and lists the slots (the users' tokens; the issuer's token is found with
 * C_GetSlotList and C_GetTokenInfo, kh_p11_use_uri_token); kubehsm's own
 * raw layer (kh_p11_raw.h) reads a token's certificates on a session it
 * then logs in on, finds exactly the key a caller names (one C_FindObjects,
 * whatever else the token holds), signs and logs out.
 *
 * One struct kh_p11 is one loaded module with (at most) one selected token.
 * There is no global state: everything a handle creates is released by
 * kh_p11_close, so the PAM module can be loaded and unloaded any number of
 * times.  Keys and certificates handed out are independent references the
 * caller frees (EVP_PKEY_free / X509_free) — before kh_p11_close for keys,
 * since a token key signs through the module.
 *
 * The PIN: kh_p11_login tries it exactly once.  Once the token has
 * accepted it, the handle keeps a copy until logout or close (then wiped),
 * for one purpose only: a key with CKA_ALWAYS_AUTHENTICATE asks for its
 * PIN again before every signature: the key's signing code
 * (kh_p11_raw_key.h) sends that copy and nothing else, so no library ever
 * reads a terminal, and the extra login cannot cost a try.  (The context
 * still has a UI method that answers with the copy only, lib/kh_p11_ui.h,
 * so that libp11 never falls back to OpenSSL's terminal UI.)
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

#include "lib/kh_env.h"
#include "lib/kh_error.h"
#include "lib/kh_p11_uri.h"

/* PIN state the token reports before login (CK_TOKEN_INFO flags). */
#define KH_P11_PIN_COUNT_LOW      0x01u  /* a wrong PIN was entered recently */
#define KH_P11_PIN_FINAL_TRY      0x02u  /* one more wrong PIN locks the token */
#define KH_P11_PIN_LOCKED         0x04u  /* C_Login will not be tried */
#define KH_P11_PIN_TO_BE_CHANGED  0x08u

#define KH_P11_PIN_MAX 256   /* longest PIN a pin file may hold */
#define KH_P11_ID_MAX  64    /* longest CKA_ID kubehsm compares */

struct kh_p11;

struct kh_p11_token_info {
	char *label;       /* as the token reports it */
	char *serial;      /* token serial number ("" if none) */
	unsigned pin_flags;  /* KH_P11_PIN_* */
};

/* A certificate object, read without logging in. */
struct kh_p11_cert {
	X509 *x509;              /* NULL: not an X.509 certificate OpenSSL reads */
	char *label;             /* CKA_LABEL, control characters replaced; "" if none */
	unsigned char id[KH_P11_ID_MAX];
	size_t id_len;           /* 0: no CKA_ID (or one longer than KH_P11_ID_MAX) */
};

/*
 * One slot as the module shows it, with its token.  Text is what the
 * module reports with trailing blanks cut and control characters replaced
 * ('?'): a label comes from whoever issued the card (OpenSC names a PIV
 * token after a certificate's CN) and ends up in prompts and logs.
 */
struct kh_p11_token {
	unsigned long slot_id;
	char *slot_description;
	char *slot_manufacturer;
	bool present;            /* a token is in the slot */
	bool initialized;        /* ... and initialised (a blank one is never used) */
	char *label, *manufacturer, *model, *serial;   /* "" when no token */
	unsigned pin_flags;      /* KH_P11_PIN_*, read now */
	bool certs_read;         /* kh_p11_read_certs has run */
	struct kh_p11_cert *certs;
	size_t ncerts;
	char *certs_error;       /* the certificates could not be listed: why */
	/* which of the handle's slots this is (kh_p11_use_token) */
	size_t index;
	unsigned generation;
};

/* What the token says of the private key with a given CKA_ID before (or
 * after) login. */
struct kh_p11_key_info {
	bool visible;            /* found: private keys may be CKA_PRIVATE */
	bool always_auth;        /* CKA_ALWAYS_AUTHENTICATE: a PIN per signature */
	unsigned count;          /* private keys with that CKA_ID */
};

/* Load and initialise the module at `path`.  `env` (pkcs11.env; NULL for
 * none) is set around its C_Initialize and around every slot listing —
 * where the modules measured read it — and put back exactly each time.
 * NULL + err if it cannot. */
struct kh_p11 *kh_p11_open(const char *path, const struct kh_env *env, kh_error *err);

/* Log out, release every libp11 object, finalise and unload. NULL is fine. */
void kh_p11_close(struct kh_p11 *p);

/* Is p the module at `path`, initialised with exactly `env`? */
bool kh_p11_is_module(const struct kh_p11 *p, const char *path, const struct kh_env *env);

/* Does the selected token sit in a removable slot (a card reader)?  True
 * when no token is selected. */
bool kh_p11_token_removable(const struct kh_p11 *p);

/*
 * Be done with the selected token but keep the module initialised, for a
 * token of the same module next (the issuer's, kh_p11_issuer.h): log out
 * (C_Logout), forget the PIN, release every slot (libp11 closes their
 * sessions).  Free the token's keys first: they are libp11's objects of
 * its slot.  0, or -1 when the logout failed — then close the module.
 */
int kh_p11_release_token(struct kh_p11 *p);

/* The module's manufacturer (CK_INFO.manufacturerID), "" if unknown. */
const char *kh_p11_module_manufacturer(const struct kh_p11 *p);

/*
 * Every slot of the module, read afresh (a token may have been inserted
 * since the module was loaded, and the PIN flags must be current).  This
 * unselects any token selected before.  Free with kh_p11_tokens_free.
 */
int kh_p11_list_tokens(struct kh_p11 *p, struct kh_p11_token **tokens, size_t *n,
		       kh_error *err);
void kh_p11_tokens_free(struct kh_p11_token *tokens, size_t n);

/*
 * The certificates of t (from the latest kh_p11_list_tokens of p), read
 * without logging in — only for the tokens a caller looks at: on a card
 * each one is a read from the card.  A token whose certificates cannot be
 * listed gets certs_error, which is no failure; -1 only when out of memory
 * or t is not in p's list.  Does nothing when they were read already.
 */
int kh_p11_read_certs(struct kh_p11 *p, struct kh_p11_token *t, kh_error *err);

/* Select t (from the latest kh_p11_list_tokens of p) for login. */
int kh_p11_use_token(struct kh_p11 *p, const struct kh_p11_token *t, kh_error *err);

/*
 * Read the selected token's PIN flags again (after a failed try); t is
 * updated and stays selected.  KH_ERR_NOTFOUND when it was removed.
 */
int kh_p11_refresh_token(struct kh_p11 *p, struct kh_p11_token *t, kh_error *err);

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
 * Select the one initialised token the key URI u (kh_p11_uri_parse; `uri`
 * its text, for messages) names — by label, and every other token and
 * slot attribute u gives — read straight from the module, not through
 * libp11: C_GetSlotList, C_GetTokenInfo per slot with a token, and
 * C_GetSlotInfo only when u names the slot's description or maker.  For a
 * login (kh_p11_login) and a key (kh_p11_find_key_match) on it; not for
 * kh_p11_find_cert.  No such token → KH_ERR_NOTFOUND; two of that label →
 * KH_ERR_REFUSED.  Unselects any token selected before.
 */
int kh_p11_use_uri_token(struct kh_p11 *p, const struct kh_p11_uri *u, const char *uri,
			 kh_error *err);

/* Which attribute of token URI u (kh_p11_uri_parse_token) t does not
 * match, or NULL when it matches. */
const char *kh_p11_uri_mismatch(const struct kh_p11_uri *u, const struct kh_p11_token *t);

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
 * locked; a wrong PIN is KH_ERR_AUTH.  On success the handle keeps a copy
 * of the PIN for context-specific logins (see above).
 */
int kh_p11_login(struct kh_p11 *p, const char *pin, kh_error *err);

/* The private key (after login), same matching rules as kh_p11_find_cert. */
int kh_p11_find_key(struct kh_p11 *p, const char *key_label,
		    const char *key_id, EVP_PKEY **key, kh_error *err);

/* The private key (after login) with CKA_ID id (id_len > 0) and, when
 * key_label is not NULL or "", that CKA_LABEL.  Exactly one or an error. */
int kh_p11_find_key_by_id(struct kh_p11 *p, const unsigned char *id, size_t id_len,
			  const char *key_label, EVP_PKEY **key, kh_error *err);

/* The private key (after login) whose CKA_LABEL is key_label (NULL: any)
 * and whose CKA_ID is id (id_len 0: any).  Exactly one or an error.  pub:
 * the key's public half from its certificate (not consumed; a key of
 * another type is refused, and a signature by another key of that type
 * fails its verification, which is the caller's to make), or NULL to read
 * it from the token. */
int kh_p11_find_key_match(struct kh_p11 *p, const char *key_label, const unsigned char *id,
			  size_t id_len, const EVP_PKEY *pub, EVP_PKEY **key, kh_error *err);

/* Did the last libp11 failure (OpenSSL's error queue) say the token went
 * away (CKR_TOKEN_NOT_PRESENT, CKR_DEVICE_REMOVED)? */
bool kh_p11_last_error_token_gone(void);

/* The key of a certificate the token showed (after login), by the PKCS#11
 * convention: the private key with its CKA_ID (and CKA_LABEL key_label,
 * when not ""); by key_label alone when the certificate has no CKA_ID.
 * token_label names the token in messages. */
int kh_p11_find_cert_key(struct kh_p11 *p, const struct kh_p11_cert *cert,
			 const char *key_label, const char *token_label, EVP_PKEY **key,
			 kh_error *err);

/*
 * What token t (listed by kh_p11_list_tokens) says of its private key with
 * CKA_ID id, read straight from the module on a session of its own:
 * libp11 0.4.12 does not tell whether a key has CKA_ALWAYS_AUTHENTICATE.
 * Before login a token may hide its private keys (info->visible false).
 */
int kh_p11_key_info(struct kh_p11 *p, const struct kh_p11_token *t,
		    const unsigned char *id, size_t id_len,
		    struct kh_p11_key_info *info, kh_error *err);

/* Keep libp11 mapped once loaded (for a dlclose'd PAM module). */
bool kh_p11_pin_library(void);

#endif
