# tests/unit/: one cmocka binary per unit (one TAP plan each), in a folder
# named after the directory of the code it tests.  No root, no real parts.
# cmocka programs run through tests/harness/cmocka.sh, which corrects the
# TAP line cmocka 1.1.5 writes for a skipped test.
LOG_COMPILER = $(SHELL) $(top_srcdir)/tests/harness/cmocka.sh
EXTRA_DIST += tests/harness/cmocka.sh

unit_cflags = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(CRYPTO_CFLAGS) $(JANSSON_CFLAGS) \
	$(LIBCONFIG_CFLAGS) $(KEYUTILS_CFLAGS)
unit_ldadd = tests/unit/libunit-file.la $(kh_all_libs) $(CMOCKA_LIBS)

# What any unit test may share: reading a data file whole.
check_LTLIBRARIES += tests/unit/libunit-file.la
tests_unit_libunit_file_la_SOURCES = tests/unit/unit_file.c tests/unit/unit_file.h
tests_unit_libunit_file_la_CFLAGS = $(unit_cflags)

include tests/unit/lib/local.mk
include tests/unit/conf/local.mk
include tests/unit/cache/local.mk
include tests/unit/pam/local.mk
include tests/unit/relay/local.mk
include tests/unit/helper/local.mk

# make check-unit: the unit tests alone (no root, no real parts, seconds):
# what a package build runs (debian/rules).
check-unit:
	@set -e; t=; for f in $(TESTS); do \
		case $$f in tests/unit/*) t="$$t $$f" ;; esac; \
	done; \
	$(MAKE) $(AM_MAKEFLAGS) check TESTS="$$t"
.PHONY: check-unit
