/*
 * kh_io — plain descriptor I/O kubehsm repeats in several places.
 *
 * Return convention: 0 on success, -1 on failure with errno set (no
 * kh_error: the caller knows what it was writing).
 */
#ifndef KH_IO_H
#define KH_IO_H

#include <stddef.h>

/* Write all len bytes of buf to fd, retrying short writes and EINTR.
 * 0, or -1 (errno set; a write of 0 bytes counts as an error). */
int kh_write_all(int fd, const void *buf, size_t len);

#endif
