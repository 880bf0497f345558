/*
 * kh_policy_int — what the pieces of the policy loader share.
 * Internal to conf/: not part of the policy's interface (conf/kh_policy.h).
 *
 * The loader is one job per file: kh_policy.c drives a load and owns the
 * result; kh_policy_file.c decides whether a file may be trusted and reads
 * the policy; kh_policy_get.c turns libconfig settings into checked values
 * and phrases every error; kh_policy_sections.c and kh_policy_relay.c fill
 * the sections; kh_policy_print.c writes the effective policy back out.
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with ld->err set to one "file:line: what is wrong" message, unless
 * noted.
 */
#ifndef KH_POLICY_INT_H
#define KH_POLICY_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <libconfig.h>

#include "lib/kh_error.h"
#include "lib/kh_words.h"
#include "conf/kh_policy.h"

/* Everything a load needs to phrase an error. */
struct kh_loader {
	const char *name;                       /* file name used in messages */
	const struct kh_policy_load_opts *opts;
	kh_error *err;
};

/* How a string value is checked, beyond being a string. */
enum {
	KH_STR_NONEMPTY = 1 << 0,  /* "" is an error */
	KH_STR_ABSPATH  = 1 << 1,  /* absolute path (or "" if allowed) */
	KH_STR_TEMPLATE = 1 << 2,  /* only %u and %% escapes */
	KH_STR_UID_TEMPLATE = 1 << 3,  /* identity.uid: KH_UID_ESCAPES and %% */
};

/* What a named file must look like on disk. */
enum kh_file_kind {
	KH_FILE_PUBLIC,  /* module, certificates, CRL: root-controlled, readable */
	KH_FILE_SECRET,  /* the issuer PIN: owner only, no symlink */
};

/* ---- errors and keys (kh_policy_get.c) ---- */

/* "name:line: message" at setting s (NULL: no line).  Returns -1. */
int kh_pol_fail_at(const struct kh_loader *ld, const config_setting_t *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* KH_ERR_INTERNAL "name: out of memory".  Returns -1. */
int kh_pol_fail_oom(const struct kh_loader *ld);
/* Every member of group must be in known; section NULL = the root. */
int kh_pol_check_keys(const struct kh_loader *ld, const config_setting_t *group,
		      const char *section, const char *const *known);
bool kh_pol_has_control_char(const char *s);

/* ---- typed getters (kh_policy_get.c) ---- */

/* A group (section) of the root; *out NULL when absent and not required. */
int kh_pol_get_section(const struct kh_loader *ld, const config_setting_t *root,
		       const char *name, bool required, const char *const *known,
		       config_setting_t **out);
/* A string member; def NULL = required.  *where: the setting it came from,
 * or the group when defaulted (for later errors); where may be NULL. */
int kh_pol_get_string(const struct kh_loader *ld, const config_setting_t *group,
		      const char *section, const char *key, const char *def,
		      unsigned int flags, char **out, const config_setting_t **where);
/* A list of at most KH_POLICY_LIST_MAX strings; def NULL-terminated (or
 * NULL for none) when absent. */
int kh_pol_get_string_list(const struct kh_loader *ld, const config_setting_t *group,
			   const char *section, const char *key, const char *const *def,
			   unsigned int flags, char ***out, size_t *n,
			   const config_setting_t **where);
void kh_pol_strv_free(char **v, size_t n);
int kh_pol_get_bool(const struct kh_loader *ld, const config_setting_t *group,
		    const char *section, const char *key, bool def, bool *out);
/* One of words; def when absent. */
int kh_pol_get_enum(const struct kh_loader *ld, const config_setting_t *group,
		    const char *section, const char *key, const struct kh_enum_word *words,
		    int def, int *out, const config_setting_t **where);
/* A duration string ("1h30m") in seconds, within [min, max]. */
int kh_pol_get_duration(const struct kh_loader *ld, const config_setting_t *group,
			const char *section, const char *key, const char *def,
			long min, long max, long *out);
/* An integer member in [min, max]; def when absent. */
int kh_pol_get_long(const struct kh_loader *ld, const config_setting_t *group,
		    const char *section, const char *key, long def, long min, long max,
		    long *out, const config_setting_t **where);

/* ---- files (kh_policy_file.c) ---- */

/* A file the policy names: kind's owner, mode and ancestor rules.  "" and
 * opts->skip_file_checks pass. */
int kh_pol_check_named_file(const struct kh_loader *ld, const config_setting_t *s,
			    const char *what, const char *path, enum kh_file_kind kind);
/* The policy file itself, opened race-free after its checks: returns the
 * descriptor, or -1 with ld->err set. */
int kh_pol_open_file(const struct kh_loader *ld, const char *path);
/* The whole (bounded) file as a NUL-terminated buffer the caller frees;
 * NULL with ld->err set. */
char *kh_pol_read_file(const struct kh_loader *ld, int fd);
/* Text libconfig must not see: @include, too many lines. */
int kh_pol_check_text(const struct kh_loader *ld, const char *text);

/* ---- sections, in the order they load (kh_policy_sections.c) ---- */

int kh_pol_load_pkcs11(const struct kh_loader *ld, const config_setting_t *root,
		       struct kh_policy *p);
int kh_pol_load_token(const struct kh_loader *ld, const config_setting_t *root,
		      struct kh_policy *p);
int kh_pol_load_trust(const struct kh_loader *ld, const config_setting_t *root,
		      struct kh_policy *p);
int kh_pol_load_identity(const struct kh_loader *ld, const config_setting_t *root,
			 struct kh_policy *p);
int kh_pol_load_issuers(const struct kh_loader *ld, const config_setting_t *root,
			struct kh_policy *p);
int kh_pol_load_session(const struct kh_loader *ld, const config_setting_t *root,
			struct kh_policy *p);
/* After session: signer.key = "token" needs session.cache_pin. */
int kh_pol_load_signer(const struct kh_loader *ld, const config_setting_t *root,
		       struct kh_policy *p);
int kh_pol_load_polkit(const struct kh_loader *ld, const config_setting_t *root,
		       struct kh_policy *p);

/* ---- relay (kh_policy_relay.c) ---- */

/* Last: it checks session.deliver and the issuers its clusters name. */
int kh_pol_load_relay(const struct kh_loader *ld, const config_setting_t *root,
		      struct kh_policy *p);
void kh_pol_relay_free(struct kh_relay_policy *r);

#endif
