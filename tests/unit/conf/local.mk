# tests/unit/conf/: the policy loader (conf/kh_policy*.c).
check_PROGRAMS += tests/unit/conf/test_policy
TESTS += tests/unit/conf/test_policy
tests_unit_conf_test_policy_SOURCES = tests/unit/conf/test_policy.c
tests_unit_conf_test_policy_CPPFLAGS = $(AM_CPPFLAGS) -DKH_TEST_SRCDIR='"$(abs_top_srcdir)"'
tests_unit_conf_test_policy_CFLAGS = $(unit_cflags)
tests_unit_conf_test_policy_LDADD = $(unit_ldadd)
