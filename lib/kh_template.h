/*
 * kh_template — the "%u" templates of kubehsm.conf (token.label,
 * identity.username): %u is the PAM user, %% a percent sign, and nothing
 * else may follow '%'.
 *
 * Return convention: pointers, NULL on failure with err set.
 */
#ifndef KH_TEMPLATE_H
#define KH_TEMPLATE_H

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

#endif
