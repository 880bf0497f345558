# tests/unit/conf/: the policy loader (conf/kh_policy*.c), one program per
# job of the loader.  They share the fixture in policy_fixture.c: a private
# directory of files a policy names, and a base policy to replace lines of.
conf_unit_tests = tests/unit/conf/test_policy_sections tests/unit/conf/test_policy_files \
	tests/unit/conf/test_policy_relay tests/unit/conf/test_policy_print
check_PROGRAMS += $(conf_unit_tests)
TESTS += $(conf_unit_tests)

check_LTLIBRARIES += tests/unit/conf/libpolicy-fixture.la
tests_unit_conf_libpolicy_fixture_la_SOURCES = tests/unit/conf/policy_fixture.c \
	tests/unit/conf/policy_fixture.h
tests_unit_conf_libpolicy_fixture_la_CFLAGS = $(unit_cflags)
conf_unit_ldadd = tests/unit/conf/libpolicy-fixture.la $(unit_ldadd)

# What loads, the defaults, and every refused value with its line
# (kh_policy.c, kh_policy_get.c, kh_policy_sections.c); reads the sample
# conf/kubehsm.conf.
tests_unit_conf_test_policy_sections_SOURCES = tests/unit/conf/test_policy_sections.c
tests_unit_conf_test_policy_sections_CPPFLAGS = $(AM_CPPFLAGS) \
	-DKH_TEST_SRCDIR='"$(abs_top_srcdir)"'
tests_unit_conf_test_policy_sections_CFLAGS = $(unit_cflags)
tests_unit_conf_test_policy_sections_LDADD = $(conf_unit_ldadd)

# The files the policy trusts: owner, mode, links, StrictModes ancestors
# (kh_policy_file.c).
tests_unit_conf_test_policy_files_SOURCES = tests/unit/conf/test_policy_files.c
tests_unit_conf_test_policy_files_CFLAGS = $(unit_cflags)
tests_unit_conf_test_policy_files_LDADD = $(conf_unit_ldadd)

# The relay section, session.deliver and the relay accessors
# (kh_policy_relay.c).
tests_unit_conf_test_policy_relay_SOURCES = tests/unit/conf/test_policy_relay.c
tests_unit_conf_test_policy_relay_CFLAGS = $(unit_cflags)
tests_unit_conf_test_policy_relay_LDADD = $(conf_unit_ldadd)

# The effective policy as printed: deterministic, no PIN, loads again
# (kh_policy_print.c).
tests_unit_conf_test_policy_print_SOURCES = tests/unit/conf/test_policy_print.c
tests_unit_conf_test_policy_print_CFLAGS = $(unit_cflags)
tests_unit_conf_test_policy_print_LDADD = $(conf_unit_ldadd)
