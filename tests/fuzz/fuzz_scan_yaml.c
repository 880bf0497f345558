/* libFuzzer target: a user's kubeconfig as `kubehsm admin scan` reads it
 * as root (kh_scan_yaml_load, helper/kh_scan_yaml.c). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "helper/kh_scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Only what the loader builds: objects, arrays, strings, and null at the top. */
static int
kh_fuzz_tree_ok(json_t *j, int depth)
{
	const char *k;
	json_t *v;
	size_t i;

	if (depth > KH_SCAN_YAML_MAX_DEPTH)
		return 0;
	if (json_is_string(j))
		return 1;
	if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			if (!kh_fuzz_tree_ok(v, depth + 1))
				return 0;
		return 1;
	}
	if (json_is_object(j)) {
		json_object_foreach(j, k, v)
			if (!kh_fuzz_tree_ok(v, depth + 1))
				return 0;
		return 1;
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = NULL;
	kh_error err;

	if (kh_scan_yaml_load((const char *)data, size, &doc, &err) == 0) {
		if (doc == NULL || (!json_is_null(doc) && !kh_fuzz_tree_ok(doc, 0)))
			__builtin_trap();
		kh_scan_json_wipe_free(doc);
	} else if (doc != NULL || err.msg[0] == '\0' ||
		   memchr(err.msg, '\n', strlen(err.msg)) != NULL) {
		__builtin_trap();   /* nothing handed back; one clear line */
	}
	return 0;
}
