# Tokens and certificates: lib/kh_pkcs11, lib/kh_token and lib/kh_x509 on
# real SoftHSM2 (softhsm.sh, through tests/probes/token_probe and the
# lockout shim tests/probes/p11shim), then the real token stacks below.
TESTS += tests/integration/tokens/softhsm.sh
EXTRA_DIST += tests/integration/tokens/softhsm.sh tests/harness/pki.sh

# A login's PKCS#11 calls, counted through p11shim, with 400 other key
# pairs on the token and without (issue #30): equal.
TESTS += tests/integration/tokens/p11_calls.sh
EXTRA_DIST += tests/integration/tokens/p11_calls.sh

# Real tokens (issue #22): PIV cards on a private pcscd with vsmartcard's
# vpcd and an SP 800-73-4 emulator (tests/harness/pcsc.sh, piv_card.py),
# through OpenSC and Yubico's ykcs11, and a TPM 2.0 (swtpm + tpm2-abrmd +
# tpm2-pkcs11, tests/harness/tpm.sh); one pcscd or one TPM per test file.
TESTS += tests/integration/tokens/piv.sh tests/integration/tokens/ykcs11.sh \
	tests/integration/tokens/tpm.sh tests/integration/tokens/piv_logins.sh
EXTRA_DIST += tests/integration/tokens/piv.sh tests/integration/tokens/ykcs11.sh \
	tests/integration/tokens/piv_logins.sh \
	tests/integration/tokens/tpm.sh tests/integration/tokens/tokens_common.sh \
	tests/harness/pcsc.sh tests/harness/piv_card.py tests/harness/pcsc_client.py \
	tests/harness/tpm.sh
