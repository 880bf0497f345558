# The kubehsm CLI: exec with every kubectl and the Python client against an
# nginx mTLS endpoint; sign driven by a Go crypto.Signer; the front end
# without its tool; the helper under memcheck.
TESTS += tests/integration/helper/exec.sh tests/integration/helper/sign.sh \
	tests/integration/helper/front.sh tests/integration/helper/helper_memcheck.sh
EXTRA_DIST += tests/integration/helper/exec.sh tests/integration/helper/sign.sh \
	tests/integration/helper/front.sh tests/integration/helper/helper_memcheck.sh \
	tests/harness/kubeapi.sh tests/harness/pylong.py
