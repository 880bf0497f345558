# cache/: the kernel-keyring credential cache, in two convenience libraries.
#
# libkh-cache: the reader, what `kubehsm exec` needs on every kube request
# (the record codec, finding the caller's record).  Like lib/libkh-core.la
# it names no library: the front end takes jansson and libkeyutils from
# their static archives.
noinst_LTLIBRARIES += cache/libkh-cache.la
cache_libkh_cache_la_SOURCES = \
	cache/kh_record.c cache/kh_record.h \
	cache/kh_cache.h cache/kh_cache_int.h \
	cache/kh_cache_common.c cache/kh_cache_find.c cache/kh_cache_account.c
cache_libkh_cache_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(KEYUTILS_CFLAGS)

# libkh-cache-root: the root side — storing, login accounting, revoking,
# listing, the keyring helper child and root's index — so the lean front
# end links none of it.
noinst_LTLIBRARIES += cache/libkh-cache-root.la
cache_libkh_cache_root_la_SOURCES = \
	cache/kh_cache_store.c cache/kh_cache_list.c \
	cache/kh_keyops.c cache/kh_keyops.h \
	cache/kh_index.c cache/kh_index.h
cache_libkh_cache_root_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(KEYUTILS_CFLAGS)
cache_libkh_cache_root_la_LIBADD = $(JANSSON_LIBS) $(KEYUTILS_LIBS)
