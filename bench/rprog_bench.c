/*
 * rprog_bench — what naming the client program costs the relay per new
 * connection (kh_rprog_find), against what a connection costs it already.
 *
 * Per round, over loopback TCP: socket + connect + accept + the relay's
 * sock_diag lookup of the peer (kh_rpeer_lookup) + close: "conn"; then the
 * /proc scan for the process holding the peer socket: "scan".  MODE:
 *   new    each round's client is a new process (a fork): a new kubectl
 *   again  the same process connects again (found among the pids found last)
 *   old    the same process, never among the pids found last: with newer
 *          processes of its uid, the scan reads every one of them first
 *          (the worst case)
 * Prints medians in microseconds.  Built by bench/rprog.sh.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "relay/kh_rpeer.h"
#include "relay/kh_rprog.h"

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200, i, lfd, nl, one = 1;
	const char *mode = argc > 2 ? argv[2] : "new";
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	double *conn, *scan;
	unsigned looked = 0;
	kh_error err = { 0 };

	conn = calloc((size_t)n, sizeof(*conn));
	scan = calloc((size_t)n, sizeof(*scan));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (conn == NULL || scan == NULL || lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 16) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len) != 0 || (nl = kh_rpeer_open(&err)) < 0) {
		perror("setup");
		return 1;
	}
	for (i = 0; i < n; i++) {
		struct sockaddr_in peer, local;
		socklen_t pl = sizeof(peer), ll = sizeof(local);
		struct kh_rprog p;
		uint64_t inode;
		uid_t uid;
		double t0, t1, t2, t3;
		int c = -1, a, gate[2];
		pid_t child = 0, want;
		char b = 0;

		if (strcmp(mode, "old") == 0)
			kh_rprog_forget();
		if (pipe(gate) != 0)
			return 1;
		if (strcmp(mode, "new") == 0) {
			/* The child connects, then holds the socket until told. */
			child = fork();
			if (child < 0)
				return 1;
			if (child == 0) {
				c = socket(AF_INET, SOCK_STREAM, 0);
				if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof(sa)) != 0)
					_exit(1);
				(void)read(gate[0], &b, 1);
				_exit(0);
			}
		} else {
			c = socket(AF_INET, SOCK_STREAM, 0);
			if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof(sa)) != 0)
				return 1;
		}
		want = child != 0 ? child : getpid();
		/* What the relay pays per connection already: accept, its
		 * address, the sock_diag lookup; and the close (t2..t3). */
		t0 = now_us();
		if ((a = accept(lfd, (struct sockaddr *)&peer, &pl)) < 0 ||
		    getsockname(a, (struct sockaddr *)&local, &ll) != 0 ||
		    kh_rpeer_lookup(nl, (struct sockaddr *)&local, (struct sockaddr *)&peer, &uid,
				    &inode, &err) != 0) {
			fprintf(stderr, "round %d: %s\n", i, err.msg);
			return 1;
		}
		t1 = now_us();
		looked = kh_rprog_find(inode, uid, &p);
		t2 = now_us();
		close(a);
		t3 = now_us();
		if (p.pid != (int32_t)want) {
			fprintf(stderr, "round %d: found pid %d, not %d\n", i, p.pid, (int)want);
			return 1;
		}
		if (c >= 0)
			close(c);
		if (child != 0) {
			(void)write(gate[1], &b, 1);
			(void)waitpid(child, NULL, 0);
		}
		close(gate[0]);
		close(gate[1]);
		conn[i] = (t1 - t0) + (t3 - t2);
		scan[i] = t2 - t1;
	}
	qsort(conn, (size_t)n, sizeof(*conn), cmp);
	qsort(scan, (size_t)n, sizeof(*scan), cmp);
	printf("mode=%-5s conn_us=%.1f scan_us=%.1f ratio=%.2f processes_read=%u rounds=%d\n",
	       mode, conn[n / 2], scan[n / 2], scan[n / 2] / conn[n / 2], looked, n);
	return 0;
}
