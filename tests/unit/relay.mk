# tests/unit/relay.mk — the kubehsm-relayd control protocol codec.
check_PROGRAMS += tests/unit/test_relay_proto
TESTS += tests/unit/test_relay_proto
tests_unit_test_relay_proto_SOURCES = tests/unit/test_relay_proto.c
tests_unit_test_relay_proto_CFLAGS = $(unit_cflags)
tests_unit_test_relay_proto_LDADD = $(unit_ldadd)
