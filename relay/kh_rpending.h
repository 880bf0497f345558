/*
 * kh_rpending — forgets root could not deliver, applied all the same.
 *
 * When control.sock does not take a forget (the relay is down, hung, or
 * cannot be reached in time), root's side (lib/kh_relay_client) leaves a
 * note in KH_RUNDIR/relay-forget whose name says the uid, the reason and
 * the time (ns).  The relay takes the notes at start, as root, and removes
 * them; while it runs it looks at that directory (through a descriptor it
 * opened as root: the directory stays root's, 0700) every
 * KH_RPENDING_SCAN_MS and forgets every session of a noted uid delivered
 * before the note.  A revocation therefore takes effect within the
 * client's timeout plus that interval, whatever a local user does to the
 * control sockets, and across a restart.
 */
#ifndef KH_RPENDING_H
#define KH_RPENDING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/kh_error.h"
#include "relay/kh_relayd.h"

#define KH_RPENDING_SCAN_MS 1000

struct kh_rpending {
	uid_t uid;
	int64_t when_ns;
	char reason[16];        /* "logout" or "revoked" */
};

/* Parse a note's name: 0, or -1 when it is not a note. */
int kh_rpending_parse(const char *name, struct kh_rpending *p);

/*
 * As root, before the drop: open the notes directory for the running
 * relay (rd->pending_fd) and take (and remove) the notes already there.
 */
int kh_rpending_open(struct kh_relayd *rd, struct kh_rpending **out, size_t *n,
		     kh_error *err);
/* After the restore: forget what the notes name. */
void kh_rpending_apply(struct kh_relayd *rd, const struct kh_rpending *p, size_t n);
/* Look at the notes every KH_RPENDING_SCAN_MS from now on. */
int kh_rpending_start(struct kh_relayd *rd, kh_error *err);

#endif
