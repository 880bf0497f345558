/*
 * kh_pin_file — a PIN read from a root-only file (the issuer's PIN,
 * issuer.pin_file), checked on the descriptor it is read from.
 *
 * Return convention: 0 on success, -1 with err set.
 */
#ifndef KH_PIN_FILE_H
#define KH_PIN_FILE_H

#include "lib/kh_error.h"

/*
 * Read a PIN file: no symlink, a regular file owned by the reading (effective)
 * uid with no group/other access — checked on the descriptor read, since the
 * path may have changed since the policy loader checked it — at most
 * KH_P11_PIN_MAX bytes, one trailing newline stripped, no NUL or other
 * newline inside.  *pin is freed with kh_secure_strfree.
 */
int kh_p11_read_pin_file(const char *path, char **pin, kh_error *err);

#endif
