# conf/polkit.mk: the polkit action file and an example rules file.
# polkitd reads actions only from /usr/share/polkit-1/actions: configure
# with --prefix=/usr (or --datadir=/usr/share) for it to take effect.
polkitactionsdir = $(datadir)/polkit-1/actions
polkitactions_DATA = conf/org.kubehsm.policy
EXTRA_DIST += conf/org.kubehsm.policy.in
CLEANFILES += conf/org.kubehsm.policy
# org.kubehsm.login names the program pkexec may run for it, by its
# installed path.
conf/org.kubehsm.policy: conf/org.kubehsm.policy.in Makefile
	$(AM_V_GEN)$(MKDIR_P) conf && \
	sed -e 's|@KH_LOGIN_PROGRAM@|$(pkglibexecdir)/kubehsm-login|g' \
		$(srcdir)/conf/org.kubehsm.policy.in > $@.tmp && mv $@.tmp $@
EXTRA_DIST += conf/50-kubehsm.rules.example
