/*
 * kubehsm-keyops — the keyring helper: acts on one user's keys as that
 * user, for root (kh_keyops.c starts it; cache/kh_keyops_child.c is what it
 * does).  Not for running by hand: it reads a binary request on its
 * standard input.  Run by anyone else than root it can act only as its
 * caller, on keys its caller can reach anyway.
 *
 * Static-pie where the build can (like the kubehsm front end): started at
 * every login, it should cost an exec and no dynamic loading.
 */
#include "config.h"

#include <unistd.h>
#include <sys/syscall.h>

#include "cache/kh_keyops_wire.h"

int
main(void)
{
	int fd;

	/* Nothing of the caller's but the request socket (0, 1) and /dev/null
	 * (2), whatever the caller left open across exec. */
	if (syscall(SYS_close_range, STDERR_FILENO + 1, ~0U, 0) != 0)
		for (fd = STDERR_FILENO + 1; fd < 1024; fd++)
			(void)close(fd);
	return kh_keyops_serve(STDIN_FILENO);
}
