/*
 * kh_words — the policy's vocabulary: the enums that name an admin's
 * choices (how a certificate maps to a user, where a session lives, who
 * signs, what polkit decides, which session keys are minted, who holds the
 * key), the words written for them in kubehsm.conf, and their names.
 *
 * It sits in lib/ because code below the policy loader uses it too: the
 * X.509 mapper (trust.map), the key generator (issuer.key_type), the polkit
 * client (polkit.mode) and the record codec (session.scope), which `kubehsm
 * exec` links without libconfig.
 *
 * Return convention: nothing here fails; a name is never NULL ("?" for a
 * value no table has).
 */
#ifndef KH_WORDS_H
#define KH_WORDS_H

#include <stdbool.h>
#include <stddef.h>

enum kh_map_rule {      /* trust.map: which certificate field names the user */
	KH_MAP_CN,
	KH_MAP_UID,
	KH_MAP_EMAIL,   /* local part of rfc822Name SAN (or emailAddress) */
	KH_MAP_UPN,     /* local part of the Microsoft UPN otherName SAN */
};

enum kh_scope {         /* session.scope */
	KH_SCOPE_USER,     /* the uid's user keyring: every process of the uid */
	KH_SCOPE_SESSION,  /* the login's session keyring only */
};

enum kh_signer_key {    /* signer.key */
	KH_SIGNER_SESSION, /* the ephemeral session key from the cache */
	KH_SIGNER_TOKEN,   /* the user's token, unlocked with the cached PIN */
};

enum kh_polkit_mode {   /* polkit.mode */
	KH_POLKIT_REQUIRED,     /* polkitd unreachable: refuse to cache */
	KH_POLKIT_IF_AVAILABLE, /* polkitd unreachable: log and allow */
	KH_POLKIT_OFF,          /* never ask */
};

/* session.deliver: who holds the session key after login. */
enum kh_deliver {
	KH_DELIVER_EXEC,   /* the record: `kubehsm exec` hands it to kube clients */
	KH_DELIVER_RELAY,  /* kubehsm-relayd only; the record carries no key */
	KH_DELIVER_BOTH,   /* both */
};

enum kh_key_type {      /* issuer.key_type: the session keys an issuer certifies */
	KH_KEY_EC_P256,
	KH_KEY_EC_P384,
	KH_KEY_RSA_2048,
	KH_KEY_RSA_3072,
};

/* One word of a table; each table ends with { NULL, 0 }. */
struct kh_enum_word {
	const char *word;
	int value;
};

extern const struct kh_enum_word kh_map_words[];
extern const struct kh_enum_word kh_scope_words[];
extern const struct kh_enum_word kh_signer_words[];
extern const struct kh_enum_word kh_polkit_words[];
extern const struct kh_enum_word kh_key_type_words[];
extern const struct kh_enum_word kh_deliver_words[];

/*
 * A name the policy defines (an issuer id, a relay cluster, the relay's
 * user): 1 to max characters from A-Z a-z 0-9 . _ -, ASCII whatever the
 * locale.  Such names end up in key descriptions, socket paths and user
 * names.  The length given is what is judged: a NUL in it is a character.
 */
bool kh_word_valid(const char *s, size_t len, size_t max);

/*
 * An issuer id (issuer.id) is such a word of at most KH_ISSUER_ID_MAX.  It
 * names key descriptions in the keyring, the kubeconfig's exec config and
 * the relay's messages, so every one of them takes the same rule.
 */
#define KH_ISSUER_ID_MAX 32
bool kh_issuer_id_valid(const char *s, size_t len);

/* Names of enum values, as written in the config file ("?" if unknown);
 * never NULL. */
const char *kh_map_rule_name(enum kh_map_rule v);
const char *kh_scope_name(enum kh_scope v);
const char *kh_signer_key_name(enum kh_signer_key v);
const char *kh_polkit_mode_name(enum kh_polkit_mode v);
const char *kh_key_type_name(enum kh_key_type v);
const char *kh_deliver_name(enum kh_deliver v);

#endif
