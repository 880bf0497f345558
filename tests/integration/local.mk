# tests/integration/: TAP shell scripts against real parts, one folder per
# component.  Each folder's local.mk lists its tests and what they ship.
EXTRA_DIST += tests/harness/tap.sh tests/harness/pamsvc.sh
include tests/integration/conf/local.mk
include tests/integration/cache/local.mk
include tests/integration/tokens/local.mk
include tests/integration/polkit/local.mk
include tests/integration/pam/local.mk
include tests/integration/logins/local.mk
include tests/integration/helper/local.mk
include tests/integration/scan/local.mk
include tests/integration/scenario/local.mk
include tests/integration/hardening/local.mk
include tests/integration/relay/local.mk
include tests/integration/clients/local.mk
