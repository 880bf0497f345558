/*
 * kh_path — find a companion file of kubehsm's own: beside the file that
 * is running (an installed layout that keeps them together, or a build
 * tree), else at its configured path.
 *
 * Used by the front end for kubehsm-tool.so and by the PAM module for the
 * polkit plugin.  Looking beside the running file is as safe as running
 * it: whoever can place a file there can as well replace the file itself.
 *
 * Return convention: 0 on success, -1 on failure (no err: the one failure
 * is a result too long for buf).
 */
#ifndef KH_PATH_H
#define KH_PATH_H

#include <stddef.h>

/* The first of dirname(self)/names[i] that exists, else `fallback`, into
 * buf.  self may be NULL (no directory to look in).  0, or -1 if the
 * result does not fit. */
int kh_path_beside(const char *self, const char *const *names, size_t nnames,
		   const char *fallback, char *buf, size_t size);

#endif
