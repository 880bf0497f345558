# tests/unit/pam/: the PAM module's logic, no root and no real parts.
#
# The polkit client's input checks and modes (pam/kh_polkit), no polkitd.
check_PROGRAMS += tests/unit/pam/test_polkit
TESTS += tests/unit/pam/test_polkit
tests_unit_pam_test_polkit_SOURCES = tests/unit/pam/test_polkit.c
tests_unit_pam_test_polkit_CFLAGS = $(unit_cflags) $(POLKIT_CFLAGS)
tests_unit_pam_test_polkit_LDADD = pam/libkh-polkit.la $(unit_ldadd)

# The harness itself: Linux-PAM's behaviour where the module relies on it,
# and a failing test for every mistake a test could make.
check_PROGRAMS += tests/unit/pam/test_fakepam
TESTS += tests/unit/pam/test_fakepam
tests_unit_pam_test_fakepam_SOURCES = tests/unit/pam/test_fakepam.c
tests_unit_pam_test_fakepam_CFLAGS = $(unit_cflags) $(PAM_CFLAGS) -Wno-missing-field-initializers
tests_unit_pam_test_fakepam_LDFLAGS = $(fakepam_ldflags)
tests_unit_pam_test_fakepam_LDADD = tests/fakepam/libfakepam.la $(CMOCKA_LIBS)
