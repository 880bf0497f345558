# helper/ integration: kubehsm exec with every kubectl and the Python client
# against an nginx mTLS endpoint; kubehsm sign driven by a Go crypto.Signer.
TESTS += tests/integration/exec.sh tests/integration/sign.sh tests/integration/front.sh
EXTRA_DIST += tests/integration/exec.sh tests/integration/sign.sh tests/integration/front.sh \
	tests/lib/kubeapi.sh tests/lib/pylong.py tests/signer/main.go

# The front end once more, with its configured kubehsm-tool.so path in the
# build tree, where no tool module is ever built.  front.sh runs a copy of
# it away from .libs to see how the front end fails without its tool:
# helper/kubehsm would find the one `make install` put in $(pkglibdir) and
# run it, and the test would depend on what is installed.
check_PROGRAMS += tests/kubehsm-notool
tests_kubehsm_notool_SOURCES = $(helper_kubehsm_SOURCES)
tests_kubehsm_notool_CPPFLAGS = $(AM_CPPFLAGS) \
	-DKH_TOOL_PATH='"$(abs_top_builddir)/tests/notool/kubehsm-tool.so"'
tests_kubehsm_notool_CFLAGS = $(helper_kubehsm_CFLAGS)
tests_kubehsm_notool_LDADD = $(helper_kubehsm_LDADD)
tests_kubehsm_notool_LDFLAGS = $(helper_kubehsm_LDFLAGS)
