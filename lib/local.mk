# libkubehsm: the internal convenience library shared by pam/ and helper/.
noinst_LTLIBRARIES += lib/libkubehsm.la
lib_libkubehsm_la_SOURCES = \
	lib/kh_error.c lib/kh_error.h \
	lib/kh_mem.c lib/kh_mem.h \
	lib/kh_json.c lib/kh_json.h \
	lib/kh_dl.c lib/kh_dl.h \
	$(conf_sources) \
	$(cache_sources)
lib_libkubehsm_la_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(LIBCONFIG_CFLAGS) \
	$(JANSSON_CFLAGS) $(KEYUTILS_CFLAGS) $(LIBP11_CFLAGS)
lib_libkubehsm_la_LIBADD = $(CRYPTO_LIBS) $(LIBCONFIG_LIBS) $(JANSSON_LIBS) \
	$(KEYUTILS_LIBS) $(LIBP11_LIBS)

# Each area appends its sources in its own fragment.
include lib/token.mk
include lib/proto.mk
include lib/polkit.mk
