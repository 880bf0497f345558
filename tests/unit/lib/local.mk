# tests/unit/lib/: the shared library's pure parts.
lib_unit_tests = tests/unit/lib/test_exec_proto tests/unit/lib/test_signer_proto \
	tests/unit/lib/test_base64 tests/unit/lib/test_sign \
	tests/unit/lib/test_x509 tests/unit/lib/test_relay_proto \
	tests/unit/lib/test_duration tests/unit/lib/test_template tests/unit/lib/test_words \
	tests/unit/lib/test_p11_uri tests/unit/lib/test_env tests/unit/lib/test_p11_ui \
	tests/unit/lib/test_token tests/unit/lib/test_opensc_conf tests/unit/lib/test_pcsc
check_PROGRAMS += $(lib_unit_tests)
TESTS += $(lib_unit_tests)

# What the codecs' tests share: malformed-input tables, one TAP line a row.
check_LTLIBRARIES += tests/unit/lib/libproto-cases.la
tests_unit_lib_libproto_cases_la_SOURCES = tests/unit/lib/proto_cases.c \
	tests/unit/lib/proto_cases.h
tests_unit_lib_libproto_cases_la_CFLAGS = $(unit_cflags)

# The ExecCredential codec (lib/kh_exec_proto), checked against what real
# clients sent, and the answer leaving no copy of the key behind.
exec_proto_test_data = \
	tests/unit/lib/data/exec_proto/kubectl-1.27-v1beta1-cluster.json \
	tests/unit/lib/data/exec_proto/kubectl-1.30-v1-plain.json \
	tests/unit/lib/data/exec_proto/kubectl-1.33-v1-cluster.json \
	tests/unit/lib/data/exec_proto/python-v1beta1.json
EXTRA_DIST += $(exec_proto_test_data)
tests_unit_lib_test_exec_proto_SOURCES = tests/unit/lib/test_exec_proto.c
tests_unit_lib_test_exec_proto_CPPFLAGS = $(AM_CPPFLAGS) \
	-DKH_TEST_DATADIR='"$(abs_top_srcdir)/tests/unit/lib/data/exec_proto"'
tests_unit_lib_test_exec_proto_CFLAGS = $(unit_cflags)
tests_unit_lib_test_exec_proto_LDADD = tests/unit/lib/libproto-cases.la $(unit_ldadd)

# The external signer's codec (lib/kh_signer_proto): the KEP's requests,
# the malformed ones, the responses.
tests_unit_lib_test_signer_proto_SOURCES = tests/unit/lib/test_signer_proto.c
tests_unit_lib_test_signer_proto_CFLAGS = $(unit_cflags)
tests_unit_lib_test_signer_proto_LDADD = tests/unit/lib/libproto-cases.la $(unit_ldadd)

# Strict base64 (lib/kh_base64).
tests_unit_lib_test_base64_SOURCES = tests/unit/lib/test_base64.c
tests_unit_lib_test_base64_CFLAGS = $(unit_cflags)
tests_unit_lib_test_base64_LDADD = $(unit_ldadd)

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

# The policy's general parsers are units of their own, each with its test,
# like OpenSSH's misc.c and regress/unittests/misc.
#
# Durations as kubehsm.conf writes them, "1h30m" (lib/kh_duration).
tests_unit_lib_test_duration_SOURCES = tests/unit/lib/test_duration.c
tests_unit_lib_test_duration_CFLAGS = $(unit_cflags)
tests_unit_lib_test_duration_LDADD = $(unit_ldadd)

# %u templates: which escapes pass, what they expand to (lib/kh_template).
tests_unit_lib_test_template_SOURCES = tests/unit/lib/test_template.c
tests_unit_lib_test_template_CFLAGS = $(unit_cflags)
tests_unit_lib_test_template_LDADD = $(unit_ldadd)

# The policy's words and the names printed back for them (lib/kh_words).
tests_unit_lib_test_words_SOURCES = tests/unit/lib/test_words.c
tests_unit_lib_test_words_CFLAGS = $(unit_cflags)
tests_unit_lib_test_words_LDADD = $(unit_ldadd)

# Token URIs (token.uri): what they may say, which tokens they leave out
# (lib/kh_p11_uri, kh_p11_uri_mismatch).
tests_unit_lib_test_p11_uri_SOURCES = tests/unit/lib/test_p11_uri.c
tests_unit_lib_test_p11_uri_CFLAGS = $(unit_cflags) $(LIBP11_CFLAGS)
tests_unit_lib_test_p11_uri_LDADD = $(unit_ldadd) $(CRYPTO_LIBS) $(LIBP11_LIBS)

# pkcs11.env set around a module's initialisation and put back exactly
# (lib/kh_env).
tests_unit_lib_test_env_SOURCES = tests/unit/lib/test_env.c
tests_unit_lib_test_env_CFLAGS = $(unit_cflags)
tests_unit_lib_test_env_LDADD = $(unit_ldadd)

# What answers a context-specific login: the login's PIN or nothing, never
# a terminal (lib/kh_p11_ui).
tests_unit_lib_test_p11_ui_SOURCES = tests/unit/lib/test_p11_ui.c
tests_unit_lib_test_p11_ui_CFLAGS = $(unit_cflags)
tests_unit_lib_test_p11_ui_LDADD = $(unit_ldadd) $(CRYPTO_LIBS)

# The user's token found by its certificate (lib/kh_token): a fake token
# list (ld --wrap), real certificates and validation.
tests_unit_lib_test_token_SOURCES = tests/unit/lib/test_token.c
tests_unit_lib_test_token_CFLAGS = $(unit_cflags) $(LIBP11_CFLAGS)
tests_unit_lib_test_token_LDFLAGS = -Wl,--wrap=kh_p11_list_tokens -Wl,--wrap=kh_p11_use_token \
	-Wl,--wrap=kh_p11_read_certs
tests_unit_lib_test_token_LDADD = $(unit_ldadd) $(CRYPTO_LIBS) $(LIBP11_LIBS)

# Whether an opensc.conf resets a card at disconnect, read as OpenSC reads
# it (lib/kh_opensc_conf).
tests_unit_lib_test_opensc_conf_SOURCES = tests/unit/lib/test_opensc_conf.c
tests_unit_lib_test_opensc_conf_CFLAGS = $(unit_cflags)
tests_unit_lib_test_opensc_conf_LDADD = $(unit_ldadd)

# What a process refused by pcscd is told (lib/kh_pcsc), through the real
# libpcsclite against a socket that closes at once.
tests_unit_lib_test_pcsc_SOURCES = tests/unit/lib/test_pcsc.c
tests_unit_lib_test_pcsc_CFLAGS = $(unit_cflags)
tests_unit_lib_test_pcsc_LDADD = $(unit_ldadd)
