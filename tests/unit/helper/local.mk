# tests/unit/helper/: the pure parts of kubehsm's commands — the kubeconfig
# loader of `kubehsm admin scan` (helper/kh_scan_yaml.c).
helper_unit_tests = tests/unit/helper/test_scan_yaml
check_PROGRAMS += $(helper_unit_tests)
TESTS += $(helper_unit_tests)

tests_unit_helper_test_scan_yaml_SOURCES = tests/unit/helper/test_scan_yaml.c \
	helper/kh_scan_yaml.c helper/kh_scan.h
tests_unit_helper_test_scan_yaml_CFLAGS = $(unit_cflags) $(YAML_CFLAGS)
tests_unit_helper_test_scan_yaml_LDADD = $(unit_ldadd) $(YAML_LIBS)
