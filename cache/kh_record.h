/*
 * kh_record — the session record kept in the kernel keyring.
 *
 * Wire format, versioned by "v":
 *
 *   {"kind":"kubehsm-session","v":1,"uid":...,"user":...,"issuer":...,
 *    "scope":...,"kube_user":...,"groups":[...],"created":...,"expires":...,
 *    "logins":...,"token_uri":...,"pem":{"chain":N1,"key":N2,"token_cert":N3}}\n
 *   <N1 bytes: session certificate chain PEM><N2 bytes: session key PEM>
 *   <N3 bytes: token certificate PEM>
 *
 * The first line is one compact JSON object (jansson, strict: duplicate
 * keys rejected, every field required, unknown fields refused); the PEM
 * texts follow back to back and must fill the record exactly.  Self-
 * describing, so `keyctl print` shows what it is, and kept small: it counts
 * against the user's 20000-byte key quota.
 *
 * N2 is 0 when kubehsm-relayd holds the session key (session.deliver =
 * "relay"): the record then carries the certificate only, key_pem is NULL,
 * and no process of the user ever has the key.
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set; kh_record_dup returns NULL when out of memory (no err).
 */
#ifndef KH_RECORD_H
#define KH_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/kh_error.h"
#include "lib/kh_words.h"

#define KH_RECORD_VERSION 1
#define KH_RECORD_MAX     6144   /* bytes; larger records are refused */
#define KH_RECORD_MAX_GROUPS 64
#define KH_ISSUER_ID_MAX  32     /* issuer ids appear in key descriptions */
#define KH_DESC_MAX       96     /* longest key description kubehsm uses */
#define KH_LOGINS_MAX     100000

struct kh_record {
	int version;
	uid_t uid;               /* the unix uid this record was issued to */
	char *user;              /* the PAM user name */
	char *issuer_id;         /* "" for the default issuer */
	enum kh_scope scope;
	char *kube_user;         /* subject CN of the session certificate */
	char **groups;           /* subject O values */
	size_t ngroups;
	char *cert_chain_pem;    /* session certificate, then the issuer chain */
	char *key_pem;           /* SECRET: the session private key; NULL when only
				  * kubehsm-relayd holds it */
	char *token_cert_pem;    /* the user's token certificate */
	char *token_uri;         /* PKCS#11 URI of the user's token key */
	int64_t created;         /* unix seconds */
	int64_t expires;         /* unix seconds; also the kernel timeout */
	unsigned logins;         /* open logins of the uid (scope user); 0: not
				  * tied to a login, it ends at its expiry */
};

/* Serialise. *out is NUL-terminated, *len excludes the NUL; wipe with
 * kh_secure_free(*out, *len) — it contains the session key. */
int kh_record_encode(const struct kh_record *rec, char **out, size_t *len,
		     kh_error *err);

/* Parse and check shape (version, types, lengths, expiry > created).  Does
 * not check the clock or the caller: see kh_record_check. */
int kh_record_decode(const char *buf, size_t len, struct kh_record **out,
		     kh_error *err);

/* Reader-side checks: right uid, not expired at `now`. */
int kh_record_check(const struct kh_record *rec, uid_t uid, int64_t now,
		    kh_error *err);

/* Deep copy (for re-storing with a new login count). */
struct kh_record *kh_record_dup(const struct kh_record *rec);

/* Free, wiping the session key. NULL is fine. */
void kh_record_free(struct kh_record *rec);

/* Keyring description: "kubehsm:session:v1" or "kubehsm:session:v1:<id>". */
int kh_record_description(const char *kind, const char *issuer_id,
			  char *buf, size_t buflen, kh_error *err);

#endif
