# pam/: pam_kubehsm.so.  Only the module lands in pammoddir: the .la
# libtool installs beside it is removed by the install hook.
pammod_LTLIBRARIES += pam/pam_kubehsm.la
pam_pam_kubehsm_la_SOURCES = pam/pam_kubehsm.c
pam_pam_kubehsm_la_CFLAGS = $(AM_CFLAGS) $(PAM_CFLAGS)
pam_pam_kubehsm_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-export-symbols-regex '^pam_sm_' -Wl,-z,defs
pam_pam_kubehsm_la_LIBADD = lib/libkubehsm.la $(PAM_LIBS)

install-exec-hook: pam-remove-la
pam-remove-la:
	rm -f $(DESTDIR)$(pammoddir)/pam_kubehsm.la $(DESTDIR)$(pammoddir)/pam_kubehsm.a
uninstall-hook: pam-uninstall-so
pam-uninstall-so:
	rm -f $(DESTDIR)$(pammoddir)/pam_kubehsm.so
.PHONY: pam-remove-la pam-uninstall-so
