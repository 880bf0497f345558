# `kubehsm config check` against real files.
TESTS += tests/integration/conf/config_check.sh
dist_check_SCRIPTS += tests/integration/conf/config_check.sh
