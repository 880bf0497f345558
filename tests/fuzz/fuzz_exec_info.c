/* libFuzzer target: KUBERNETES_EXEC_INFO (kh_exec_info_parse). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/kh_exec_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kh_exec_info info;
	kh_error err;

	memset(&info, 0, sizeof(info));
	if (kh_exec_info_parse((const char *)data, size, &info, &err) == 0) {
		/* A success must name a spoken apiVersion. */
		if (kh_exec_api_version(info.api) == NULL)
			__builtin_trap();
	} else if (err.msg[0] == '\0' || memchr(err.msg, '\n', strlen(err.msg)) != NULL) {
		__builtin_trap();   /* one clear line, always */
	}
	kh_exec_info_free(&info);
	return 0;
}
