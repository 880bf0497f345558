# pam/: pam_kubehsm.so.  Only the module lands in pammoddir: the .la
# libtool installs beside it is removed by the install hook.
pammod_LTLIBRARIES += pam/pam_kubehsm.la
pam_pam_kubehsm_la_SOURCES = pam/pam_kubehsm.c \
	pam/kh_pam_auth.c pam/kh_pam_auth.h \
	pam/kh_pam_session.c \
	pam/kh_pam_util.c pam/kh_pam_util.h
pam_pam_kubehsm_la_CFLAGS = $(AM_CFLAGS) $(PAM_CFLAGS) $(CRYPTO_CFLAGS) \
	$(JANSSON_CFLAGS) $(LIBP11_CFLAGS) $(KEYUTILS_CFLAGS) $(LIBCONFIG_CFLAGS)
pam_pam_kubehsm_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-export-symbols-regex '^pam_sm_' -Wl,-z,defs
pam_pam_kubehsm_la_LIBADD = lib/libkubehsm.la $(PAM_LIBS) $(CRYPTO_LIBS) $(LIBP11_LIBS)

dist_man_MANS += pam/pam_kubehsm.8
EXTRA_DIST += pam/examples/sshd pam/examples/login

install-exec-hook: pam-remove-la
pam-remove-la:
	rm -f $(DESTDIR)$(pammoddir)/pam_kubehsm.la $(DESTDIR)$(pammoddir)/pam_kubehsm.a
uninstall-hook: pam-uninstall-so
pam-uninstall-so:
	rm -f $(DESTDIR)$(pammoddir)/pam_kubehsm.so
.PHONY: pam-remove-la pam-uninstall-so
