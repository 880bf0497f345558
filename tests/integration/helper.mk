# helper/ integration: kubehsm exec with every kubectl and the Python client
# against an nginx mTLS endpoint; kubehsm sign driven by a Go crypto.Signer.
TESTS += tests/integration/exec.sh tests/integration/sign.sh tests/integration/front.sh
EXTRA_DIST += tests/integration/exec.sh tests/integration/sign.sh tests/integration/front.sh \
	tests/lib/kubeapi.sh tests/lib/pylong.py tests/signer/main.go
