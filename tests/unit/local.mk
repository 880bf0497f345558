# tests/unit/: one cmocka binary per unit (one TAP plan each), in a folder
# named after the directory of the code it tests.  No root, no real parts.
unit_cflags = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(CRYPTO_CFLAGS) $(JANSSON_CFLAGS) \
	$(LIBCONFIG_CFLAGS) $(KEYUTILS_CFLAGS)
unit_ldadd = $(kh_all_libs) $(CMOCKA_LIBS)

include tests/unit/lib/local.mk
include tests/unit/conf/local.mk
include tests/unit/cache/local.mk
include tests/unit/pam/local.mk
include tests/unit/relay/local.mk

# make check-unit: the unit tests alone (no root, no real parts, seconds):
# what a package build runs (debian/rules).
check-unit:
	@set -e; t=; for f in $(TESTS); do \
		case $$f in tests/unit/*) t="$$t $$f" ;; esac; \
	done; \
	$(MAKE) $(AM_MAKEFLAGS) check TESTS="$$t"
.PHONY: check-unit
