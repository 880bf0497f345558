/*
 * hsm_link — the network hop of the bench's modelled network HSM (issue
 * #30, bench/issuer.sh): a byte relay between a Unix socket and TCP, one
 * process per connection, with a fixed one-way delay on every chunk in
 * both directions (what netem's "delay" does on a link; this machine's
 * kernel has no sch_netem).  TCP_NODELAY on the TCP side, as HSM clients
 * set it.  Bench only.
 *
 *   hsm_link client UNIX_PATH ADDR PORT DELAY_US
 *       listen on UNIX_PATH (where p11-kit-client.so connects), and for each
 *       connection connect to ADDR:PORT, after 2 × DELAY_US (the TCP
 *       handshake's round trip); every chunk either way leaves DELAY_US after
 *       it arrived, in order, without holding up the chunks behind it
 *   hsm_link server ADDR PORT UNIX_PATH
 *       listen on ADDR:PORT, and for each connection connect to UNIX_PATH
 *       (the p11-kit server's socket); no delay
 *
 * Runs until killed; a connection's process ends when both sides have
 * closed and everything in flight was delivered.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 16384
#define QUEUE 256               /* chunks in flight per direction */

struct chunk {
	long long due_ns;
	size_t len;
	unsigned char data[CHUNK];
};

/* One direction: chunks read from 'from', written to 'to' when due. */
struct pipe_dir {
	int from, to;
	struct chunk *q;
	unsigned head, count;
	int eof, shut;
};

static long long
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void
die(const char *what)
{
	fprintf(stderr, "hsm_link: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int
write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
unix_socket(const char *path, int listening)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		die(path);
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		die("socket");
	if (listening) {
		(void)unlink(path);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0)
			die(path);
	} else if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
tcp_socket(const char *addr, const char *port, int listening)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd, one = 1;
	char *end;
	long p = strtol(port, &end, 10);

	if (*end != '\0' || p <= 0 || p > 65535 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "hsm_link: bad address %s:%s\n", addr, port);
		exit(2);
	}
	sa.sin_port = htons((unsigned short)p);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		die("socket");
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
		die("TCP_NODELAY");
	if (listening) {
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
		    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0)
			die("listen");
	} else if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
sleep_until(long long due)
{
	struct timespec ts = { .tv_sec = (time_t)(due / 1000000000LL),
			       .tv_nsec = (long)(due % 1000000000LL) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Relay a <-> b until either side closes, each chunk held delay_ns. */
static void
relay(int a, int b, long long delay_ns)
{
	struct pipe_dir d[2] = { { .from = a, .to = b }, { .from = b, .to = a } };
	struct pollfd pfd[2];
	struct timespec tmo;
	int i;

	for (i = 0; i < 2; i++)
		if ((d[i].q = calloc(QUEUE, sizeof(struct chunk))) == NULL)
			die("calloc");
	for (;;) {
		long long now = now_ns(), next = -1;

		/* send what is due */
		for (i = 0; i < 2; i++) {
			while (d[i].count > 0 && d[i].q[d[i].head].due_ns <= now) {
				struct chunk *c = &d[i].q[d[i].head];

				if (write_all(d[i].to, c->data, c->len) != 0)
					return;
				d[i].head = (d[i].head + 1) % QUEUE;
				d[i].count--;
			}
			if (d[i].count > 0 && (next < 0 || d[i].q[d[i].head].due_ns < next))
				next = d[i].q[d[i].head].due_ns;
			/* one side done and flushed: pass its end on, keep the other */
			if (d[i].eof && d[i].count == 0 && !d[i].shut) {
				(void)shutdown(d[i].to, SHUT_WR);
				d[i].shut = 1;
			}
		}
		if (d[0].shut && d[1].shut)
			return;
		for (i = 0; i < 2; i++)
			pfd[i] = (struct pollfd){ .fd = d[i].eof || d[i].count == QUEUE ? -1 : d[i].from,
						  .events = POLLIN };
		if (next >= 0) {
			long long wait = next > now ? next - now : 0;

			tmo = (struct timespec){ .tv_sec = (time_t)(wait / 1000000000LL),
						 .tv_nsec = (long)(wait % 1000000000LL) };
		}
		/* ppoll: nanosecond timeouts, where poll's are whole milliseconds */
		if (ppoll(pfd, 2, next >= 0 ? &tmo : NULL, NULL) < 0) {
			if (errno == EINTR)
				continue;
			die("ppoll");
		}
		for (i = 0; i < 2; i++) {
			struct chunk *c;
			ssize_t n;

			if (pfd[i].revents == 0)
				continue;
			c = &d[i].q[(d[i].head + d[i].count) % QUEUE];
			n = read(d[i].from, c->data, sizeof(c->data));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				d[i].eof = 1;
				continue;
			}
			c->len = (size_t)n;
			c->due_ns = now_ns() + delay_ns;
			d[i].count++;
		}
	}
}

int
main(int argc, char **argv)
{
	int client, lfd, cfd, ufd;
	long long delay_ns = 0;
	char *end;

	signal(SIGCHLD, SIG_IGN);       /* connection processes reap themselves */
	signal(SIGPIPE, SIG_IGN);
	if (argc == 6 && strcmp(argv[1], "client") == 0) {
		client = 1;
		delay_ns = strtoll(argv[5], &end, 10) * 1000LL;
		if (*end != '\0' || delay_ns < 0 || delay_ns > 1000000000LL) {
			fprintf(stderr, "hsm_link: DELAY_US: 0..1000000\n");
			return 2;
		}
		lfd = unix_socket(argv[2], 1);
	} else if (argc == 5 && strcmp(argv[1], "server") == 0) {
		client = 0;
		lfd = tcp_socket(argv[2], argv[3], 1);
	} else {
		fprintf(stderr, "usage: hsm_link client UNIX_PATH ADDR PORT DELAY_US\n"
				"       hsm_link server ADDR PORT UNIX_PATH\n");
		return 2;
	}
	for (;;) {
		pid_t pid;

		if ((cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		if ((pid = fork()) < 0)
			die("fork");
		if (pid > 0) {
			close(cfd);
			continue;
		}
		close(lfd);
		if (client) {
			sleep_until(now_ns() + 2 * delay_ns);
			ufd = tcp_socket(argv[3], argv[4], 0);
		} else {
			int one = 1;

			if (setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
				die("TCP_NODELAY");
			ufd = unix_socket(argv[4], 0);
		}
		if (ufd < 0)
			_exit(1);
		relay(cfd, ufd, delay_ns);
		_exit(0);
	}
}
