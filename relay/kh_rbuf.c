/*
 * kh_rbuf — blocks of KH_RBUF_SIZE, a bounded spare list, nothing else.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "relay/kh_rbuf.h"

/* Spare blocks kept between bursts: 2 MiB at most. */
#define KH_RBUF_SPARE_MAX 32

static char *kh_rbuf_spare[KH_RBUF_SPARE_MAX];
static size_t kh_rbuf_nspare, kh_rbuf_nused;
static bool kh_rbuf_freed;

bool
kh_rbuf_take(struct kh_rbuf *b)
{
	if (b->data != NULL)
		return true;
	b->data = kh_rbuf_nspare > 0 ? kh_rbuf_spare[--kh_rbuf_nspare] : malloc(KH_RBUF_SIZE);
	if (b->data == NULL)
		return false;
	b->off = b->len = 0;
	kh_rbuf_nused++;
	return true;
}

void
kh_rbuf_drop(struct kh_rbuf *b)
{
	if (b->data == NULL)
		return;
	if (kh_rbuf_nspare < KH_RBUF_SPARE_MAX) {
		kh_rbuf_spare[kh_rbuf_nspare++] = b->data;
	} else {
		free(b->data);
		kh_rbuf_freed = true;
	}
	kh_rbuf_nused--;
	b->data = NULL;
	b->off = b->len = 0;
}

void
kh_rbuf_give(struct kh_rbuf *b)
{
	if (b->len == 0)
		kh_rbuf_drop(b);
}

size_t
kh_rbuf_room(struct kh_rbuf *b)
{
	if (b->data == NULL)
		return 0;
	if (b->off > 0 && (b->len == 0 || b->off + b->len > KH_RBUF_SIZE / 2)) {
		memmove(b->data, b->data + b->off, b->len);
		b->off = 0;
	}
	return KH_RBUF_SIZE - b->off - b->len;
}

void
kh_rbuf_consume(struct kh_rbuf *b, size_t n)
{
	b->off += n;
	b->len -= n;
	if (b->len == 0)
		b->off = 0;
}

void
kh_rbuf_trim(void)
{
	while (kh_rbuf_nspare > 0)
		free(kh_rbuf_spare[--kh_rbuf_nspare]);
	kh_rbuf_freed = false;
}

bool
kh_rbuf_heap_dirty(void)
{
	return kh_rbuf_freed;
}

void
kh_rbuf_counts(size_t *used, size_t *spare)
{
	*used = kh_rbuf_nused;
	*spare = kh_rbuf_nspare;
}
