/*
 * kh_opensc_conf — does an opensc.conf make OpenSC reset a card when it
 * disconnects?
 *
 * OpenSC 0.23 sends nothing to a card on C_Logout: a PIV card stays
 * verified after kubehsm's session with it ends, until it is reset or
 * powered off.  Debian's pcscd lets every local user reach every reader,
 * so while another process keeps the card connected (a browser, an agent)
 * anyone's process can sign with it without the PIN.  OpenSC resets the
 * card at C_Finalize when its PC/SC reader driver says
 *
 *     app default { reader_driver pcsc { disconnect_action = reset; } }
 *
 * (or "unpower").  This reads the file the way OpenSC does (scconf: the
 * first "app opensc-pkcs11" block, then the first "app default" block; in
 * the first of them that has a "reader_driver pcsc" block, the first such
 * block decides, and a block without disconnect_action means "leave").
 *
 * Return convention: kh_opensc_resets_card returns 1 (reset or unpower),
 * 0 (leave, or no such setting, or no such file: OpenSC's built-in
 * default), or -1 with err set when the file exists but cannot be read or
 * parsed.
 */
#ifndef KH_OPENSC_CONF_H
#define KH_OPENSC_CONF_H

#include "lib/kh_error.h"

/* Where OpenSC looks without OPENSC_CONF (Debian's build). */
#define KH_OPENSC_CONF_DEFAULT "/etc/opensc/opensc.conf"

int kh_opensc_resets_card(const char *path, kh_error *err);

/* The same for text already read (name for messages). */
int kh_opensc_resets_card_text(const char *text, const char *name, kh_error *err);

#endif
