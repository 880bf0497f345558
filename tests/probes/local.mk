# tests/probes/: small programs the integration tests drive, each exposing
# one part of the tree to a shell script, and the test-only modules.

# cache_probe: the keyring cache's store/find/login/logout/revoke/list.
check_PROGRAMS += tests/probes/cache_probe
tests_probes_cache_probe_SOURCES = tests/probes/cache_probe.c
tests_probes_cache_probe_CFLAGS = $(unit_cflags)
tests_probes_cache_probe_LDADD = $(kh_all_libs) $(KEYUTILS_LIBS)

# token_probe: lib/kh_pkcs11 and lib/kh_x509 on a real token.
check_PROGRAMS += tests/probes/token_probe
tests_probes_token_probe_SOURCES = tests/probes/token_probe.c
tests_probes_token_probe_CFLAGS = $(unit_cflags) $(LIBP11_CFLAGS)
tests_probes_token_probe_LDADD = $(kh_all_libs) $(CRYPTO_LIBS) $(LIBP11_LIBS)

# p11_fill: N EC key pairs on a token in one process (p11_calls.sh).
check_PROGRAMS += tests/probes/p11_fill
tests_probes_p11_fill_SOURCES = tests/probes/p11_fill.c
tests_probes_p11_fill_CFLAGS = $(AM_CFLAGS) $(P11KIT_CFLAGS)
tests_probes_p11_fill_LDADD = -ldl

# polkit_probe: the polkit client (pam/kh_polkit) against a real polkitd.
check_PROGRAMS += tests/probes/polkit_probe
tests_probes_polkit_probe_SOURCES = tests/probes/polkit_probe.c
tests_probes_polkit_probe_CFLAGS = $(AM_CFLAGS) $(POLKIT_CFLAGS)
tests_probes_polkit_probe_LDADD = pam/libkh-polkit.la $(kh_all_libs) $(POLKIT_LIBS)

# relay_client: drives the relay's control protocol with the library the
# login uses.
check_PROGRAMS += tests/probes/relay_client
tests_probes_relay_client_SOURCES = tests/probes/relay_client.c
tests_probes_relay_client_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_probes_relay_client_LDADD = $(kh_all_libs)

# pam_driver: plain pam_start/pam_authenticate/... with the PIN from the
# environment, for pam_wrapper and the valgrind load/unload cycles.
check_PROGRAMS += tests/probes/pam_driver
tests_probes_pam_driver_SOURCES = tests/probes/pam_driver.c
tests_probes_pam_driver_CFLAGS = $(AM_CFLAGS) $(PAM_CFLAGS)
tests_probes_pam_driver_LDADD = $(PAM_LIBS)

# p11shim: a PKCS#11 module forwarding to SoftHSM2 that reports the PIN
# states SoftHSM never does (final try, locked) and counts C_Login calls.
# A shared object (-rpath forces libtool to build one), never installed.
check_LTLIBRARIES += tests/probes/p11shim/libkhp11shim.la
tests_probes_p11shim_libkhp11shim_la_SOURCES = tests/probes/p11shim/p11shim.c
# p11-kit's pkcs11.h (libp11-kit-dev), found by configure.
tests_probes_p11shim_libkhp11shim_la_CFLAGS = $(AM_CFLAGS) $(P11KIT_CFLAGS)
tests_probes_p11shim_libkhp11shim_la_LDFLAGS = -module -avoid-version -shared \
	-rpath $(abs_builddir)/tests/probes/p11shim -export-symbols-regex '^C_GetFunctionList$$'
tests_probes_p11shim_libkhp11shim_la_LIBADD = -ldl

# nss_khcase: a test NSS module answering user names without regard to
# case (as sssd may), loaded through nss_wrapper: the module must use the
# account's canonical name, not what was typed.
check_LTLIBRARIES += tests/probes/nss/libnss_khcase.la
tests_probes_nss_libnss_khcase_la_SOURCES = tests/probes/nss/nss_khcase.c
tests_probes_nss_libnss_khcase_la_CFLAGS = $(AM_CFLAGS)
tests_probes_nss_libnss_khcase_la_LDFLAGS = -module -avoid-version -shared \
	-rpath $(abs_builddir)/tests/probes/nss -export-symbols-regex '^_nss_khcase_'

# logcap: preloaded into the programs a test drives PAM through, keeps
# what they send to syslog in the test's own file ($KH_LOGCAP_FILE), so a
# failing test shows the module's own reason (tests/harness/tap.sh).
check_LTLIBRARIES += tests/probes/logcap/libkhlogcap.la
tests_probes_logcap_libkhlogcap_la_SOURCES = tests/probes/logcap/logcap.c
tests_probes_logcap_libkhlogcap_la_CFLAGS = $(AM_CFLAGS)
tests_probes_logcap_libkhlogcap_la_LDFLAGS = -module -avoid-version -shared \
	-rpath $(abs_builddir)/tests/probes/logcap \
	-export-symbols-regex '^(syslog|vsyslog|__syslog_chk|__vsyslog_chk)$$'
tests_probes_logcap_libkhlogcap_la_LIBADD = -ldl

# The front end once more, with its configured kubehsm-tool path in the
# build tree, where no tool is ever built.  front.sh runs a copy of it away
# from helper/ to see how the front end fails without its tool:
# helper/kubehsm would find the one `make install` put in $(pkglibexecdir)
# and run it, and the test would depend on what is installed.
check_PROGRAMS += tests/probes/kubehsm-notool
tests_probes_kubehsm_notool_SOURCES = $(helper_kubehsm_SOURCES)
tests_probes_kubehsm_notool_CPPFLAGS = $(AM_CPPFLAGS) \
	-DKH_TOOL_PATH='"$(abs_top_builddir)/tests/notool/kubehsm-tool"'
tests_probes_kubehsm_notool_CFLAGS = $(helper_kubehsm_CFLAGS)
tests_probes_kubehsm_notool_LDADD = $(helper_kubehsm_LDADD)
tests_probes_kubehsm_notool_LDFLAGS = $(helper_kubehsm_LDFLAGS)

# The front end linked dynamically, for valgrind (helper_memcheck.sh):
# memcheck cannot follow malloc in a static glibc program.  Same sources,
# shared jansson and libkeyutils, and the build tree's kubehsm-tool.
check_PROGRAMS += tests/probes/kubehsm-dyn
tests_probes_kubehsm_dyn_SOURCES = $(helper_kubehsm_SOURCES)
tests_probes_kubehsm_dyn_CPPFLAGS = $(AM_CPPFLAGS) \
	-DKH_TOOL_PATH='"$(abs_top_builddir)/helper/kubehsm-tool"'
tests_probes_kubehsm_dyn_CFLAGS = $(helper_kubehsm_CFLAGS)
tests_probes_kubehsm_dyn_LDADD = $(kh_reader_libs) $(JANSSON_LIBS) $(KEYUTILS_LIBS)

# The external signer's Go client (tests/integration/helper/sign.sh builds it).
EXTRA_DIST += tests/probes/signer/main.go
