# integration tests: TAP shell scripts against real parts.
EXTRA_DIST += tests/lib/tap.sh
include tests/integration/config.mk
include tests/integration/cache.mk
include tests/integration/token.mk
include tests/integration/polkit.mk
include tests/integration/pam.mk
include tests/integration/logins.mk
include tests/integration/helper.mk
include tests/integration/scenario.mk
include tests/integration/hardening.mk
include tests/integration/relay.mk
include tests/integration/clients.mk
