/*
 * kh_mem — small allocation helpers that keep secrets from outliving use.
 */
#ifndef KH_MEM_H
#define KH_MEM_H

#include <stddef.h>

/* Wipe n bytes (not optimised away) and free. NULL is fine. */
void kh_secure_free(void *p, size_t n);

/* Wipe a NUL-terminated string and free it. NULL is fine. */
void kh_secure_strfree(char *s);

/* strdup that returns NULL on NULL input. */
char *kh_strdup_or_null(const char *s);

#endif
