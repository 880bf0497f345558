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

/* The same on a socket, never raising SIGPIPE: a peer that is gone is an
 * EPIPE, not the end of the caller (a PAM host, root's process, writing
 * to a process the user may kill). */
int kh_send_all(int fd, const void *buf, size_t len);

#endif
