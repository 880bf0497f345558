# cache/: the kernel-keyring credential cache.
#
# The reader (what `kubehsm exec` needs on every kube request) goes into
# libkubehsm-core; the root side (storing, accounting, revoking, listing,
# the keyring helper child and root's index) into libkubehsm only, so the
# lean front end links none of it.
cache_sources = \
	cache/kh_record.c cache/kh_record.h \
	cache/kh_cache.h cache/kh_cache_int.h \
	cache/kh_cache_common.c cache/kh_cache_find.c
cache_root_sources = \
	cache/kh_cache_store.c cache/kh_cache_list.c \
	cache/kh_keyops.c cache/kh_keyops.h \
	cache/kh_index.c cache/kh_index.h \
	lib/kh_rundir.c lib/kh_rundir.h
