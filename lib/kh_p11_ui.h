/*
 * kh_p11_ui — the only way a PIN reaches a PKCS#11 module behind kubehsm's
 * back: a context-specific login (CKU_CONTEXT_SPECIFIC) for a key with
 * CKA_ALWAYS_AUTHENTICATE, such as a PIV card's slot 9C or a YubiKey key
 * with PIN policy "always".
 *
 * libp11 0.4.12 performs that login itself, before each signature with
 * such a key (pkcs11_authenticate in src/p11_key.c), and gets the PIN from
 * an OpenSSL UI.  With no UI method set on the context it uses OpenSSL's
 * default, which prompts on /dev/tty: outside PAM, a second time, and a
 * mistyped answer costs a card try with no warning.  Every context kubehsm
 * creates gets this method instead.  Its reader answers with the PIN the
 * handle has already logged in with — a PIN the token accepted moments
 * ago, so the context-specific login cannot cost a try — and fails when
 * there is none.  It never reads or writes a terminal.
 *
 * Return convention: kh_p11_ui_method_new returns NULL on failure (OpenSSL
 * says no more; the caller reports it).
 */
#ifndef KH_P11_UI_H
#define KH_P11_UI_H

#include <openssl/ui.h>

/*
 * A new UI method answering every prompt with the string at
 * *(char **)UI_get0_user_data(ui), or failing when that is NULL.  Pass the
 * address of the handle's PIN pointer as user data (PKCS11_set_ui_method).
 * Free with UI_destroy_method once no context uses it.
 */
UI_METHOD *kh_p11_ui_method_new(void);

#endif
