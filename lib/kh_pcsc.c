/*
 * kh_pcsc — see kh_pcsc.h.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/kh_pcsc.h"

/*
 * The little of <PCSC/winscard.h> used here, as pcsc-lite defines it on
 * Linux (wintypes.h: LONG is long, DWORD unsigned long, SCARDCONTEXT a
 * LONG; pcsclite.h: the codes).  Declared here rather than taken from
 * libpcsclite-dev: two calls through dlsym do not justify a build
 * dependency, and this ABI has not changed since pcsc-lite 1.6.
 */
typedef long kh_scard_rv;
typedef long kh_scard_context;
typedef kh_scard_rv (*kh_scard_establish_fn)(unsigned long scope, const void *r1,
					     const void *r2, kh_scard_context *ctx);
typedef kh_scard_rv (*kh_scard_release_fn)(kh_scard_context ctx);

#define KH_SCARD_SCOPE_SYSTEM 0x0002UL
#define KH_SCARD_S_SUCCESS ((kh_scard_rv)0x00000000)
#define KH_SCARD_F_COMM_ERROR ((kh_scard_rv)0x80100013)
#define KH_SCARD_E_NO_SERVICE ((kh_scard_rv)0x8010001D)
#define KH_SCARD_W_SECURITY_VIOLATION ((kh_scard_rv)0x8010006A)

/* The soname every PC/SC-based module on Debian loads (OpenSC by dlopen,
 * ykcs11 by DT_NEEDED). */
#define KH_PCSCLITE_SONAME "libpcsclite.so.1"

/* pcscd 2.x's polkit actions; present where pcscd asks polkit. */
#define KH_PCSCD_POLKIT_POLICY "/usr/share/polkit-1/actions/org.debian.pcsc-lite.policy"

/* Where the client library looks for pcscd (pcsc-lite's default on Debian). */
#define KH_PCSCD_SOCKET "/run/pcscd/pcscd.comm"

/* Whether pcscd's socket takes a connection (it is there, and listening). */
static bool
kh_pcsc_socket_answers(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = getenv("PCSCLITE_CSOCK_NAME");
	size_t len;
	bool answers;
	int fd;

	if (path == NULL || *path == '\0')
		path = KH_PCSCD_SOCKET;
	len = strlen(path);
	if (len >= sizeof(sa.sun_path))
		return false;
	memcpy(sa.sun_path, path, len + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	answers = connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) == 0;
	(void)close(fd);
	return answers;
}

/*
 * What a refused client sees: pcscd accepts the connection, asks polkit
 * before it reads anything, and on "no" logs "Rejected unauthorized PC/SC
 * client" and closes the socket with the client's first message unread,
 * which resets the client's end; SCardEstablishContext then reports
 * SCARD_W_SECURITY_VIOLATION (connection reset), or SCARD_F_COMM_ERROR
 * (end of file) — pcsc-lite 2.3, winscard_svc.c ContextThread and
 * winscard_msg.c MessageReceive.  When the close comes between the two
 * writes of that first message, the second fails with EPIPE, which the
 * library reports as SCARD_E_NO_SERVICE, as it does a missing pcscd: a
 * socket that still takes connections tells the two apart.
 */
static const char *
kh_pcsc_explain(kh_scard_rv rv)
{
	if (rv == KH_SCARD_E_NO_SERVICE && !kh_pcsc_socket_answers())
		return "pcscd is not running, or not at its socket (PCSCLITE_CSOCK_NAME, "
		       "else " KH_PCSCD_SOCKET ")";
	if (rv != KH_SCARD_E_NO_SERVICE && rv != KH_SCARD_F_COMM_ERROR &&
	    rv != KH_SCARD_W_SECURITY_VIOLATION)
		return NULL;
	if (access(KH_PCSCD_POLKIT_POLICY, F_OK) == 0)
		return "pcscd refused this process: its polkit check "
		       "(action org.debian.pcsc-lite.access_pcsc) said no, as it does "
		       "outside an active local session; see pam_kubehsm(8), "
		       "SMARTCARDS, for a polkit rule that lets the user's card through";
	return "pcscd closed this process's connection at once (it refused it)";
}

const char *
kh_pcsc_refusal(void)
{
	kh_scard_establish_fn establish;
	kh_scard_release_fn release;
	kh_scard_context ctx = 0;
	kh_scard_rv rv;
	void *dl;

	/* RTLD_NOLOAD: only the copy the module already loaded. */
	dl = dlopen(KH_PCSCLITE_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (dl == NULL)
		return NULL;
	establish = (kh_scard_establish_fn)dlsym(dl, "SCardEstablishContext");
	release = (kh_scard_release_fn)dlsym(dl, "SCardReleaseContext");
	if (establish == NULL || release == NULL) {
		dlclose(dl);
		return NULL;
	}
	rv = establish(KH_SCARD_SCOPE_SYSTEM, NULL, NULL, &ctx);
	if (rv == KH_SCARD_S_SUCCESS)
		(void)release(ctx);
	dlclose(dl);
	return kh_pcsc_explain(rv);
}
