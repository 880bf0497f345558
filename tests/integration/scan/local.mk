# kubehsm admin scan on real homes of real users with planted credentials,
# links, a FIFO and files it cannot parse.
TESTS += tests/integration/scan/scan.sh
EXTRA_DIST += tests/integration/scan/scan.sh
