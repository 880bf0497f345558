/*
 * keyring_floor — the keyring helper of the login floor's second variant
 * (pam_floor.so keyring_helper=PATH; bench/login_row.sh's "floor, helper
 * exec'd").  pam_kubehsm does its user-side keyring work in a program of its
 * own that fully becomes the user (cache/kubehsm-keyops): a process the user
 * may signal must carry none of root's memory, and root waits for it with a
 * deadline.  This is the least such a program can be: it becomes the user
 * and makes one keyring call.  Linked static-pie, as kubehsm-keyops is.
 *
 *   keyring_floor link|invalidate KEY UID GID
 *
 * Exit status: 0, the call's errno, 120 when the ids could not be changed,
 * 121 for an errno >= 120, 122 for bad arguments.  Benchmark yardstick only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <keyutils.h>   /* constants only: the calls are raw system calls */

static int
number(const char *s, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno != 0 || end == s || *end != '\0' || *v > 0x7fffffffUL ? -1 : 0;
}

int
main(int argc, char **argv)
{
	unsigned long key, uid, gid;
	long r;
	int op;

	if (argc != 5 || number(argv[2], &key) != 0 || number(argv[3], &uid) != 0 ||
	    number(argv[4], &gid) != 0)
		return 122;
	if (strcmp(argv[1], "link") == 0)
		op = KEYCTL_LINK;
	else if (strcmp(argv[1], "invalidate") == 0)
		op = KEYCTL_INVALIDATE;
	else
		return 122;
	if (setgroups(0, NULL) != 0 || setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) != 0 ||
	    setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0)
		return 120;
	(void)prctl(PR_SET_DUMPABLE, 0);
	if (op == KEYCTL_LINK)
		r = syscall(SYS_keyctl, KEYCTL_LINK, (long)key, (long)KEY_SPEC_USER_KEYRING);
	else
		r = syscall(SYS_keyctl, KEYCTL_INVALIDATE, (long)key);
	return r == 0 ? 0 : errno < 120 ? errno : 121;
}
