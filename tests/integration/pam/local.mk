# pam_kubehsm.so through the real PAM stack: pamtester as root,
# pam_wrapper unprivileged, load/unload cycles under valgrind, no secret
# left in the memory of the login, and nothing of the module's in a kernel
# keyring that another uid can read by possessing it; one initialisation of
# the PKCS#11 module per login when the issuer shares it.
TESTS += tests/integration/pam/pam.sh tests/integration/pam/pam_wrapper.sh \
	tests/integration/pam/pam_timing.sh \
	tests/integration/pam/pam_valgrind.sh tests/integration/pam/pam_secrets.sh \
	tests/integration/pam/pam_keyring.sh tests/integration/pam/pam_module.sh
EXTRA_DIST += tests/integration/pam/pam.sh tests/integration/pam/pam_wrapper.sh \
	tests/integration/pam/pam_timing.sh \
	tests/integration/pam/pam_common.sh tests/integration/pam/pam_valgrind.sh \
	tests/integration/pam/pam_secrets.sh tests/integration/pam/pam_keyring.sh \
	tests/integration/pam/pam_module.sh

# The morning rush (issue #30): forty logins at once, each user's token of
# their own, the issuer's token in a SoftHSM2 store of its own: none lost.
TESTS += tests/integration/pam/pam_rush.sh
EXTRA_DIST += tests/integration/pam/pam_rush.sh
