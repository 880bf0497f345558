# Hostile input everywhere and injected faults; the libFuzzer targets
# (tests/fuzz, scripts/fuzz.sh).
TESTS += tests/integration/hardening/badinput.sh tests/integration/hardening/faults.sh
EXTRA_DIST += scripts/fuzz.sh tests/fuzz \
	tests/integration/hardening/badinput.sh tests/integration/hardening/faults.sh

# make fuzz [FUZZ_SECONDS=N]: every libFuzzer target for N seconds (60).
FUZZ_SECONDS = 60
fuzz:
	KH_FUZZ_DIR='$(abs_top_builddir)/fuzz' $(SHELL) $(top_srcdir)/scripts/fuzz.sh $(FUZZ_SECONDS)
.PHONY: fuzz
