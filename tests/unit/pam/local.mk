# tests/unit/pam/: the PAM module's parts that need no PAM stack.
#
# The polkit client's input checks and modes (pam/kh_polkit), no polkitd.
check_PROGRAMS += tests/unit/pam/test_polkit
TESTS += tests/unit/pam/test_polkit
tests_unit_pam_test_polkit_SOURCES = tests/unit/pam/test_polkit.c
tests_unit_pam_test_polkit_CFLAGS = $(unit_cflags) $(POLKIT_CFLAGS)
tests_unit_pam_test_polkit_LDADD = pam/libkh-polkit.la $(unit_ldadd)
