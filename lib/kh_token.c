/*
 * kh_token — see kh_token.h.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509v3.h>

#include "lib/kh_token.h"
#include "lib/kh_x509.h"

/* Tokens named in one message, at most. */
#define KH_NAMED_MAX 4

const char *
kh_cert_verdict_name(enum kh_cert_verdict v)
{
	switch (v) {
	case KH_CERT_USERS:
		return "the user's";
	case KH_CERT_OTHERS:
		return "another user's";
	case KH_CERT_NO_USER:
		return "names no user";
	case KH_CERT_INVALID:
		return "not valid";
	case KH_CERT_NOT_NAMED:
		return "not the key the policy names";
	case KH_CERT_UNREADABLE:
		return "unreadable";
	}
	return "?";
}

void
kh_token_name(const struct kh_p11_token *t, char *buf, size_t size)
{
	(void)snprintf(buf, size, "'%s' (serial %s, slot %lu)", t->label,
		       t->serial[0] != '\0' ? t->serial : "none", t->slot_id);
}

void
kh_token_choice_free(struct kh_token_choice *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; c->evals != NULL && i < c->ntokens; i++) {
		for (size_t j = 0; c->evals[i].certs != NULL && j < c->tokens[i].ncerts; j++)
			free(c->evals[i].certs[j].user);
		free(c->evals[i].certs);
	}
	free(c->evals);
	kh_p11_tokens_free(c->tokens, c->ntokens);
	memset(c, 0, sizeof(*c));
}

const struct kh_p11_token *
kh_token_chosen(const struct kh_token_choice *c)
{
	return c != NULL && c->outcome == KH_TOKEN_CHOSEN && c->token < c->ntokens ?
		&c->tokens[c->token] : NULL;
}

const struct kh_p11_cert *
kh_token_chosen_cert(const struct kh_token_choice *c)
{
	const struct kh_p11_token *t = kh_token_chosen(c);

	return t != NULL && c->cert < t->ncerts ? &t->certs[c->cert] : NULL;
}

/* Why token.uri or token.label leave t out, or NULL. */
static const char *
skip_reason(const struct kh_token_rules *r, const struct kh_p11_token *t)
{
	if (!t->present)
		return "no token in the slot";
	if (!t->initialized)
		return "the token is not initialised";
	if (kh_p11_uri_mismatch(r->uri, t) != NULL)
		return "token.uri leaves it out";
	if (r->label != NULL && r->label[0] != '\0' && strcmp(r->label, t->label) != 0)
		return "token.label names another token";
	return NULL;
}

static bool
named_by_policy(const struct kh_token_rules *r, const struct kh_p11_cert *c)
{
	if (r->key_label != NULL && r->key_label[0] != '\0' && strcmp(r->key_label, c->label) != 0)
		return false;
	if (r->key_id != NULL &&
	    (c->id_len != r->key_id_len || memcmp(c->id, r->key_id, c->id_len) != 0))
		return false;
	return true;
}

static bool
lists_client_auth(X509 *x)
{
	uint32_t f = X509_get_extension_flags(x);

	return (f & EXFLAG_XKUSAGE) && (X509_get_extended_key_usage(x) & XKU_SSL_CLIENT);
}

/* Judge one certificate.  -1 only when nobody's certificate could be
 * judged (the trust CA or CRL unreadable, out of memory). */
static int
eval_cert(const struct kh_token_rules *r, const char *user, const struct kh_p11_cert *c,
	  struct kh_cert_eval *e, kh_error *err)
{
	kh_error map_err = { 0 };

	memset(e, 0, sizeof(*e));
	if (c->x509 == NULL) {
		e->verdict = KH_CERT_UNREADABLE;
		kh_fail(&e->problem, KH_ERR_REFUSED, "the object is not an X.509 certificate");
		return 0;
	}
	e->client_auth = lists_client_auth(c->x509);
	e->valid = kh_x509_validate(c->x509, r->ca_file, r->crl_file, 0, &e->problem) == 0;
	if (!e->valid && (e->problem.code == KH_ERR_CONFIG || e->problem.code == KH_ERR_INTERNAL)) {
		*err = e->problem;
		return -1;
	}
	/* Mapped whether valid or not: a certificate of the user's that is not
	 * valid is why a login fails, and kubehsm token shows whose it is. */
	if (kh_x509_map_user(c->x509, r->map, r->domains, r->ndomains, &e->user, &map_err) != 0) {
		if (map_err.code == KH_ERR_INTERNAL) {
			*err = map_err;
			return -1;
		}
		if (e->valid)
			e->problem = map_err;
	}
	if (!named_by_policy(r, c))
		e->verdict = KH_CERT_NOT_NAMED;
	else if (!e->valid)
		e->verdict = KH_CERT_INVALID;
	else if (e->user == NULL)
		e->verdict = KH_CERT_NO_USER;
	else if (strcmp(e->user, user) != 0)
		e->verdict = KH_CERT_OTHERS;
	else
		e->verdict = KH_CERT_USERS;
	return 0;
}

/* < 0 when a is the better of two certificates of the user's: clientAuth
 * first, then the lower CKA_ID. */
