# cache/: the kernel-keyring credential cache.
cache_sources = \
	cache/kh_record.c cache/kh_record.h \
	cache/kh_cache.c cache/kh_cache.h
# Root-side pieces: the keyring helper child and root's index.
cache_root_sources = \
	cache/kh_cache_int.h cache/kh_cache_common.c \
	cache/kh_keyops.c cache/kh_keyops.h \
	cache/kh_index.c cache/kh_index.h \
	lib/kh_rundir.c lib/kh_rundir.h
