# unit tests: each binary is one cmocka group (one TAP plan).
include tests/unit/policy.mk
include tests/unit/cache.mk
include tests/unit/token.mk
include tests/unit/proto.mk
include tests/unit/polkit.mk
include tests/unit/relay.mk

# make check-unit: the unit tests alone (no root, no real parts, seconds):
# what a package build runs (debian/rules).
check-unit:
	@set -e; t=; for f in $(TESTS); do \
		case $$f in tests/unit/*) t="$$t $$f" ;; esac; \
	done; \
	$(MAKE) $(AM_MAKEFLAGS) check TESTS="$$t"
.PHONY: check-unit
