/*
 * kh_dl — keep a shared library mapped for the life of the process.
 *
 * A PAM module is dlopen'ed and dlclose'd by libpam around every login.
 * Some libraries it depends on must not be unloaded with it: they leave
 * state behind in libraries that can never be unloaded (GLib's type system
 * and GDBus worker thread pointing at polkit's code) or allocate tables
 * once per load and never free them (libp11).
 *
 * Return convention: true on success, false on failure (nothing changes;
 * there is no err).
 */
#ifndef KH_DL_H
#define KH_DL_H

#include <stdbool.h>

/* Mark the already-loaded library that defines `symbol` RTLD_NODELETE.
 * Returns false if it could not be found (nothing changes then). */
bool kh_pin_library_of(const void *symbol);

#endif
