# tests/unit/cache/: the record codec (cache/kh_record) and the ended marker.
check_PROGRAMS += tests/unit/cache/test_record
TESTS += tests/unit/cache/test_record
tests_unit_cache_test_record_SOURCES = tests/unit/cache/test_record.c
tests_unit_cache_test_record_CFLAGS = $(unit_cflags)
tests_unit_cache_test_record_LDADD = $(unit_ldadd) $(JANSSON_LIBS)

# The "ended" marker's payload: whose session it was (cache/kh_cache_common).
check_PROGRAMS += tests/unit/cache/test_marker
TESTS += tests/unit/cache/test_marker
tests_unit_cache_test_marker_SOURCES = tests/unit/cache/test_marker.c
tests_unit_cache_test_marker_CFLAGS = $(unit_cflags)
tests_unit_cache_test_marker_LDADD = $(unit_ldadd) $(JANSSON_LIBS) $(KEYUTILS_LIBS)
