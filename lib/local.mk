# libkubehsm-core: what `kubehsm exec` needs and nothing more — libc,
# jansson and libkeyutils.  No crypto library: exec runs on every kubectl
# invocation and must start like a minimal program.
noinst_LTLIBRARIES += lib/libkubehsm-core.la
lib_libkubehsm_core_la_SOURCES = \
	lib/kh_error.c lib/kh_error.h \
	lib/kh_mem.c lib/kh_mem.h \
	lib/kh_io.c lib/kh_io.h \
	lib/kh_path.c lib/kh_path.h \
	lib/kh_json.c lib/kh_json.h \
	lib/kh_proto_json.c lib/kh_proto_json.h \
	lib/kh_proto_exec.c \
	conf/kh_policy_words.c conf/kh_policy_words.h \
	$(cache_sources)
lib_libkubehsm_core_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(KEYUTILS_CFLAGS)
# No LIBADD: each program that links the core names jansson and libkeyutils
# itself, so the front end can take them from their static archives.

# libkubehsm: the internal library pam/ and kubehsm-tool.so share (the core,
# plus OpenSSL, libp11, libconfig and polkit).
noinst_LTLIBRARIES += lib/libkubehsm.la
lib_libkubehsm_la_SOURCES = \
	lib/kh_error_ssl.c \
	lib/kh_dl.c lib/kh_dl.h \
	$(cache_root_sources) \
	$(conf_sources)
lib_libkubehsm_la_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(LIBCONFIG_CFLAGS) \
	$(JANSSON_CFLAGS) $(KEYUTILS_CFLAGS) $(LIBP11_CFLAGS)
lib_libkubehsm_la_LIBADD = lib/libkubehsm-core.la $(CRYPTO_LIBS) $(LIBCONFIG_LIBS) \
	$(JANSSON_LIBS) $(KEYUTILS_LIBS) $(LIBP11_LIBS)

# Each area appends its sources in its own fragment.
include lib/token.mk
include lib/proto.mk
include lib/polkit.mk
include lib/relay.mk
