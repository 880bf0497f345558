# cache/ unit tests: the record codec.
check_PROGRAMS += tests/unit/test_record
TESTS += tests/unit/test_record
tests_unit_test_record_SOURCES = tests/unit/test_record.c
tests_unit_test_record_CFLAGS = $(unit_cflags)
tests_unit_test_record_LDADD = $(unit_ldadd) $(JANSSON_LIBS)
