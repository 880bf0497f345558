# kubehsm-relayd against real parts: real kubectl 1.27-1.33, the Python
# client and curl through the relay to an nginx mTLS endpoint, real users,
# the kernel's uid for each connection (tests/probes/relay_client drives
# its control protocol).
TESTS += tests/integration/relay/relay.sh tests/integration/relay/relay_stream.sh \
	tests/integration/relay/relay_hostile.sh tests/integration/relay/relay_logins.sh \
	tests/integration/relay/relay_http.sh tests/integration/relay/relay_diff.sh \
	tests/integration/relay/relay_logrotate.sh tests/integration/relay/relay_revoke_hostile.sh
EXTRA_DIST += tests/integration/relay/relay.sh tests/integration/relay/relay_stream.sh \
	tests/integration/relay/relay_hostile.sh tests/integration/relay/relay_logins.sh \
	tests/integration/relay/relay_http.sh tests/harness/relay.sh tests/harness/kubeback.py \
	tests/integration/relay/relay_diff.sh tests/harness/goapi.sh tests/harness/goapi/main.go \
	tests/harness/goapi/go.mod tests/harness/reqdiff.py \
	tests/integration/relay/relay_logrotate.sh debian/kubehsm-relayd.logrotate \
	tests/integration/relay/relay_revoke_hostile.sh
