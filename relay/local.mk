# relay/: kubehsm-relayd, the daemon that serves kube clients on a
# privileged loopback port and speaks mTLS upstream with each peer's
# session.  It links what it needs from the tree (policy, errors, JSON, the
# relay protocol) plus libevent and libcap-ng;
# --as-needed keeps the libraries it never calls (libp11, libconfig's
# users aside) off its list of shared objects.
#
# What needs no socket, no loop and no root (HTTP heads, the answers the
# relay makes itself, audit lines, pool and admission bookkeeping) is a
# convenience library of its own, so tests/unit/relay/ can link it.
noinst_LTLIBRARIES += relay/libkh-relay.la
relay_libkh_relay_la_SOURCES = \
	relay/kh_rhttp.c relay/kh_rhttp.h \
	relay/kh_rdeny.c relay/kh_rdeny.h \
	relay/kh_raudit.c relay/kh_raudit.h \
	relay/kh_rbuf.c relay/kh_rbuf.h \
	relay/kh_rctlpool.c relay/kh_rctlpool.h
relay_libkh_relay_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
relay_libkh_relay_la_LIBADD = $(HTTP_PARSER_LIBS)

sbin_PROGRAMS += relay/kubehsm-relayd
relay_kubehsm_relayd_SOURCES = \
	relay/kubehsm-relayd.c relay/kh_relayd.h \
	relay/kh_rlog.c relay/kh_rlog.h \
	relay/kh_rpriv.c relay/kh_rpriv.h \
	relay/kh_rlisten.c relay/kh_rlisten.h \
	relay/kh_rpeer.c relay/kh_rpeer.h \
	relay/kh_rprog.c relay/kh_rprog.h \
	relay/kh_rstore.c relay/kh_rstore.h \
	relay/kh_rsession.c relay/kh_rsession.h \
	relay/kh_rpending.c relay/kh_rpending.h \
	relay/kh_rup.c relay/kh_rup.h \
	relay/kh_rconn.c relay/kh_rconn.h \
	relay/kh_rctl.c relay/kh_rctl.h
relay_kubehsm_relayd_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS) $(CRYPTO_CFLAGS) \
	$(JANSSON_CFLAGS) $(KEYUTILS_CFLAGS) $(LIBCONFIG_CFLAGS) $(CAPNG_CFLAGS)
relay_kubehsm_relayd_LDFLAGS = $(AM_LDFLAGS) -Wl,--as-needed
relay_kubehsm_relayd_LDADD = relay/libkh-relay.la $(kh_all_libs) $(LIBEVENT_LIBS) $(CRYPTO_LIBS) \
	$(JANSSON_LIBS) $(KEYUTILS_LIBS) $(CAPNG_LIBS) $(HTTP_PARSER_LIBS)
dist_man_MANS += relay/kubehsm-relayd.8

# The systemd unit, with the installed path of the daemon filled in.
if KH_SYSTEMD_UNIT
systemdsystemunit_DATA = relay/kubehsm-relayd.service
relay_unitdir = $(systemdsystemunitdir)
else
relay_unitdir = no
endif
CLEANFILES += relay/kubehsm-relayd.service
EXTRA_DIST += relay/kubehsm-relayd.service.in
relay/kubehsm-relayd.service: $(srcdir)/relay/kubehsm-relayd.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) relay && \
	sed -e 's|@sbindir[@]|$(sbindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		-e 's|@rundir[@]|$(kh_rundir)|g' \
		$(srcdir)/relay/kubehsm-relayd.service.in >$@.tmp && mv $@.tmp $@
