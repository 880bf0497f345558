/*
 * kh_rundir — kubehsm's root-only runtime state under KH_RUNDIR
 * (/run/kubehsm): per-uid locks, the index of issued records, the
 * auth → session hand-off stash.
 *
 * Everything here is for root.  Each area is a subdirectory that must be a
 * real directory owned by root and closed to everyone else; a directory
 * that is not (a symlink, another owner, group/other bits) is refused
 * rather than repaired, since someone else may have prepared it.
 *
 * Return convention: 0 on success, -1 on failure with err set, unless
 * noted (kh_rundir_lock_uid returns a descriptor).
 */
#ifndef KH_RUNDIR_H
#define KH_RUNDIR_H

#include <stddef.h>
#include <sys/types.h>

#include "lib/kh_error.h"

/* Create (if needed) and check KH_RUNDIR/sub, mode 0700 root.  Writes its
 * path into buf.  0, or -1 with err. */
int kh_rundir_sub(const char *sub, char *buf, size_t size, kh_error *err);

/* Path of file `name` in KH_RUNDIR/sub (checked as above).  0 or -1. */
int kh_rundir_file(const char *sub, const char *name, char *buf, size_t size,
		   kh_error *err);

/*
 * Take the per-uid lock that serialises every change to one uid's records
 * (login accounting, index).  Returns a descriptor to pass to
 * kh_rundir_unlock, or -1 with err.
 */
int kh_rundir_lock_uid(uid_t uid, kh_error *err);
void kh_rundir_unlock(int fd);

/*
 * Take the host's issuer lock (KH_RUNDIR/lock/issuer), which serialises
 * every use of an issuer key on the host (pam/kh_pam_session.c), waiting
 * at most timeout_ms: a holder stuck in its module must not stop every
 * other login for good.  Returns a descriptor for kh_rundir_unlock, or -1
 * with err (KH_ERR_TOKEN when the deadline passed).
 */
int kh_rundir_lock_issuer(unsigned timeout_ms, kh_error *err);

#endif
