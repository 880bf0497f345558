/*
 * kh_rprog — which program holds the client's end of a connection.
 *
 * sock_diag gives the client socket's inode (kh_rpeer); the process that
 * holds it is the one with a /proc/PID/fd/N link "socket:[INODE]".  The
 * relay itself, once it dropped its privileges, may not read another
 * uid's /proc/PID/fd: a small finder process, forked before the drop,
 * does the scan and nothing else (see kh_rprog.c for why it keeps
 * CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, and nothing more).  Once per
 * client connection, asked at accept and answered while the request is
 * read and sent upstream: never on a request's path.
 */
#ifndef KH_RPROG_H
#define KH_RPROG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/kh_error.h"

#define KH_RPROG_EXE_MAX 256    /* readlink /proc/PID/exe, cut beyond */
#define KH_RPROG_CMD_MAX 256    /* /proc/PID/cmdline, cut beyond */

struct kh_rprog {
	int32_t pid;                    /* 0: not found */
	bool cmdline_cut;               /* longer than KH_RPROG_CMD_MAX */
	char exe[KH_RPROG_EXE_MAX + 1];         /* "" unknown */
	char cmdline[KH_RPROG_CMD_MAX + 1];     /* NULs made spaces */
};

/*
 * Scan /proc for the process of `uid` that holds socket `inode` (only
 * processes of that uid are opened).  Fills *p (pid 0 when none was
 * found); the number of processes whose fds were read, for the bench.
 */
unsigned kh_rprog_find(uint64_t inode, uid_t uid, struct kh_rprog *p);
/* Forget the pids found last (kh_rprog_find reads them first): the bench. */
void kh_rprog_forget(void);

/*
 * As root, before the drop: fork the finder, which becomes uid/gid
 * keeping only CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, and answers
 * kh_rprog_ask on *fd (a SOCK_SEQPACKET socket, close-on-exec,
 * non-blocking).  It dies with the relay (PR_SET_PDEATHSIG).
 */
int kh_rprog_finder_start(uid_t uid, gid_t gid, int *fd, pid_t *pid, kh_error *err);

/* Ask (non-blocking): 0, or -1 when the finder cannot take it now. */
int kh_rprog_ask(int fd, uint64_t tag, uint64_t inode, uid_t uid);
/* One answer: 1 (tag and *p set), 0 none ready, -1 the finder is gone. */
int kh_rprog_answer(int fd, uint64_t *tag, struct kh_rprog *p);

#endif
