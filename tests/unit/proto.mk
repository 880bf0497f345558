# tests/unit/proto.mk
check_PROGRAMS += tests/unit/test_proto tests/unit/test_sign
TESTS += tests/unit/test_proto tests/unit/test_sign
tests_unit_test_proto_SOURCES = tests/unit/test_proto.c
tests_unit_test_proto_CFLAGS = $(unit_cflags)
tests_unit_test_proto_LDADD = $(unit_ldadd)
tests_unit_test_sign_SOURCES = tests/unit/test_sign.c
tests_unit_test_sign_CFLAGS = $(unit_cflags)
tests_unit_test_sign_LDADD = $(unit_ldadd)
