/*
 * kh_env — environment variables a PKCS#11 module reads, set only while it
 * is loaded and initialised (pkcs11.env, issuer.env in kubehsm.conf).
 *
 * Modules configure themselves from the environment: tpm2-pkcs11 its
 * store and TCTI (TPM2_PKCS11_STORE, TPM2_PKCS11_TCTI), OpenSC its
 * configuration (OPENSC_CONF), libpcsclite its daemon's socket
 * (PCSCLITE_CSOCK_NAME).  The hosts kubehsm runs in do not carry them:
 * sshd's keyboard-interactive child starts with an empty environment,
 * kubehsm-login clears its own.  So the policy names them, and they are
 * set around C_Initialize — which is when all of the above read them —
 * and put back exactly as they were afterwards (unset if they were
 * unset), so the PAM host's environment is the same after the module as
 * before it.
 *
 * setenv and getenv are not thread-safe: this assumes the host does not
 * read its environment on another thread during a login, which holds for
 * the login programs kubehsm serves (sshd, login, su, sudo, pkexec).
 *
 * Return convention: kh_env_apply returns 0, or -1 with err set and
 * nothing changed; the predicates return a problem (NULL when fine);
 * kh_env_equal answers true or false.
 */
#ifndef KH_ENV_H
#define KH_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/kh_error.h"

#define KH_ENV_MAX        32     /* variables per module */
#define KH_ENV_NAME_MAX   64     /* bytes of a name */
#define KH_ENV_VALUE_MAX  1024   /* bytes of a value */

/* NAME=value pairs for one module; owned by whoever built it (the policy). */
struct kh_env {
	char **names;
	char **values;
	size_t n;
};

/* What a name may not be, or NULL: ^[A-Z_][A-Z0-9_]*$, at most
 * KH_ENV_NAME_MAX bytes, and not LD_* (the dynamic loader's). */
const char *kh_env_name_problem(const char *name);

/* What a value may not be, or NULL: at most KH_ENV_VALUE_MAX bytes, no
 * control character. */
const char *kh_env_value_problem(const char *value);

/* The environment as it was before kh_env_apply. */
struct kh_env_saved {
	size_t n;
	char **names;       /* copies: the policy may be freed first */
	char **old;         /* NULL where the variable was unset */
};

/* Set every variable of env (NULL or empty: nothing), remembering what was
 * there.  On failure what was set is put back. */
int kh_env_apply(const struct kh_env *env, struct kh_env_saved *saved, kh_error *err);

/* Put back exactly what kh_env_apply found, and free saved. */
void kh_env_restore(struct kh_env_saved *saved);

/* The same variables with the same values, in any order (NULL is empty). */
bool kh_env_equal(const struct kh_env *a, const struct kh_env *b);

/* Free the pairs of an env built by a loader. */
void kh_env_clear(struct kh_env *env);

#endif
