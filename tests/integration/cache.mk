# cache/ integration: the real kernel keyring with real users.
check_PROGRAMS += tests/cache_probe
tests_cache_probe_SOURCES = tests/cache_probe.c
tests_cache_probe_CFLAGS = $(unit_cflags)
tests_cache_probe_LDADD = lib/libkubehsm.la $(KEYUTILS_LIBS)
TESTS += tests/integration/cache.sh
EXTRA_DIST += tests/integration/cache.sh tests/lib/users.sh tests/lib/memscan.py \
	tests/lib/record.py
