/*
 * kh_record — the session record kept in the kernel keyring.
 *
 * Wire format, versioned by "v" (2):
 *
 *   {"kind":"kubehsm-session","v":2,"uid":...,"user":...,"issuer":...,
 *    "scope":...,"kube_user":...,"groups":[...],"created":...,"expires":...,
 *    "logins":...,"token_uri":...,"parts":{"exec":N1,"chain":N2,"token_cert":N3}}\n
 *   <N1 bytes: the pre-rendered ExecCredential><N2 bytes: certificate chain PEM>
 *   <N3 bytes: token certificate PEM>
 *
 * The first line is one compact JSON object (jansson, strict: duplicate
 * keys rejected, every field required, unknown fields refused); the parts
 * follow back to back and must fill the record exactly.  Self-describing,
 * so `keyctl print` shows what it is, and kept small: it counts against the
 * user's 20000-byte key quota.
 *
 * The exec part is the answer `kubehsm exec` serves, rendered by the writer
 * at login (kh_exec_answer_render: the ExecCredential without its
 * apiVersion, holding the session certificate chain and the session key).
 * It is the only copy of the chain and the key: N2 is then 0, and readers
 * that need the PEM texts take them out of it with jansson.  Storing it
 * rendered spares every kube request the JSON encoding of 2 KB of PEM, and
 * storing it once keeps an RSA-3072 session within the size limit.
 *
 * When kubehsm-relayd holds the session key (session.deliver = "relay"),
 * N1 is 0 and the chain is the plain PEM part N2: key_pem is then NULL and
 * no process of the user ever has the key.  Exactly one of N1, N2 is 0.
 *
 * Version 1 (kubehsm before issue #24: the chain and the key as PEM parts)
 * is not read: a session started before an upgrade needs a new login, and
 * says so.  The key descriptions keep their own "v1" (KH_RECORD_DESC_VERSION),
 * the naming scheme of the keys, which did not change.
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

#define KH_RECORD_VERSION 2
#define KH_RECORD_DESC_VERSION 1   /* "kubehsm:<kind>:v1[:<issuer>]" */
#define KH_RECORD_MAX     6144   /* bytes; larger records are refused */
#define KH_RECORD_MAX_GROUPS 64
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
				  * kubehsm-relayd holds it (or when decoded for exec) */
	char *exec_answer;       /* SECRET (holds the key): the pre-rendered
				  * ExecCredential, set only by kh_record_decode_answer;
				  * NULL when the relay holds the key.  The encoder
				  * renders it from the fields above, never from this. */
	size_t exec_answer_len;
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

/* Parse and check shape (version, types, lengths, expiry > created, the
 * exec part's exact shape).  Does not check the clock or the caller: see
 * kh_record_check.  Fills every field but exec_answer. */
int kh_record_decode(const char *buf, size_t len, struct kh_record **out,
		     kh_error *err);

/* The same checks, for `kubehsm exec`: fills exec_answer (a copy) instead
 * of taking the chain and the key out of it (cert_chain_pem only for a
 * record the relay holds the key of).  Accepts exactly the records
 * kh_record_decode accepts. */
int kh_record_decode_answer(const char *buf, size_t len, struct kh_record **out,
			    kh_error *err);

/* What a decode takes out of the exec part; every variant makes the same
 * checks and accepts exactly the same records. */
enum kh_record_take {
	KH_RECORD_TAKE_PEMS,    /* the chain and the key (kh_record_decode) */
	KH_RECORD_TAKE_KEY,     /* the key only (cert_chain_pem stays NULL): a
				 * signer's SignRequest needs no chain */
	KH_RECORD_TAKE_ANSWER,  /* the part as it is (kh_record_decode_answer) */
};
int kh_record_decode_take(const char *buf, size_t len, enum kh_record_take take,
			  struct kh_record **out, kh_error *err);

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
