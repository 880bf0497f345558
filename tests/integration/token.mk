# tests/integration/token.mk — tokens and certificates on real SoftHSM2.
check_PROGRAMS += tests/token_probe
tests_token_probe_SOURCES = tests/token_probe.c
tests_token_probe_CFLAGS = $(unit_cflags) $(LIBP11_CFLAGS)
tests_token_probe_LDADD = lib/libkubehsm.la $(CRYPTO_LIBS) $(LIBP11_LIBS)
TESTS += tests/integration/token.sh
EXTRA_DIST += tests/integration/token.sh tests/lib/pki.sh

# tests/p11shim/p11shim.c (the lockout / removal PKCS#11 shim) is built by
# tests/integration/pam.mk as tests/p11shim/libkhp11shim.la; token.sh uses it.
