# The keyring cache: the real kernel keyring with real users.
TESTS += tests/integration/cache/cache.sh
EXTRA_DIST += tests/integration/cache/cache.sh tests/harness/users.sh tests/harness/memscan.py \
	tests/harness/record.py
