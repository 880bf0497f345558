/*
 * kh_pam_polkit — ask polkit about a login through the kubehsm-polkit
 * plugin, loaded only when the policy asks polkit at all.
 */
#ifndef KH_PAM_POLKIT_H
#define KH_PAM_POLKIT_H

#include <stdbool.h>
#include <sys/types.h>

#include "lib/kh_error.h"
#include "pam/kh_polkit.h"

/* kh_polkit_check_login, run in the plugin: 1 allowed, 0 denied, -1 error
 * (also when the plugin cannot be loaded).  Mode off answers 1 without
 * loading anything. */
int kh_pam_polkit_check_login(enum kh_polkit_mode mode, pid_t pid, uid_t uid,
			      const struct kh_polkit_login *login,
			      bool *unreachable, kh_error *err);

#endif
