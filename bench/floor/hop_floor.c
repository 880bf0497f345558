/*
 * hop_floor — what `kubehsm` adds in front of any subcommand but exec: a
 * static-pie program that starts and executes another program in its
 * place with the same arguments (kubehsm-tool, for kubehsm).  Benchmark
 * program only: `hop_floor sign_floor ...` is the floor of kubehsm sign
 * in its design (a static front end that hands sign to a program linking
 * OpenSSL).
 *
 *   hop_floor PROGRAM [ARGS...]
 */
#include <unistd.h>

int
main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	execv(argv[1], argv + 1);
	return 127;
}
