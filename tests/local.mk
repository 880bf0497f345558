# tests/: cmocka unit tests and real-part integration tests, all TAP.
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
TEST_EXTENSIONS = .sh
SH_LOG_DRIVER = $(LOG_DRIVER)
AM_TESTS_ENVIRONMENT = \
	CMOCKA_MESSAGE_OUTPUT=TAP; export CMOCKA_MESSAGE_OUTPUT; \
	KH_SRCDIR='$(abs_top_srcdir)'; export KH_SRCDIR; \
	KH_BUILDDIR='$(abs_top_builddir)'; export KH_BUILDDIR;

# Shell tests swap valgrind for the sanitizers' own checks in such a build.
if KH_SANITIZERS
AM_TESTS_ENVIRONMENT += KH_SANITIZERS=1; export KH_SANITIZERS;
endif

unit_cflags = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(CRYPTO_CFLAGS) $(JANSSON_CFLAGS) \
	$(LIBCONFIG_CFLAGS) $(KEYUTILS_CFLAGS)
unit_ldadd = lib/libkubehsm.la $(CMOCKA_LIBS)

include tests/unit/local.mk
include tests/integration/local.mk