static int
prefer(const struct kh_p11_cert *a, const struct kh_cert_eval *ea,
       const struct kh_p11_cert *b, const struct kh_cert_eval *eb)
{
	size_t n = a->id_len < b->id_len ? a->id_len : b->id_len;
	int d;

	if (ea->client_auth != eb->client_auth)
		return ea->client_auth ? -1 : 1;
	d = memcmp(a->id, b->id, n);
	if (d != 0)
		return d;
	return a->id_len < b->id_len ? -1 : a->id_len > b->id_len ? 1 : 0;
}

/* The user's best certificate on a token, and whether the rule leaves a tie. */
static void
pick_best(const struct kh_p11_token *t, struct kh_token_eval *te)
{
	bool have = false;

	for (size_t j = 0; j < t->ncerts; j++) {
		int d;

		if (te->certs[j].verdict != KH_CERT_USERS)
			continue;
		te->nusers++;
		if (!have) {
			te->best = j;
			have = true;
			continue;
		}
		d = prefer(&t->certs[j], &te->certs[j], &t->certs[te->best], &te->certs[te->best]);
		if (d < 0) {
			te->best = j;
			te->tied = false;
		} else if (d == 0 && X509_cmp(t->certs[j].x509, t->certs[te->best].x509) != 0) {
			te->tied = true;
		}
	}
}

/* Only the tokens the policy looks at are read further: on a card every
 * certificate is a read from the card. */
static int
eval_token(struct kh_p11 *p, const struct kh_token_rules *r, const char *user,
	   struct kh_p11_token *t, struct kh_token_eval *te, kh_error *err)
{
	memset(te, 0, sizeof(*te));
	te->skip = skip_reason(r, t);
	if (te->skip != NULL)
		return 0;
	if (p == NULL && !t->certs_read)
		return kh_fail(err, KH_ERR_INTERNAL, "token '%s': certificates not read",
			       t->label);
	if (p != NULL && kh_p11_read_certs(p, t, err) != 0)
		return -1;
	if (t->ncerts == 0)
		return 0;
	te->certs = calloc(t->ncerts, sizeof(*te->certs));
	if (te->certs == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	for (size_t j = 0; j < t->ncerts; j++)
		if (eval_cert(r, user, &t->certs[j], &te->certs[j], err) != 0)
			return -1;
	pick_best(t, te);
	return 0;
}

/* err: "N tokens hold ...: 'A' (...), 'B' (...); remove all but one". */
static int
fail_ambiguous(const struct kh_token_choice *c, const char *user, size_t holders,
	       kh_error *err)
{
	char names[KH_ERROR_MAX] = "", one[192];
	size_t used = 0, shown = 0;

	for (size_t i = 0; i < c->ntokens && shown < KH_NAMED_MAX; i++) {
		int n;

		if (c->evals[i].nusers == 0)
			continue;
		kh_token_name(&c->tokens[i], one, sizeof(one));
		n = snprintf(names + used, sizeof(names) - used, "%s%s", shown ? ", " : "", one);
		if (n < 0 || (size_t)n >= sizeof(names) - used)
			break;
		used += (size_t)n;
		shown++;
	}
	return kh_fail(err, KH_ERR_REFUSED, "%zu tokens hold a certificate of '%s': %s%s; "
		       "remove all but one, or narrow token.uri", holders, user, names,
		       shown < holders ? ", ..." : "");
}

static int
fail_tied(const struct kh_token_choice *c, size_t i, const char *user, kh_error *err)
{
	char name[192];

	kh_token_name(&c->tokens[i], name, sizeof(name));
	return kh_fail(err, KH_ERR_REFUSED, "token %s holds %zu certificates of '%s' that "
		       "kubehsm cannot tell apart; name one with token.key_id", name,
		       c->evals[i].nusers, user);
}

/* No token holds a valid certificate of the user's: say the nearest miss. */
static int
fail_none(struct kh_token_choice *c, const struct kh_token_rules *r, const char *user,
	  kh_error *err)
{
	char name[192];
	size_t i, j, looked = 0;

	for (i = 0; i < c->ntokens; i++) {
		const struct kh_token_eval *te = &c->evals[i];

		if (te->skip != NULL)
			continue;
		looked++;
		for (j = 0; j < c->tokens[i].ncerts; j++) {
			const struct kh_cert_eval *e = &te->certs[j];

			if (e->verdict != KH_CERT_INVALID || e->user == NULL ||
			    strcmp(e->user, user) != 0)
				continue;
			kh_token_name(&c->tokens[i], name, sizeof(name));
			c->outcome = KH_TOKEN_REJECTED;
			return kh_fail(err, e->problem.code, "token %s: %s", name, e->problem.msg);
		}
	}
	/* The admin said which token is the user's (token.label): one that
	 * holds someone else's certificate is refused, not passed over. */
	for (i = 0; r->label != NULL && r->label[0] != '\0' && i < c->ntokens; i++) {
		for (j = 0; c->evals[i].skip == NULL && j < c->tokens[i].ncerts; j++) {
			const struct kh_cert_eval *e = &c->evals[i].certs[j];

			if (e->verdict != KH_CERT_OTHERS)
				continue;
			kh_token_name(&c->tokens[i], name, sizeof(name));
			c->outcome = KH_TOKEN_REJECTED;
			return kh_fail(err, KH_ERR_REFUSED, "token %s holds a certificate of '%s' "
				       "(trust.map = %s), not of '%s'", name, e->user,
				       kh_map_rule_name(r->map), user);
		}
	}
	c->outcome = KH_TOKEN_NONE;
	return kh_fail(err, KH_ERR_NOTFOUND, "no token holds a valid certificate of '%s' "
		       "(trust.map = %s; %zu token%s looked at)", user, kh_map_rule_name(r->map),
		       looked, looked == 1 ? "" : "s");
}

static int
choose(struct kh_p11 *p, struct kh_token_choice *c, const struct kh_token_rules *r,
       const char *user, kh_error *err)
{
	size_t holders = 0, which = 0;

	for (size_t i = 0; i < c->ntokens; i++) {
		if (c->evals[i].nusers > 0) {
			holders++;
			which = i;
		}
	}
	if (holders == 0)
		return fail_none(c, r, user, err);
	c->outcome = KH_TOKEN_AMBIGUOUS;
	if (holders > 1)
		return fail_ambiguous(c, user, holders, err);
	if (c->evals[which].tied)
		return fail_tied(c, which, user, err);
	c->outcome = KH_TOKEN_CHOSEN;
	c->token = which;
	c->cert = c->evals[which].best;
	return p == NULL ? 0 : kh_p11_use_token(p, &c->tokens[which], err);
}

/* Judge c's tokens and choose; p NULL: read elsewhere, nothing selected. */
static int
judge(struct kh_p11 *p, const struct kh_token_rules *r, const char *user,
      struct kh_token_choice *c, kh_error *err)
{
	if (c->ntokens > 0 && (c->evals = calloc(c->ntokens, sizeof(*c->evals))) == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	for (size_t i = 0; i < c->ntokens; i++)
		if (eval_token(p, r, user, &c->tokens[i], &c->evals[i], err) != 0)
			return -1;
	return choose(p, c, r, user, err);
}

int
kh_token_choose(struct kh_p11 *p, const struct kh_token_rules *r, const char *user,
		struct kh_token_choice *c, kh_error *err)
{
	memset(c, 0, sizeof(*c));
	c->outcome = KH_TOKEN_NONE;
	if (p == NULL || r == NULL || user == NULL || user[0] == '\0')
		return kh_fail(err, KH_ERR_INTERNAL, "no module, user or rules to choose a "
			       "token for");
	if (kh_p11_list_tokens(p, &c->tokens, &c->ntokens, err) != 0)
		return -1;
	return judge(p, r, user, c, err);
}

int
kh_token_choose_read(const struct kh_token_rules *r, const char *user,
		     struct kh_token_choice *c, kh_error *err)
{
	c->outcome = KH_TOKEN_NONE;
	c->evals = NULL;
	if (r == NULL || user == NULL || user[0] == '\0')
		return kh_fail(err, KH_ERR_INTERNAL, "no user or rules to choose a token for");
	return judge(NULL, r, user, c, err);
}

int
kh_token_find_cert(struct kh_p11 *p, const struct kh_p11_uri *uri, X509 *cert,
		   struct kh_token_choice *c, kh_error *err)
{
	struct kh_token_rules r = { .uri = uri };
	size_t hits = 0;

