# The keyring cache: the real kernel keyring with real users, and a uid
# handed from one account to the next (real userdel and useradd).
TESTS += tests/integration/cache/cache.sh tests/integration/cache/uid_reuse.sh
EXTRA_DIST += tests/integration/cache/cache.sh tests/integration/cache/uid_reuse.sh \
	tests/harness/users.sh tests/harness/memscan.py tests/harness/record.py
