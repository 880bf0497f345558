/*
 * kh_pcsc — why a PKCS#11 module built on PC/SC sees no reader.
 *
 * pcscd 2.x (Debian 13) asks polkit whether a client may use it
 * (org.debian.pcsc-lite.access_pcsc) and, when the answer is no, closes the
 * client's connection.  OpenSC and ykcs11 then fail C_GetSlotList without a
 * word about pcscd, and the user learns only that the module "cannot list
 * slots".  After such a failure kh_pcsc_refusal asks pcscd itself, through
 * the copy of libpcsclite the module loaded, what it tells this process.
 *
 * Nothing here loads PC/SC into a process: a module that did not load
 * libpcsclite gets no answer (NULL), and neither does one whose pcscd
 * accepts the connection.
 *
 * Return convention: a static, one-line hint for the person who must act,
 * or NULL when there is nothing certain to say.
 */
#ifndef KH_PCSC_H
#define KH_PCSC_H

/* Call with the module's environment applied (PCSCLITE_CSOCK_NAME). */
const char *kh_pcsc_refusal(void);

#endif
