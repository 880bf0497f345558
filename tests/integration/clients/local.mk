# Every kube client (client-node, ruby-kubeclient, Python, curl, kubectl,
# kubectl proxy) through the entry `kubehsm kubeconfig` prints.  The test
# installs @kubernetes/client-node from clients-node/package-lock.json into
# the build tree (tests/integration/clients/clients-npm), once per build.
TESTS += tests/integration/clients/clients.sh
EXTRA_DIST += tests/integration/clients/clients.sh \
	tests/integration/clients/clients-node/package.json \
	tests/integration/clients/clients-node/package-lock.json

clean-local: clients-clean-npm
clients-clean-npm:
	-rm -rf tests/integration/clients/clients-npm tests/integration/clients/clients-npm.lock
.PHONY: clients-clean-npm
