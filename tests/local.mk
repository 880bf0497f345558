# tests/: cmocka unit tests (tests/unit/<dir>/, mirroring the tree), probes
# the integration tests drive (tests/probes/), and integration tests against
# real parts, grouped by component (tests/integration/<component>/), all
# TAP.  The shell and Python pieces they share are in tests/harness/; the
# fake libpam the unit tests of pam/ link is in tests/fakepam/.
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

include tests/fakepam/local.mk
include tests/unit/local.mk
include tests/probes/local.mk
include tests/integration/local.mk
