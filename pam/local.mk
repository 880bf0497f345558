# pam/: pam_kubehsm.so.  Only the module lands in pammoddir: the .la
# libtool installs beside it is removed by the install hook.
#
# The module's work is the convenience library libkh-pam.la; the module is
# its entry points (pam_kubehsm.c) and that library, and the unit tests
# (tests/unit/pam/) link the same library with a fake libpam
# (tests/fakepam/) instead of Linux-PAM, so nothing is compiled twice.
# libkh-pam.la names no libraries of its own: a convenience library would
# copy the objects of others into itself, and each program would then hold
# them twice.
noinst_LTLIBRARIES += pam/libkh-pam.la
pam_libkh_pam_la_SOURCES = pam/kh_pam.h \
	pam/kh_pam_auth.c \
	pam/kh_pam_session.c \
	pam/kh_pam_forward.c \
	pam/kh_pam_forward_child.c pam/kh_pam_forward_wire.c pam/kh_pam_forward_child.h \
	pam/kh_pam_relay.c \
	pam/kh_pam_handoff.c \
	pam/kh_pam_polkit.c \
	pam/kh_pam_options.c pam/kh_pam_policy.c pam/kh_pam_user.c \
	pam/kh_pam_log.c pam/kh_pam_prompt.c pam/kh_pam_state.c pam/kh_pam_module.c \
	pam/kh_pam_groups.c pam/kh_pam_timing.c
pam_libkh_pam_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DKH_POLKIT_PLUGIN='"$(pkglibdir)/kubehsm-polkit.so"'
pam_libkh_pam_la_CFLAGS = $(AM_CFLAGS) $(PAM_CFLAGS) $(CRYPTO_CFLAGS) \
	$(JANSSON_CFLAGS) $(LIBP11_CFLAGS) $(KEYUTILS_CFLAGS) $(LIBCONFIG_CFLAGS)

pammod_LTLIBRARIES += pam/pam_kubehsm.la
pam_pam_kubehsm_la_SOURCES = pam/pam_kubehsm.c
pam_pam_kubehsm_la_CFLAGS = $(pam_libkh_pam_la_CFLAGS)
pam_pam_kubehsm_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-export-symbols-regex '^pam_sm_' -Wl,-z,defs
pam_pam_kubehsm_la_LIBADD = pam/libkh-pam.la pam/libkh-polkit-common.la $(kh_all_libs) \
	$(PAM_LIBS)

# The polkit client (pam/kh_polkit.c), built as a plugin the module loads
# only when polkit.mode is not "off" (pam/kh_pam_polkit.c):
# libpolkit-gobject maps GLib, GObject, GIO and some twenty more shared
# objects into the process.  The convenience library is what the plugin and
# the polkit tests link.
noinst_LTLIBRARIES += pam/libkh-polkit.la
pam_libkh_polkit_la_SOURCES = pam/kh_polkit.c pam/kh_polkit.h
pam_libkh_polkit_la_CFLAGS = $(AM_CFLAGS) $(POLKIT_CFLAGS)
pam_libkh_polkit_la_LIBADD = pam/libkh-polkit-common.la lib/libkh-error.la $(POLKIT_LIBS)

# What the plugin and the module share without GLib (pam/kh_polkit_common.c):
# the subject's start time and the verdict on an absent polkit, so the
# module's look at the bus before loading the plugin decides as the plugin
# does, in the same words.
noinst_LTLIBRARIES += pam/libkh-polkit-common.la
pam_libkh_polkit_common_la_SOURCES = pam/kh_polkit_common.c

pkglib_LTLIBRARIES += pam/kubehsm-polkit.la
pam_kubehsm_polkit_la_SOURCES =
pam_kubehsm_polkit_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-export-symbols-regex '^kh_polkit_check_login$$' -Wl,-z,defs
pam_kubehsm_polkit_la_LIBADD = pam/libkh-polkit.la

dist_man_MANS += pam/pam_kubehsm.8

# The PAM service of kubehsm-login (kubehsm login).
pamdir = $(sysconfdir)/pam.d
dist_pam_DATA = pam/pam.d/kubehsm
EXTRA_DIST += pam/examples/sshd pam/examples/login

install-exec-hook: pam-remove-la
pam-remove-la:
	rm -f $(DESTDIR)$(pammoddir)/pam_kubehsm.la $(DESTDIR)$(pammoddir)/pam_kubehsm.a \
		$(DESTDIR)$(pkglibdir)/kubehsm-polkit.la $(DESTDIR)$(pkglibdir)/kubehsm-polkit.a
uninstall-hook: pam-uninstall-so
pam-uninstall-so:
	rm -f $(DESTDIR)$(pammoddir)/pam_kubehsm.so $(DESTDIR)$(pkglibdir)/kubehsm-polkit.so
.PHONY: pam-remove-la pam-uninstall-so
