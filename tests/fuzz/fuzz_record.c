/* libFuzzer target: the keyring record decoders.  kh_record_decode, then
 * kh_record_check, kh_record_dup and a re-encode of what was accepted; and
 * kh_record_decode_answer (what `kubehsm exec` uses) and the key-only
 * decode (kubehsm sign), which must accept exactly the same inputs; exec's
 * part must be what the encoder renders for the decoded session, and the
 * signer's key the full decode's. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/kh_exec_proto.h"
#include "lib/kh_mem.h"
#include "cache/kh_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The accepted answer is byte for byte the rendering of the full decode. */
static void
check_answer(const struct kh_record *full, const struct kh_record *ans)
{
	char *want = NULL;
	size_t len = 0;
	kh_error err;

	if ((full->key_pem == NULL) != (ans->exec_answer == NULL))
		__builtin_trap();
	if (full->key_pem == NULL)
		return;
	if (kh_exec_answer_render((time_t)full->expires, full->cert_chain_pem, full->key_pem,
				  &want, &len, &err) != 0 ||
	    len != ans->exec_answer_len || memcmp(want, ans->exec_answer, len) != 0)
		__builtin_trap();
	kh_secure_free(want, len + 1);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kh_record *rec = NULL, *ans = NULL, *key = NULL, *copy;
	kh_error err, aerr, kerr;
	int rc = kh_record_decode((const char *)data, size, &rec, &err);
	int arc = kh_record_decode_answer((const char *)data, size, &ans, &aerr);
	int krc = kh_record_decode_take((const char *)data, size, KH_RECORD_TAKE_KEY, &key, &kerr);

	if (rc != arc || rc != krc)
		__builtin_trap();
	if (rc == 0 && (rec->key_pem == NULL) != (key->key_pem == NULL))
		__builtin_trap();
	if (rc == 0 && rec->key_pem != NULL && strcmp(rec->key_pem, key->key_pem) != 0)
		__builtin_trap();
	kh_record_free(key);
	if (rc == 0) {
		char *out = NULL;
		size_t len = 0;

		if (rec == NULL || rec->expires <= rec->created ||
		    rec->ngroups > KH_RECORD_MAX_GROUPS)
			__builtin_trap();
		check_answer(rec, ans);
		(void)kh_record_check(rec, rec->uid, rec->created, &err);
		(void)kh_record_check(rec, rec->uid + 1, rec->expires, &err);
		copy = kh_record_dup(rec);
		if (kh_record_encode(rec, &out, &len, &err) == 0)
			kh_secure_free(out, len);
		kh_record_free(copy);
		kh_record_free(rec);
		kh_record_free(ans);
	} else if (err.msg[0] == '\0' || aerr.msg[0] == '\0') {
		__builtin_trap();
	}
	return 0;
}
