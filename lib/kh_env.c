/*
 * kh_env — see kh_env.h.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kh_env.h"

const char *
kh_env_name_problem(const char *name)
{
	size_t i, n = name != NULL ? strlen(name) : 0;

	if (n == 0 || n > KH_ENV_NAME_MAX)
		return "must be 1 to 64 characters";
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'A' && c <= 'Z') || c == '_' || (i > 0 && c >= '0' && c <= '9')))
			return "must be upper-case letters, digits and '_', not starting with a digit";
	}
	/* The dynamic loader's variables change what code a process runs. */
	if (strncmp(name, "LD_", 3) == 0)
		return "is one of the dynamic loader's (LD_*), which a module never needs";
	return NULL;
}

const char *
kh_env_value_problem(const char *value)
{
	size_t i;

	if (value == NULL)
		return "is missing";
	for (i = 0; value[i] != '\0'; i++) {
		if (i >= KH_ENV_VALUE_MAX)
			return "is longer than 1024 bytes";
		if ((unsigned char)value[i] < 0x20 || (unsigned char)value[i] == 0x7f)
			return "contains a control character";
	}
	return NULL;
}

static void
saved_free(struct kh_env_saved *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->names[i]);
		free(s->old[i]);
	}
	free(s->names);
	free(s->old);
	memset(s, 0, sizeof(*s));
}

void
kh_env_restore(struct kh_env_saved *s)
{
	if (s == NULL)
		return;
	/* In reverse, so a name given twice ends as it began. */
	for (size_t i = s->n; i-- > 0;) {
		if (s->old[i] != NULL)
			(void)setenv(s->names[i], s->old[i], 1);
		else
			(void)unsetenv(s->names[i]);
	}
	saved_free(s);
}

int
kh_env_apply(const struct kh_env *env, struct kh_env_saved *s, kh_error *err)
{
	size_t i;

	memset(s, 0, sizeof(*s));
	if (env == NULL || env->n == 0)
		return 0;
	s->names = calloc(env->n, sizeof(*s->names));
	s->old = calloc(env->n, sizeof(*s->old));
	if (s->names == NULL || s->old == NULL) {
		saved_free(s);
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	}
	for (i = 0; i < env->n; i++) {
		const char *old = getenv(env->names[i]);

		s->names[i] = strdup(env->names[i]);
		s->old[i] = old != NULL ? strdup(old) : NULL;
		if (s->names[i] == NULL || (old != NULL && s->old[i] == NULL)) {
			free(s->names[i]);
			free(s->old[i]);
			kh_env_restore(s);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
		s->n = i + 1;
		if (setenv(env->names[i], env->values[i], 1) != 0) {
			int e = errno;

			kh_env_restore(s);
			return kh_fail(err, KH_ERR_INTERNAL, "cannot set %s for the PKCS#11 module: %s",
				       env->names[i], strerror(e));
		}
	}
	return 0;
}

static const char *
kh_env_value_of(const struct kh_env *env, const char *name)
{
	for (size_t i = 0; i < env->n; i++)
		if (strcmp(env->names[i], name) == 0)
			return env->values[i];
	return NULL;
}

bool
kh_env_equal(const struct kh_env *a, const struct kh_env *b)
{
	static const struct kh_env none;
	const char *v;

	a = a != NULL ? a : &none;
	b = b != NULL ? b : &none;
	if (a->n != b->n)
		return false;
	/* Names are unique within one env: they are the settings of one
	 * libconfig group, which refuses a name twice. */
	for (size_t i = 0; i < a->n; i++)
		if ((v = kh_env_value_of(b, a->names[i])) == NULL || strcmp(v, a->values[i]) != 0)
			return false;
	return true;
}

void
kh_env_clear(struct kh_env *env)
{
	if (env == NULL)
		return;
	for (size_t i = 0; i < env->n; i++) {
		free(env->names[i]);
		free(env->values[i]);
	}
	free(env->names);
	free(env->values);
	memset(env, 0, sizeof(*env));
}
