# tests/integration/hardening.mk — issue #7: the libFuzzer targets; hostile
# input, fault injection, secrets in memory, the helper under memcheck.
TESTS += tests/integration/badinput.sh tests/integration/faults.sh \
	tests/integration/pam_secrets.sh tests/integration/helper_memcheck.sh
EXTRA_DIST += scripts/fuzz.sh tests/fuzz \
	tests/integration/badinput.sh tests/integration/faults.sh \
	tests/integration/pam_secrets.sh tests/integration/helper_memcheck.sh

# make fuzz [FUZZ_SECONDS=N]: every libFuzzer target for N seconds (60).
FUZZ_SECONDS = 60
fuzz:
	KH_FUZZ_DIR='$(abs_top_builddir)/fuzz' $(SHELL) $(top_srcdir)/scripts/fuzz.sh $(FUZZ_SECONDS)
.PHONY: fuzz