	memset(c, 0, sizeof(*c));
	c->outcome = KH_TOKEN_NONE;
	if (cert == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "no certificate to look for");
	if (kh_p11_list_tokens(p, &c->tokens, &c->ntokens, err) != 0)
		return -1;
	for (size_t i = 0; i < c->ntokens; i++) {
		struct kh_p11_token *t = &c->tokens[i];

		if (skip_reason(&r, t) != NULL)
			continue;
		if (kh_p11_read_certs(p, t, err) != 0)
			return -1;
		for (size_t j = 0; j < t->ncerts; j++) {
			if (t->certs[j].x509 == NULL || X509_cmp(t->certs[j].x509, cert) != 0)
				continue;
			if (hits++ == 0) {
				c->token = i;
				c->cert = j;
			}
		}
	}
	if (hits == 0)
		return kh_fail(err, KH_ERR_NOTFOUND, "no token holds the certificate your kube "
			       "session was started with; insert that token");
	if (hits > 1) {
		c->outcome = KH_TOKEN_AMBIGUOUS;
		return kh_fail(err, KH_ERR_REFUSED, "%zu tokens hold the certificate your kube "
			       "session was started with; remove all but one", hits);
	}
	c->outcome = KH_TOKEN_CHOSEN;
	return kh_p11_use_token(p, &c->tokens[c->token], err);
}

const char *
kh_token_outcome_word(enum kh_token_outcome o)
{
	switch (o) {
	case KH_TOKEN_CHOSEN:
		return "chosen";
	case KH_TOKEN_NONE:
		return "none";
	case KH_TOKEN_AMBIGUOUS:
		return "ambiguous";
	case KH_TOKEN_REJECTED:
		return "rejected";
	}
	return "?";
}
