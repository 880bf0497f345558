/*
 * hop_floor — what `kubehsm` adds in front of any subcommand but exec: a
 * static-pie program that starts and executes another program in its
 * place with the same arguments (kubehsm-tool, for kubehsm).  On x86-64
 * it does so from its entry point, before glibc starts, as the front end
 * does (helper/kh_front_early.c); elsewhere from main.  Benchmark program
 * only: `hop_floor sign_floor ...` is the floor of kubehsm sign in its
 * design (a static front end handing sign to a program linking OpenSSL).
 *
 *   hop_floor PROGRAM [ARGS...]
 */
#include <unistd.h>
#include <sys/syscall.h>

#if defined(__x86_64__) && defined(__linux__)
void hop_early(long *sp) __attribute__((used, visibility("hidden")));

void __attribute__((no_stack_protector))
hop_early(long *sp)
{
	long argc = sp[0], ret;
	char **argv = (char **)(sp + 1);

	if (argc < 2)
		return;
	__asm__ volatile ("syscall"
			  : "=a"(ret)
			  : "a"((long)SYS_execve), "D"(argv[1]), "S"(argv + 1), "d"(argv + argc + 1)
			  : "rcx", "r11", "memory");
	(void)ret;
}

__asm__(".text\n.globl hop_entry\n.type hop_entry, @function\nhop_entry:\n"
	"	xorl %ebp, %ebp\n	movq %rdx, %r12\n	movq %rsp, %rdi\n"
	"	call hop_early\n	movq %r12, %rdx\n	jmp _start\n");
#endif

int
main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	execv(argv[1], argv + 1);
	return 127;
}
