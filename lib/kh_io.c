/*
 * kh_io — plain descriptor I/O.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/kh_io.h"

/* All of buf, through write(2) or, on a socket, send(2) with MSG_NOSIGNAL
 * (a peer that went away is an EPIPE, not a SIGPIPE). */
static int
put_all(int fd, const void *buf, size_t len, bool sock)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = sock ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
kh_write_all(int fd, const void *buf, size_t len)
{
	return put_all(fd, buf, len, false);
}

int
kh_send_all(int fd, const void *buf, size_t len)
{
	return put_all(fd, buf, len, true);
}
