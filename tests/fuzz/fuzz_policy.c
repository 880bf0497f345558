/* libFuzzer target: the policy file (kh_policy_load_string, file checks off). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/kh_policy.h"
#include "lib/kh_template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kh_policy_load_opts opts = { .trusted_uid = 0, .skip_file_checks = true };
	struct kh_policy *p;
	kh_error err;
	char *text;

	if (size > KH_POLICY_MAX_SIZE)
		return 0;
	text = malloc(size + 1);
	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	p = kh_policy_load_string(text, "fuzz.conf", &opts, &err);
	if (p != NULL) {
		/* A loaded policy is fully valid: print it and use it. */
		FILE *null = fopen("/dev/null", "w");
		char *s;

		if (p->nissuers == 0 || kh_policy_issuer(p, NULL) == NULL ||
		    p->session.ttl < KH_TTL_MIN || p->session.ttl > KH_TTL_MAX)
			__builtin_trap();
		if (null != NULL) {
			(void)kh_policy_print(p, null);
			fclose(null);
		}
		s = kh_template_expand(p->token.label, "alice", &err);
		free(s);
		s = kh_template_expand(p->identity.username, "alice", &err);
		free(s);
		kh_policy_free(p);
	} else if (err.msg[0] == '\0') {
		__builtin_trap();
	}
	free(text);
	return 0;
}
