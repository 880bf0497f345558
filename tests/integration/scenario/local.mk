# The end-to-end scenario: ten users logged in through the real PAM module,
# 200 concurrent kubectl runs against an mTLS endpoint that echoes the
# client certificate subject, logout, expiry and a long-running Python
# client across a re-login.
TESTS += tests/integration/scenario/scenario.sh
EXTRA_DIST += tests/integration/scenario/scenario.sh

# The scenario's 200 concurrent kubectl runs need both cores: with
# `make check -j2` they must not share the machine with the long,
# single-threaded valgrind PAM run, which therefore starts after them.
tests/integration/pam/pam_valgrind.log: tests/integration/scenario/scenario.log
