/*
 * kh_rbuf — the relay's I/O buffers: one block per direction, only while
 * bytes wait in it.
 *
 * A connection holds a block from the moment it reads until the last byte
 * it read is written on; then the block goes back to a small spare list
 * (kept for the next burst, so a busy relay does not malloc per read) and
 * past that to malloc.  An idle connection holds none: that is what lets
 * thousands of kept-alive clients cost a few KiB each.
 */
#ifndef KH_RBUF_H
#define KH_RBUF_H

#include <stdbool.h>
#include <stddef.h>

/* One block: four 16 KiB TLS records, or a head and some body. */
#define KH_RBUF_SIZE (64 * 1024)

struct kh_rbuf {
	char *data;     /* NULL: no block held */
	size_t off;     /* first byte not yet written on */
	size_t len;     /* bytes held from off */
};

/* A block for b if it has none: false when memory is short. */
bool kh_rbuf_take(struct kh_rbuf *b);
/* Give b's block back if nothing waits in it. */
void kh_rbuf_give(struct kh_rbuf *b);
/* Give it back whatever it holds (the connection is closing). */
void kh_rbuf_drop(struct kh_rbuf *b);
/* Room after the held bytes (moves them to the front first if that helps). */
size_t kh_rbuf_room(struct kh_rbuf *b);
static inline char *kh_rbuf_tail(const struct kh_rbuf *b) { return b->data + b->off + b->len; }
static inline char *kh_rbuf_head(const struct kh_rbuf *b) { return b->data + b->off; }
/* n bytes at the head were written on. */
void kh_rbuf_consume(struct kh_rbuf *b, size_t n);
/* Free the spare blocks (the heap trim timer calls this when idle). */
void kh_rbuf_trim(void);
/* Blocks went back to malloc since the last kh_rbuf_trim: the heap has
 * free pages worth handing back to the kernel. */
bool kh_rbuf_heap_dirty(void);
/* Blocks in use and spare, for the tests and the log. */
void kh_rbuf_counts(size_t *used, size_t *spare);

#endif
