# Tokens and certificates on real SoftHSM2 (tests/probes/token_probe, and
# the lockout shim tests/probes/p11shim).
TESTS += tests/integration/token/token.sh
EXTRA_DIST += tests/integration/token/token.sh tests/harness/pki.sh
