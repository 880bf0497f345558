/*
 * kh_mem — small allocation helpers that keep secrets from outliving use.
 *
 * Return convention: nothing here reports an error; kh_strdup_or_null
 * returns NULL for NULL and when out of memory alike.
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
