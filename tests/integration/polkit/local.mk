# The polkit client against a real polkitd (tests/probes/polkit_probe).
TESTS += tests/integration/polkit/polkit.sh
EXTRA_DIST += tests/integration/polkit/polkit.sh tests/harness/polkit.sh
