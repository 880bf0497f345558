# tests/integration/pam.mk — pam_kubehsm.so through the real PAM stack.
#
# p11shim: a PKCS#11 module forwarding to SoftHSM2 that reports the PIN
# states SoftHSM never does (final try, locked) and counts C_Login calls.
# A shared object (-rpath forces libtool to build one), never installed.
check_LTLIBRARIES += tests/p11shim/libkhp11shim.la
tests_p11shim_libkhp11shim_la_SOURCES = tests/p11shim/p11shim.c
# p11-kit's pkcs11.h (libp11-kit-dev), found by configure.
tests_p11shim_libkhp11shim_la_CFLAGS = $(AM_CFLAGS) $(P11KIT_CFLAGS)
tests_p11shim_libkhp11shim_la_LDFLAGS = -module -avoid-version -shared \
	-rpath $(abs_builddir)/tests/p11shim -export-symbols-regex '^C_GetFunctionList$$'
tests_p11shim_libkhp11shim_la_LIBADD = -ldl

# nss_khcase: a test NSS module answering user names without regard to
# case (as sssd may), loaded through nss_wrapper: the module must use the
# account's canonical name, not what was typed.
check_LTLIBRARIES += tests/nss/libnss_khcase.la
tests_nss_libnss_khcase_la_SOURCES = tests/nss/nss_khcase.c
tests_nss_libnss_khcase_la_CFLAGS = $(AM_CFLAGS)
tests_nss_libnss_khcase_la_LDFLAGS = -module -avoid-version -shared \
	-rpath $(abs_builddir)/tests/nss -export-symbols-regex '^_nss_khcase_'

# pam_driver: plain pam_start/pam_authenticate/... with the PIN from the
# environment, for pam_wrapper and the valgrind load/unload cycles.
check_PROGRAMS += tests/pam_driver
tests_pam_driver_SOURCES = tests/pam_driver.c
tests_pam_driver_CFLAGS = $(AM_CFLAGS) $(PAM_CFLAGS)
tests_pam_driver_LDADD = $(PAM_LIBS)

TESTS += tests/integration/pam.sh tests/integration/pam_wrapper.sh tests/integration/pam_valgrind.sh
EXTRA_DIST += tests/integration/pam.sh tests/integration/pam_wrapper.sh tests/integration/pam_common.sh \
	tests/integration/pam_valgrind.sh
