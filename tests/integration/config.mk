# tests/integration/config.mk — `kubehsm config check` against real files.
TESTS += tests/integration/config_check.sh
dist_check_SCRIPTS += tests/integration/config_check.sh
