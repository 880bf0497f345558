/*
 * kh_front_early — the front end's entry point, ahead of the C library's
 * (x86-64 static-pie builds: configure.ac, KH_FRONT_EARLY).
 *
 * Every subcommand but exec is kubehsm-tool, which the front end executes
 * in its place (kubehsm.c).  Started normally, the front end first sets up
 * glibc — relocates itself, resolves its IFUNCs, reads tunables, sets up
 * TLS and malloc — which touches some twenty pages, only to replace the
 * image at once; that doubled what the hand-over costs (measured: `kubehsm
 * sign` is the front end plus the tool, and the hand-over was a fifth of a
 * signature on the bench machine).  So the ELF entry point is
 * kh_front_entry: for any subcommand but exec it executes kubehsm-tool with
 * two system calls before anything of glibc has run, and else — exec, no
 * subcommand, or an execve that failed — it continues to glibc's _start
 * exactly as the kernel entered it, and main does what it always does
 * (failures included: run_tool retries the same paths and says why).
 *
 * Nothing here may need what glibc has not set up yet: no relocation (the
 * static-pie image is not relocated yet: only PC-relative references, no
 * pointer in data), no TLS (so no stack protector and no errno: raw
 * system calls), no IFUNC (no library call at all, and no loop the
 * compiler may turn into memcpy: -fno-tree-loop-distribute-patterns).
 * tests/integration/helper/front.sh disassembles kh_front_early to hold
 * that.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <sys/syscall.h>

#ifdef KH_FRONT_EARLY

void kh_front_early(long *sp) __attribute__((used, visibility("hidden")));

static long __attribute__((no_stack_protector))
early_syscall3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile ("syscall"
			  : "=a"(ret)
			  : "a"(nr), "D"(a), "S"(b), "d"(c)
			  : "rcx", "r11", "memory");
	return ret;
}

/* argv[1] == "exec", without strcmp. */
static int __attribute__((no_stack_protector))
early_is_exec(const char *s)
{
	return s[0] == 'e' && s[1] == 'x' && s[2] == 'e' && s[3] == 'c' && s[4] == '\0';
}

/*
 * The hand-over, from the initial stack the kernel built: argc, argv[],
 * NULL, envp[].  Returns only when it did not hand over.
 */
void __attribute__((no_stack_protector))
kh_front_early(long *sp)
{
	static const char tool_name[] = "kubehsm-tool";
	char **argv = (char **)(sp + 1), **envp;
	char path[PATH_MAX];
	long argc = sp[0], n, i, slash = -1;

	if (argc < 2 || early_is_exec(argv[1]))
		return;
	envp = argv + argc + 1;
	/* Beside this program first, as run_tool looks (kubehsm.c). */
	n = early_syscall3(SYS_readlink, (long)"/proc/self/exe", (long)path,
			   (long)(sizeof(path) - sizeof(tool_name)));
	if (n > 0 && n < (long)(sizeof(path) - sizeof(tool_name))) {
		for (i = 0; i < n; i++)
			if (path[i] == '/')
				slash = i;
		if (slash >= 0) {
			for (i = 0; i < (long)sizeof(tool_name); i++)
				path[slash + 1 + i] = tool_name[i];
			n = early_syscall3(SYS_execve, (long)path, (long)argv, (long)envp);
			if (n != -ENOENT)
				return;   /* there, but it did not run: main reports it */
		}
	}
	(void)early_syscall3(SYS_execve, (long)KH_TOOL_PATH, (long)argv, (long)envp);
}

/*
 * The entry point: %rsp is the initial stack and %rdx the function the
 * kernel asks to register with atexit (0 for a static program), both of
 * which glibc's _start reads; %r12 keeps %rdx across the call (callee-
 * saved), the call leaves %rsp as it was.
 */
__asm__(
	".text\n"
	".globl kh_front_entry\n"
	".type kh_front_entry, @function\n"
	"kh_front_entry:\n"
	"	.cfi_startproc\n"
	"	.cfi_undefined rip\n"
	"	xorl %ebp, %ebp\n"
	"	movq %rdx, %r12\n"
	"	movq %rsp, %rdi\n"
	"	call kh_front_early\n"
	"	movq %r12, %rdx\n"
	"	jmp _start\n"
	"	.cfi_endproc\n"
	".size kh_front_entry, . - kh_front_entry\n");

#endif /* KH_FRONT_EARLY */
