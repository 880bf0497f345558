# tests/unit/relay/: kubehsm-relayd's pure parts (relay/libkh-relay.la):
# no socket, no root, no real API server.
relay_unit_tests = tests/unit/relay/test_http tests/unit/relay/test_answers \
	tests/unit/relay/test_pools
check_PROGRAMS += $(relay_unit_tests)
TESTS += $(relay_unit_tests)
relay_unit_ldadd = relay/libkh-relay.la $(unit_ldadd) $(JANSSON_LIBS) $(HTTP_PARSER_LIBS)

# Request and response heads (relay/kh_rhttp): what reaches the API server.
tests_unit_relay_test_http_SOURCES = tests/unit/relay/test_http.c
tests_unit_relay_test_http_CFLAGS = $(unit_cflags)
tests_unit_relay_test_http_LDADD = $(relay_unit_ldadd)

# The relay's own answers (kh_rdeny) and audit lines (kh_raudit).
tests_unit_relay_test_answers_SOURCES = tests/unit/relay/test_answers.c
tests_unit_relay_test_answers_CFLAGS = $(unit_cflags)
tests_unit_relay_test_answers_LDADD = $(relay_unit_ldadd)

# Control-socket admission (kh_rctlpool) and I/O blocks (kh_rbuf).
tests_unit_relay_test_pools_SOURCES = tests/unit/relay/test_pools.c
tests_unit_relay_test_pools_CFLAGS = $(unit_cflags)
tests_unit_relay_test_pools_LDADD = $(relay_unit_ldadd)
