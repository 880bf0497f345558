# tests/unit/token.mk — lib/kh_x509 (and the pure parts of lib/kh_pkcs11).
check_PROGRAMS += tests/unit/test_x509
TESTS += tests/unit/test_x509
tests_unit_test_x509_SOURCES = tests/unit/test_x509.c
tests_unit_test_x509_CFLAGS = $(unit_cflags) $(LIBP11_CFLAGS)
tests_unit_test_x509_LDADD = $(unit_ldadd) $(CRYPTO_LIBS)
