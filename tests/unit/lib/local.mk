# tests/unit/lib/: the shared library's pure parts.
lib_unit_tests = tests/unit/lib/test_proto tests/unit/lib/test_sign \
	tests/unit/lib/test_x509 tests/unit/lib/test_relay_proto \
	tests/unit/lib/test_duration tests/unit/lib/test_template tests/unit/lib/test_words
check_PROGRAMS += $(lib_unit_tests)
TESTS += $(lib_unit_tests)

# The protocol codecs (exec credential, external signer, base64), checked
# against what real clients sent.
proto_test_data = \
	tests/unit/lib/data/proto/kubectl-1.27-v1beta1-cluster.json \
	tests/unit/lib/data/proto/kubectl-1.30-v1-plain.json \
	tests/unit/lib/data/proto/kubectl-1.33-v1-cluster.json \
	tests/unit/lib/data/proto/python-v1beta1.json
EXTRA_DIST += $(proto_test_data)
tests_unit_lib_test_proto_SOURCES = tests/unit/lib/test_proto.c
tests_unit_lib_test_proto_CPPFLAGS = $(AM_CPPFLAGS) \
	-DKH_TEST_DATADIR='"$(abs_top_srcdir)/tests/unit/lib/data/proto"'
tests_unit_lib_test_proto_CFLAGS = $(unit_cflags)
tests_unit_lib_test_proto_LDADD = $(unit_ldadd)

# Go-compatible signing (lib/kh_sign).
tests_unit_lib_test_sign_SOURCES = tests/unit/lib/test_sign.c
tests_unit_lib_test_sign_CFLAGS = $(unit_cflags)
tests_unit_lib_test_sign_LDADD = $(unit_ldadd)

# lib/kh_x509 (and the pure parts of lib/kh_pkcs11).
tests_unit_lib_test_x509_SOURCES = tests/unit/lib/test_x509.c
tests_unit_lib_test_x509_CFLAGS = $(unit_cflags) $(LIBP11_CFLAGS)
tests_unit_lib_test_x509_LDADD = $(unit_ldadd) $(CRYPTO_LIBS)

# The kubehsm-relayd control protocol codec (lib/kh_relay_proto).
tests_unit_lib_test_relay_proto_SOURCES = tests/unit/lib/test_relay_proto.c
tests_unit_lib_test_relay_proto_CFLAGS = $(unit_cflags)
tests_unit_lib_test_relay_proto_LDADD = $(unit_ldadd)

# The policy's general parsers, units of their own like OpenSSH's misc.c:
# durations (lib/kh_duration), %u templates (lib/kh_template) and the
# policy's words and their names (lib/kh_words).
tests_unit_lib_test_duration_SOURCES = tests/unit/lib/test_duration.c
tests_unit_lib_test_duration_CFLAGS = $(unit_cflags)
tests_unit_lib_test_duration_LDADD = $(unit_ldadd)

tests_unit_lib_test_template_SOURCES = tests/unit/lib/test_template.c
tests_unit_lib_test_template_CFLAGS = $(unit_cflags)
tests_unit_lib_test_template_LDADD = $(unit_ldadd)

tests_unit_lib_test_words_SOURCES = tests/unit/lib/test_words.c
tests_unit_lib_test_words_CFLAGS = $(unit_cflags)
tests_unit_lib_test_words_LDADD = $(unit_ldadd)
