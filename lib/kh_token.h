/*
 * kh_token — which token is the user's: found by its certificate.
 *
 * Real cards choose their own labels (OpenSC names a PIV token after a
 * certificate's CN, ykcs11 "YubiKey PIV #<serial>", tpm2-pkcs11 whatever
 * its admin typed), so a label is not how a user's token is found.  Every
 * present, initialised token of the module is looked at — narrowed, if the
 * admin wishes, by a token URI and by a label — and its certificates are
 * read without logging in.  A certificate is the user's when it is valid
 * (chains to the trust CA, in time, usage for client authentication, not
 * revoked) and maps to the user, and — when the admin names the key — it
 * is the object the admin named.  Then:
 *
 *   - exactly one token holds certificates of the user: that token;
 *   - two or more do: refused, naming them — never a guess;
 *   - one token holds several (a PIV card's 9A and 9C with the same
 *     subject): the ones whose extendedKeyUsage lists clientAuth first,
 *     then the lowest CKA_ID (byte by byte, shorter first), which is 01,
 *     PIV Authentication, under OpenSC and ykcs11.
 *
 * Nothing here logs in: a token whose certificate is not the user's is
 * never offered a PIN.  The key is the private key with the certificate's
 * CKA_ID (the PKCS#11 convention), found after login by the caller.
 *
 * No policy structure below conf/: the rules are plain parameters.
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set; the name functions never return NULL.
 */
#ifndef KH_TOKEN_H
#define KH_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/x509.h>

#include "lib/kh_error.h"
#include "lib/kh_p11_uri.h"
#include "lib/kh_pkcs11.h"
#include "lib/kh_words.h"

/* token and trust sections of the policy, as plain values. */
struct kh_token_rules {
	const struct kh_p11_uri *uri;       /* token.uri; NULL: every token */
	const char *label;                  /* token.label expanded; NULL or "": any */
	const char *key_label;              /* token.key_label expanded; NULL or "": any */
	const unsigned char *key_id;        /* token.key_id as bytes; NULL: any */
	size_t key_id_len;
	const char *ca_file;                /* trust.ca_file */
	const char *crl_file;               /* trust.crl_file; NULL or "": none */
	enum kh_map_rule map;               /* trust.map */
	const char *const *domains;         /* trust.domains */
	size_t ndomains;
};

enum kh_cert_verdict {
	KH_CERT_USERS,       /* valid, maps to the user, and the key named */
	KH_CERT_OTHERS,      /* valid, maps to another user */
	KH_CERT_NO_USER,     /* valid, but trust.map finds no user name in it */
	KH_CERT_INVALID,     /* untrusted, not valid now, wrong usage or revoked */
	KH_CERT_NOT_NAMED,   /* token.key_label / key_id name another object */
	KH_CERT_UNREADABLE,  /* not an X.509 certificate OpenSSL reads */
};

/* What one certificate is. */
struct kh_cert_eval {
	enum kh_cert_verdict verdict;
	bool valid;             /* passed validation */
	bool client_auth;       /* extendedKeyUsage lists clientAuth */
	char *user;             /* what trust.map makes of it; NULL if nothing */
	kh_error problem;       /* why it is not valid, or names no user */
};

/* What one token is. */
struct kh_token_eval {
	const char *skip;       /* why token.uri / token.label leave it out; NULL */
	struct kh_cert_eval *certs;   /* one per certificate of the token */
	size_t nusers;          /* certificates of the user */
	size_t best;            /* the user's certificate kubehsm uses (nusers > 0) */
	bool tied;              /* two of the user's the rule above cannot order */
};

enum kh_token_outcome {
	KH_TOKEN_CHOSEN,        /* exactly one token holds the user's certificate */
	KH_TOKEN_NONE,          /* none does */
	KH_TOKEN_AMBIGUOUS,     /* several do, or one holds two the rule cannot order */
	KH_TOKEN_REJECTED,      /* the user's certificate is there but not valid, or
				 * the token token.label names holds another's */
};

/* "chosen", "none", "ambiguous" or "rejected" (kubehsm token --json). */
const char *kh_token_outcome_word(enum kh_token_outcome o);

/* The module's tokens, what each is to the user, and the choice. */
struct kh_token_choice {
	struct kh_p11_token *tokens;
	size_t ntokens;
	struct kh_token_eval *evals;   /* one per token */
	enum kh_token_outcome outcome;
	size_t token, cert;     /* the choice, when outcome is KH_TOKEN_CHOSEN */
};

/*
 * List the module's tokens and choose the user's.  0 when one was chosen,
 * which is then selected on p for login (kh_p11_use_token).  Otherwise -1
 * with err: KH_ERR_NOTFOUND (none), KH_ERR_REFUSED (ambiguous), the
 * validation's own code (rejected: KH_ERR_EXPIRED, KH_ERR_REVOKED,
 * KH_ERR_REFUSED) — c says which — or KH_ERR_CONFIG / KH_ERR_TOKEN /
 * KH_ERR_INTERNAL when the tokens or the trust CA cannot be read at all.
 * c is filled in as far as the tokens could be read; free it with
 * kh_token_choice_free in every case.
 */
int kh_token_choose(struct kh_p11 *p, const struct kh_token_rules *r, const char *user,
		    struct kh_token_choice *c, kh_error *err);

/*
 * kh_token_choose for tokens read by someone else: c->tokens and c->ntokens
 * filled in by the caller, each with certs_read and its certificates (the
 * forwarded token's, as root parsed what the user's own process read from
 * it: pam/kh_pam_fwd.c).  The same judgement and the same choice, nothing
 * selected on any module.  Free c with kh_token_choice_free in every case.
 */
int kh_token_choose_read(const struct kh_token_rules *r, const char *user,
			 struct kh_token_choice *c, kh_error *err);

/*
 * The token holding exactly the certificate `cert` (a session's, for
 * kubehsm sign --key token), among those uri leaves (NULL: all): selected
 * on p, c->token and c->cert name it.  KH_ERR_NOTFOUND when none holds it,
 * KH_ERR_REFUSED when several do.
 */
int kh_token_find_cert(struct kh_p11 *p, const struct kh_p11_uri *uri, X509 *cert,
		       struct kh_token_choice *c, kh_error *err);

void kh_token_choice_free(struct kh_token_choice *c);

/* The chosen token and certificate (outcome KH_TOKEN_CHOSEN), else NULL. */
const struct kh_p11_token *kh_token_chosen(const struct kh_token_choice *c);
const struct kh_p11_cert *kh_token_chosen_cert(const struct kh_token_choice *c);

/* "the user's", "another user's", ... for kubehsm token. */
const char *kh_cert_verdict_name(enum kh_cert_verdict v);

/* "'LABEL' (serial S, slot N)": how tokens are named in messages. */
void kh_token_name(const struct kh_p11_token *t, char *buf, size_t size);

#endif
