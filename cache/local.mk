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
	cache/kh_cache_common.c cache/kh_cache_find.c cache/kh_cache_account.c \
	cache/kh_keydesc.c
cache_libkh_cache_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(KEYUTILS_CFLAGS)

# libkh-cache-root: the root side — storing, login accounting, revoking,
# listing, the keyring helper child and root's index — so the lean front
# end links none of it.
noinst_LTLIBRARIES += cache/libkh-cache-root.la
cache_libkh_cache_root_la_SOURCES = \
	cache/kh_cache_store.c cache/kh_cache_list.c \
	cache/kh_keyops.c cache/kh_keyops.h cache/kh_keyops_wire.h \
	cache/kh_asuser.c cache/kh_asuser.h \
	cache/kh_index.c cache/kh_index.h
cache_libkh_cache_root_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DKH_KEYOPS_PATH='"$(pkglibexecdir)/kubehsm-keyops"'
cache_libkh_cache_root_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(KEYUTILS_CFLAGS)
cache_libkh_cache_root_la_LIBADD = $(JANSSON_LIBS) $(KEYUTILS_LIBS)

# The keyring helper kh_keyops runs as the user (cache/kh_keyops_child.c):
# a program of its own, started with posix_spawn, linked like the front
# end (static-pie where possible) so that starting it at login costs an
# exec and no dynamic loading.
pkglibexec_PROGRAMS += cache/kubehsm-keyops
cache_kubehsm_keyops_SOURCES = cache/kubehsm-keyops.c cache/kh_keyops_child.c \
	cache/kh_keyops_wire.h cache/kh_keydesc.c
cache_kubehsm_keyops_CFLAGS = $(AM_CFLAGS) $(KEYUTILS_CFLAGS)
cache_kubehsm_keyops_LDADD = lib/libkh-core.la $(KH_KEYOPS_LIBS)
cache_kubehsm_keyops_LDFLAGS = $(AM_LDFLAGS) $(KH_FRONT_LDFLAGS)

# In the build tree, every program and module that runs the helper finds
# it beside itself (kh_keyops.c looks there before $(pkglibexecdir), as an
# install that keeps them together would have it): a link in each of their
# directories.  Never installed.
kh_keyops_link_dirs = pam/.libs helper tests/probes
all-local: cache-keyops-links
cache-keyops-links: cache/kubehsm-keyops$(EXEEXT)
	@for d in $(kh_keyops_link_dirs); do \
		$(MKDIR_P) $$d && ln -sf $(abs_builddir)/cache/kubehsm-keyops$(EXEEXT) \
			$$d/kubehsm-keyops$(EXEEXT) || exit 1; \
	done
clean-local: cache-keyops-links-clean
cache-keyops-links-clean:
	@for d in $(kh_keyops_link_dirs); do rm -f $$d/kubehsm-keyops$(EXEEXT); done
.PHONY: cache-keyops-links cache-keyops-links-clean
