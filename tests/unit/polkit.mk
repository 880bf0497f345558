# tests/unit/polkit.mk: kh_polkit input checks and modes, no polkitd needed.
check_PROGRAMS += tests/unit/test_polkit
TESTS += tests/unit/test_polkit
tests_unit_test_polkit_SOURCES = tests/unit/test_polkit.c lib/kh_polkit.c
tests_unit_test_polkit_CFLAGS = $(unit_cflags) $(POLKIT_CFLAGS)
tests_unit_test_polkit_LDADD = $(unit_ldadd) $(POLKIT_LIBS)
