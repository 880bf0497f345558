/*
 * kh_rctl — control.sock and user.sock: one request, one reply.
 */
#ifndef KH_RCTL_H
#define KH_RCTL_H

#include "lib/kh_error.h"
#include "relay/kh_relayd.h"

/* Listen on the two sockets kh_rlisten bound (rd->ctl_fd, rd->user_fd). */
int kh_rctl_start(struct kh_relayd *rd, kh_error *err);

#endif
