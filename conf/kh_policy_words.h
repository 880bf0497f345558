/*
 * kh_policy_words — enum word tables shared by the loader and the namers.
 */
#ifndef KH_POLICY_WORDS_H
#define KH_POLICY_WORDS_H

struct kh_enum_word {
	const char *word;
	int value;
};

/* Each table ends with { NULL, 0 }. */
extern const struct kh_enum_word kh_map_words[];
extern const struct kh_enum_word kh_scope_words[];
extern const struct kh_enum_word kh_signer_words[];
extern const struct kh_enum_word kh_polkit_words[];
extern const struct kh_enum_word kh_key_type_words[];
extern const struct kh_enum_word kh_deliver_words[];

#endif
