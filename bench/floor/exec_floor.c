/*
 * exec_floor — the floor for an exec credential plugin: one process start,
 * one read of a pre-rendered ExecCredential (same size as kubehsm's answer)
 * and one write(2).  Benchmark program only.
 *
 *   exec_floor FILE
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	static char buf[65536];
	ssize_t n, w;
	int fd;

	if (argc != 2 || (fd = open(argv[1], O_RDONLY | O_CLOEXEC)) < 0)
		return 2;
	n = read(fd, buf, sizeof(buf));
	if (n <= 0)
		return 2;
	w = write(1, buf, (size_t)n);
	return w == n ? 0 : 1;
}
