# tests/integration/clients.mk — issue #17: every kube client (client-node,
# ruby-kubeclient, Python, curl, kubectl, kubectl proxy) through the entry
# `kubehsm kubeconfig` prints.  The test installs @kubernetes/client-node
# from tests/integration/clients-node/package-lock.json into the build tree
# (tests/integration/clients-npm), once per build.
TESTS += tests/integration/clients.sh
EXTRA_DIST += tests/integration/clients.sh \
	tests/integration/clients-node/package.json \
	tests/integration/clients-node/package-lock.json

clean-local: clients-clean-npm
clients-clean-npm:
	-rm -rf tests/integration/clients-npm tests/integration/clients-npm.lock
.PHONY: clients-clean-npm
