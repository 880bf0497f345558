# tests/unit/cache/: the record codec (cache/kh_record).
check_PROGRAMS += tests/unit/cache/test_record
TESTS += tests/unit/cache/test_record
tests_unit_cache_test_record_SOURCES = tests/unit/cache/test_record.c
tests_unit_cache_test_record_CFLAGS = $(unit_cflags)
tests_unit_cache_test_record_LDADD = $(unit_ldadd) $(JANSSON_LIBS)
