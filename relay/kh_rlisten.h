/*
 * kh_rlisten — the sockets kubehsm-relayd binds as root, and accepting on them.
 */
#ifndef KH_RLISTEN_H
#define KH_RLISTEN_H

#include "lib/kh_error.h"
#include "relay/kh_relayd.h"

int kh_rlisten_bind_clusters(struct kh_relayd *rd, kh_error *err);
int kh_rlisten_bind_sockets(struct kh_relayd *rd, kh_error *err);
int kh_rlisten_start(struct kh_relayd *rd, kh_error *err);

#endif
