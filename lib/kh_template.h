/*
 * kh_template — the templates of kubehsm.conf: one escape letter, "%%" a
 * percent sign, and nothing else may follow '%'.  "%u" is the PAM user in
 * token.label and identity.username (kh_template_check, _expand); "%U" the
 * uid in pkcs11.forward.socket (the _escape forms with 'U').
 *
 * Return convention: pointers, NULL on failure with err set.
 */
#ifndef KH_TEMPLATE_H
#define KH_TEMPLATE_H

#include <stdbool.h>

#include "lib/kh_error.h"

/* Longest string kh_template_expand produces (bytes, without the NUL). */
#define KH_TEMPLATE_MAX 1024

/* The first '%' in tmpl that is not "%u" or "%%", or NULL if tmpl is valid.
 * Not the convention above: NULL is the good answer, and there is no err
 * (the policy loader phrases the message, naming the key). */
const char *kh_template_check(const char *tmpl);

/*
 * Expand: %u -> user, %% -> %.  A template kh_template_check refuses, an
 * empty user or a result over KH_TEMPLATE_MAX fails with KH_ERR_INPUT.
 * Returns a new string (caller frees) or NULL.
 */
char *kh_template_expand(const char *tmpl, const char *user, kh_error *err);

/* The same with another escape letter: "%<escape>" -> value. */
const char *kh_template_check_escape(const char *tmpl, char escape);
/* Does tmpl use "%<escape>" at least once (not a literal "%%<escape>")?
 * A boolean, not the convention above. */
bool kh_template_uses(const char *tmpl, char escape);
char *kh_template_expand_escape(const char *tmpl, char escape, const char *value,
				kh_error *err);

/*
 * identity.uid's escapes: %h the host's name, %u the local account, %U its
 * uid, %k the kube user name, %s the session certificate's serial (hex).
 * A UID is at most KH_KUBE_UID_MAX bytes (template and expansion).
 */
#define KH_UID_ESCAPES "huUks"
#define KH_KUBE_UID_MAX 256

/* One escape letter and what it stands for (NULL or "": cannot expand). */
struct kh_template_var {
	char escape;
	const char *value;
};

/* The first '%' in tmpl not followed by one of `escapes` or '%', or NULL. */
const char *kh_template_check_set(const char *tmpl, const char *escapes);

/*
 * The general form: each "%<vars[i].escape>" -> vars[i].value, "%%" -> "%".
 * An escape not in vars, an escape used whose value is NULL or empty, or a
 * result over KH_TEMPLATE_MAX fails with KH_ERR_INPUT.
 */
char *kh_template_expand_vars(const char *tmpl, const struct kh_template_var *vars, size_t n,
			      kh_error *err);

#endif
