/*
 * kh_words — the policy's enum vocabulary: the words an admin writes and
 * the names printed back.  Separate from the libconfig loader so the record
 * codec (and so `kubehsm exec`) can name a scope without libconfig.
 */
#include "config.h"

#include <stddef.h>

#include "lib/kh_words.h"

const struct kh_enum_word kh_map_words[] = {
	{ "cn", KH_MAP_CN }, { "uid", KH_MAP_UID },
	{ "email", KH_MAP_EMAIL }, { "upn", KH_MAP_UPN }, { NULL, 0 },
};
const struct kh_enum_word kh_scope_words[] = {
	{ "user", KH_SCOPE_USER }, { "session", KH_SCOPE_SESSION }, { NULL, 0 },
};
const struct kh_enum_word kh_signer_words[] = {
	{ "session", KH_SIGNER_SESSION }, { "token", KH_SIGNER_TOKEN }, { NULL, 0 },
};
const struct kh_enum_word kh_polkit_words[] = {
	{ "required", KH_POLKIT_REQUIRED }, { "if-available", KH_POLKIT_IF_AVAILABLE },
	{ "off", KH_POLKIT_OFF }, { NULL, 0 },
};
const struct kh_enum_word kh_key_type_words[] = {
	{ "ec-p256", KH_KEY_EC_P256 }, { "ec-p384", KH_KEY_EC_P384 },
	{ "rsa-2048", KH_KEY_RSA_2048 }, { "rsa-3072", KH_KEY_RSA_3072 }, { NULL, 0 },
};

const struct kh_enum_word kh_deliver_words[] = {
	{ "exec", KH_DELIVER_EXEC }, { "relay", KH_DELIVER_RELAY },
	{ "both", KH_DELIVER_BOTH }, { NULL, 0 },
};

/* ------------------------------------------------------------------ */
/* enum names                                                           */

static const char *
kh_enum_name(const struct kh_enum_word *words, int value)
{
	for (; words->word != NULL; words++) {
		if (words->value == value)
			return words->word;
	}
	return "?";
}

const char *
kh_map_rule_name(enum kh_map_rule v)
{
	return kh_enum_name(kh_map_words, (int)v);
}

const char *
kh_scope_name(enum kh_scope v)
{
	return kh_enum_name(kh_scope_words, (int)v);
}

const char *
kh_signer_key_name(enum kh_signer_key v)
{
	return kh_enum_name(kh_signer_words, (int)v);
}

const char *
kh_polkit_mode_name(enum kh_polkit_mode v)
{
	return kh_enum_name(kh_polkit_words, (int)v);
}

const char *
kh_key_type_name(enum kh_key_type v)
{
	return kh_enum_name(kh_key_type_words, (int)v);
}

const char *
kh_deliver_name(enum kh_deliver v)
{
	return kh_enum_name(kh_deliver_words, (int)v);
}

bool
kh_word_valid(const char *s, size_t len, size_t max)
{
	size_t i;

	if (s == NULL || len == 0 || len > max)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

bool
kh_issuer_id_valid(const char *s, size_t len)
{
	return kh_word_valid(s, len, KH_ISSUER_ID_MAX);
}
