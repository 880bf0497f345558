# conf/: the policy schema and loader, the sample policy, polkit actions.
conf_sources = conf/kh_policy.c conf/kh_policy.h

kubehsmconfdir = $(sysconfdir)/kubehsm
dist_kubehsmconf_DATA = conf/kubehsm.conf
dist_man_MANS += conf/kubehsm.conf.5
include conf/polkit.mk
