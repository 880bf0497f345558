# cache/: the kernel-keyring credential cache.
cache_sources = \
	cache/kh_record.c cache/kh_record.h \
	cache/kh_cache.c cache/kh_cache.h
