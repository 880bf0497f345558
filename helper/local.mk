# helper/: the unprivileged kubehsm CLI (never setuid).
#
# One command in two parts: `kubehsm` is the lean front end kubectl runs on
# every invocation (libc, plus jansson and libkeyutils, embedded from their
# static archives by default: see configure.ac; it serves `exec` itself);
# every other subcommand lives in kubehsm-tool.so in $(pkglibdir), which the
# front end loads for them.  See helper/kubehsm.c.
bin_PROGRAMS += helper/kubehsm
helper_kubehsm_SOURCES = \
	helper/kubehsm.c helper/kh_cli.c helper/kh_cli.h \
	helper/cmd_exec.c
helper_kubehsm_CPPFLAGS = $(AM_CPPFLAGS) -DKH_TOOL_PATH='"$(pkglibdir)/kubehsm-tool.so"'
helper_kubehsm_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(KEYUTILS_CFLAGS)
helper_kubehsm_LDADD = $(kh_reader_libs) $(KH_FRONT_LIBS)
# Lazy binding (-z relro without -z now) for the front end's own imports
# only: it resolves the dozen libc functions it calls instead of every symbol
# it imports, which is a measurable share of a 1 ms process.  Full RELRO
# guards GOT entries against memory-corruption exploits across a privilege
# boundary; this program is never setuid and handles only its caller's own
# input (environment, arguments, the caller's keyring record, which root
# wrote).  Everything else (PAM module, kubehsm-tool.so, which the front end
# loads for the other subcommands) keeps -z now.
helper_kubehsm_LDFLAGS = $(KH_FRONT_LDFLAGS)

pkglib_LTLIBRARIES += helper/kubehsm-tool.la
helper_kubehsm_tool_la_SOURCES = \
	helper/kubehsm-tool.c helper/kh_tool.h helper/kh_cli.c helper/kh_cli.h \
	helper/cmd_config.c helper/cmd_token.c \
	helper/cmd_exec.c helper/cmd_sign.c helper/cmd_status.c helper/cmd_login.c \
	helper/cmd_kubeconfig.c helper/cmd_kubeconfig_relay.c helper/cmd_admin.c
helper_kubehsm_tool_la_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(JANSSON_CFLAGS) \
	$(LIBCONFIG_CFLAGS) $(KEYUTILS_CFLAGS) $(LIBP11_CFLAGS)
helper_kubehsm_tool_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-export-symbols-regex '^kh_tool_main$$' -Wl,-z,defs
helper_kubehsm_tool_la_LIBADD = $(kh_all_libs)
dist_man_MANS += helper/kubehsm.1

# The root half of `kubehsm login`, run by pkexec only (never setuid): a
# PAM application of the kubehsm service.  libc and libpam, nothing else.
pkglibexec_PROGRAMS += helper/kubehsm-login
helper_kubehsm_login_SOURCES = helper/kubehsm-login.c
helper_kubehsm_login_CFLAGS = $(AM_CFLAGS) $(PAM_CFLAGS)
helper_kubehsm_login_LDADD = $(PAM_LIBS)

install-data-hook: helper-remove-la
helper-remove-la:
	rm -f $(DESTDIR)$(pkglibdir)/kubehsm-tool.la $(DESTDIR)$(pkglibdir)/kubehsm-tool.a
uninstall-hook: helper-uninstall-so
helper-uninstall-so:
	rm -f $(DESTDIR)$(pkglibdir)/kubehsm-tool.so
.PHONY: helper-remove-la helper-uninstall-so
