/*
 * loadgen — run a command N times with at most P running at once, stdout
 * to /dev/null; print "runs=N fail=F wall=SECONDS".  Benchmark program only.
 *
 *   loadgen P N CMD [ARGS...]
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int
main(int argc, char **argv)
{
	posix_spawn_file_actions_t fa;
	struct timespec t0, t1;
	long p, n, started = 0, running = 0, fail = 0;
	int st;
	pid_t pid;

	if (argc < 4 || (p = atol(argv[1])) < 1 || (n = atol(argv[2])) < 1)
		return 2;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (started < n || running > 0) {
		while (started < n && running < p) {
			if (posix_spawn(&pid, argv[3], &fa, NULL, argv + 3, environ) != 0)
				fail++;
			else
				running++;
			started++;
		}
		if (running > 0 && (pid = wait(&st)) > 0) {
			running--;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				fail++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("runs=%ld fail=%ld wall=%.6f\n", n, fail,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return fail == 0 ? 0 : 1;
}
