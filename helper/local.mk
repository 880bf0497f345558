# helper/: the unprivileged `kubehsm` CLI (never setuid).
bin_PROGRAMS += helper/kubehsm
helper_kubehsm_SOURCES = \
	helper/main.c helper/kh_cli.h \
	helper/cmd_config.c \
	helper/cmd_exec.c helper/cmd_sign.c helper/cmd_status.c \
	helper/cmd_kubeconfig.c helper/cmd_admin.c
helper_kubehsm_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(JANSSON_CFLAGS) $(LIBCONFIG_CFLAGS) \
	$(KEYUTILS_CFLAGS) $(LIBP11_CFLAGS)
helper_kubehsm_LDADD = lib/libkubehsm.la
dist_man_MANS += helper/kubehsm.1
