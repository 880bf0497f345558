# unit tests: each binary is one cmocka group (one TAP plan).
include tests/unit/policy.mk
include tests/unit/cache.mk
include tests/unit/token.mk
include tests/unit/proto.mk
include tests/unit/polkit.mk
