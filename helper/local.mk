# helper/: the unprivileged kubehsm CLI (never setuid).
#
# One command in two programs: `kubehsm` is the lean front end kubectl runs
# on every invocation (static-pie by default: see configure.ac; it serves
# `exec` itself); every other subcommand lives in kubehsm-tool, an ordinary
# dynamic program in $(pkglibexecdir), which the front end executes in its
# own place for them.  See helper/kubehsm.c.
bin_PROGRAMS += helper/kubehsm
helper_kubehsm_SOURCES = \
	helper/kubehsm.c helper/kh_cli.c helper/kh_cli.h \
	helper/cmd_exec.c helper/kh_front_early.c
helper_kubehsm_CPPFLAGS = $(AM_CPPFLAGS) -DKH_TOOL_PATH='"$(pkglibexecdir)/kubehsm-tool"'
helper_kubehsm_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(KEYUTILS_CFLAGS) \
	$(KH_FRONT_EARLY_CFLAGS)
helper_kubehsm_LDADD = $(kh_reader_libs) $(KH_FRONT_LIBS)
# Full RELRO and bind-now like every other program; static-pie adds no
# dynamic loader at all (KH_FRONT_LDFLAGS); on x86-64 the entry point is
# kh_front_entry (KH_FRONT_EARLY_LDFLAGS, helper/kh_front_early.c).
helper_kubehsm_LDFLAGS = $(AM_LDFLAGS) $(KH_FRONT_LDFLAGS) $(KH_FRONT_EARLY_LDFLAGS)

pkglibexec_PROGRAMS += helper/kubehsm-tool
helper_kubehsm_tool_SOURCES = \
	helper/kubehsm-tool.c helper/kh_cli.c helper/kh_cli.h \
	helper/cmd_config.c helper/cmd_token.c \
	helper/cmd_exec.c helper/cmd_sign.c helper/cmd_status.c helper/cmd_login.c \
	helper/cmd_kubeconfig.c helper/cmd_kubeconfig_relay.c helper/cmd_admin.c \
	helper/cmd_scan.c helper/kh_scan.h helper/kh_scan_content.c helper/kh_scan_fs.c \
	helper/kh_scan_report.c helper/kh_scan_yaml.c
helper_kubehsm_tool_CPPFLAGS = $(AM_CPPFLAGS) -DKH_FRONT_PATH='"$(bindir)/kubehsm"'
helper_kubehsm_tool_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(JANSSON_CFLAGS) \
	$(LIBCONFIG_CFLAGS) $(KEYUTILS_CFLAGS) $(LIBP11_CFLAGS) $(YAML_CFLAGS)
helper_kubehsm_tool_LDADD = $(kh_all_libs) $(YAML_LIBS)
# jansson, libkeyutils and libconfig from their static archives when the
# build has them (configure.ac, KH_TOOL_LDFLAGS).
helper_kubehsm_tool_LDFLAGS = $(AM_LDFLAGS) $(KH_TOOL_LDFLAGS)
dist_man_MANS += helper/kubehsm.1

# The root half of `kubehsm login`, run by pkexec only (never setuid): a
# PAM application of the kubehsm service.  libc and libpam, nothing else.
pkglibexec_PROGRAMS += helper/kubehsm-login
helper_kubehsm_login_SOURCES = helper/kubehsm-login.c
helper_kubehsm_login_CFLAGS = $(AM_CFLAGS) $(PAM_CFLAGS)
helper_kubehsm_login_LDADD = $(PAM_LIBS)
