# tests/integration/relay.mk — kubehsm-relayd against real parts (issue #15):
# real kubectl 1.27-1.33, the Python client and curl through the relay to an
# nginx mTLS endpoint, real users, the kernel's uid for each connection.
#
# relay_client drives the control protocol with the library the login uses.
check_PROGRAMS += tests/relay_client
tests_relay_client_SOURCES = tests/relay_client.c
tests_relay_client_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_relay_client_LDADD = lib/libkubehsm.la

TESTS += tests/integration/relay.sh tests/integration/relay_stream.sh \
	tests/integration/relay_hostile.sh tests/integration/relay_logins.sh
EXTRA_DIST += tests/integration/relay.sh tests/integration/relay_stream.sh \
	tests/integration/relay_hostile.sh tests/integration/relay_logins.sh \
	tests/lib/relay.sh tests/lib/kubeback.py
