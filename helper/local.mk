# helper/: the unprivileged `kubehsm` CLI (never setuid).
bin_PROGRAMS += helper/kubehsm
helper_kubehsm_SOURCES = \
	helper/main.c helper/kh_cli.h \
	helper/cmd_config.c
helper_kubehsm_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(JANSSON_CFLAGS) $(LIBCONFIG_CFLAGS)
helper_kubehsm_LDADD = lib/libkubehsm.la
