# conf/: the policy schema and loader (libconfig), the sample policy, the
# polkit actions.
noinst_LTLIBRARIES += conf/libkh-conf.la
# One job a file behind conf/kh_policy_int.h: the load itself, file safety,
# typed getters, the sections, the relay section, printing.
conf_libkh_conf_la_SOURCES = conf/kh_policy.c conf/kh_policy.h conf/kh_policy_int.h \
	conf/kh_policy_file.c conf/kh_policy_get.c conf/kh_policy_sections.c \
	conf/kh_policy_relay.c conf/kh_policy_print.c
conf_libkh_conf_la_CFLAGS = $(AM_CFLAGS) $(LIBCONFIG_CFLAGS)
conf_libkh_conf_la_LIBADD = $(LIBCONFIG_LIBS)

kubehsmconfdir = $(sysconfdir)/kubehsm
dist_kubehsmconf_DATA = conf/kubehsm.conf
dist_man_MANS += conf/kubehsm.conf.5

# polkitd reads actions only from /usr/share/polkit-1/actions: configure
# with --prefix=/usr (or --datadir=/usr/share) for it to take effect.
polkitactionsdir = $(datadir)/polkit-1/actions
polkitactions_DATA = conf/org.kubehsm.policy
EXTRA_DIST += conf/org.kubehsm.policy.in conf/50-kubehsm.rules.example \
	conf/50-kubehsm-pcscd.rules.example
CLEANFILES += conf/org.kubehsm.policy
# org.kubehsm.login names the program pkexec may run for it, by its
# installed path.
conf/org.kubehsm.policy: conf/org.kubehsm.policy.in Makefile
	$(AM_V_GEN)$(MKDIR_P) conf && \
	sed -e 's|@KH_LOGIN_PROGRAM@|$(pkglibexecdir)/kubehsm-login|g' \
		$(srcdir)/conf/org.kubehsm.policy.in > $@.tmp && mv $@.tmp $@
