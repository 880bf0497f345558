# tests/integration/token.mk — tokens and certificates on real SoftHSM2.
check_PROGRAMS += tests/token_probe
tests_token_probe_SOURCES = tests/token_probe.c
tests_token_probe_CFLAGS = $(unit_cflags) $(LIBP11_CFLAGS)
tests_token_probe_LDADD = lib/libkubehsm.la $(CRYPTO_LIBS) $(LIBP11_LIBS)
TESTS += tests/integration/token.sh
EXTRA_DIST += tests/integration/token.sh tests/lib/pki.sh

# tests/p11shim: a PKCS#11 module forwarding to SoftHSM that can report a
# locked / final-try / count-low PIN, count C_Login calls and lose the token
# (SoftHSM does none of that).  Built for `make check` only, never installed.
#
# Its PKCS#11 header is p11-kit's (libp11-kit-dev), which configure does not
# look for; so the compiled source is generated: it includes the header
# pkg-config points at, then tests/p11shim/p11shim.c.
check_LTLIBRARIES += tests/p11shim/libp11shim.la
nodist_tests_p11shim_libp11shim_la_SOURCES = tests/p11shim/p11shim-gen.c
tests_p11shim_libp11shim_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
EXTRA_DIST += tests/p11shim/p11shim.c
CLEANFILES += tests/p11shim/p11shim-gen.c
tests/p11shim/p11shim-gen.c: $(top_srcdir)/tests/p11shim/p11shim.c Makefile
	$(AM_V_GEN)$(MKDIR_P) tests/p11shim && \
	d=`$(PKG_CONFIG) --variable=includedir p11-kit-1` && test -n "$$d" && \
	test -r "$$d/p11-kit-1/p11-kit/pkcs11.h" && \
	{ echo '#include "config.h"'; \
	  echo "#include \"$$d/p11-kit-1/p11-kit/pkcs11.h\""; \
	  echo '#include "$(abs_top_srcdir)/tests/p11shim/p11shim.c"'; } >$@-t && mv $@-t $@ || \
	{ echo "p11shim needs p11-kit's pkcs11.h: apt-get install libp11-kit-dev" >&2; exit 1; }
