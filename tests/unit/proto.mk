# tests/unit/proto.mk — protocol codecs (test_proto) and Go-compatible signing (test_sign).
check_PROGRAMS += tests/unit/test_proto tests/unit/test_sign
TESTS += tests/unit/test_proto tests/unit/test_sign

proto_test_data = \
	tests/unit/data/proto/kubectl-1.27-v1beta1-cluster.json \
	tests/unit/data/proto/kubectl-1.30-v1-plain.json \
	tests/unit/data/proto/kubectl-1.33-v1-cluster.json \
	tests/unit/data/proto/python-v1beta1.json
EXTRA_DIST += $(proto_test_data)

tests_unit_test_proto_SOURCES = tests/unit/test_proto.c
tests_unit_test_proto_CPPFLAGS = $(AM_CPPFLAGS) \
	-DKH_TEST_DATADIR='"$(abs_top_srcdir)/tests/unit/data/proto"'
tests_unit_test_proto_CFLAGS = $(unit_cflags)
tests_unit_test_proto_LDADD = $(unit_ldadd)

tests_unit_test_sign_SOURCES = tests/unit/test_sign.c
tests_unit_test_sign_CFLAGS = $(unit_cflags)
tests_unit_test_sign_LDADD = $(unit_ldadd)
