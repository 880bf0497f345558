/* libFuzzer target: the keyring record decoder (kh_record_decode), then
 * kh_record_check, kh_record_dup and a re-encode of what was accepted. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kh_mem.h"
#include "cache/kh_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kh_record *rec = NULL, *copy;
	kh_error err;

	if (kh_record_decode((const char *)data, size, &rec, &err) == 0) {
		char *out = NULL;
		size_t len = 0;

		if (rec == NULL || rec->expires <= rec->created ||
		    rec->ngroups > KH_RECORD_MAX_GROUPS)
			__builtin_trap();
		(void)kh_record_check(rec, rec->uid, rec->created, &err);
		(void)kh_record_check(rec, rec->uid + 1, rec->expires, &err);
		copy = kh_record_dup(rec);
		if (kh_record_encode(rec, &out, &len, &err) == 0)
			kh_secure_free(out, len);
		kh_record_free(copy);
		kh_record_free(rec);
	} else if (err.msg[0] == '\0') {
		__builtin_trap();
	}
	return 0;
}
