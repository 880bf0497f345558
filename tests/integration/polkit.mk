# tests/integration/polkit.mk: kh_polkit against a real polkitd.
check_PROGRAMS += tests/polkit_probe
tests_polkit_probe_SOURCES = tests/polkit_probe.c lib/kh_polkit.c
tests_polkit_probe_CFLAGS = $(AM_CFLAGS) $(POLKIT_CFLAGS)
tests_polkit_probe_LDADD = lib/libkubehsm.la $(POLKIT_LIBS)
TESTS += tests/integration/polkit.sh
EXTRA_DIST += tests/integration/polkit.sh tests/lib/polkit.sh
