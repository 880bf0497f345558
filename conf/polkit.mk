# conf/polkit.mk: the polkit action file and an example rules file.
# polkitd reads actions only from /usr/share/polkit-1/actions: configure
# with --prefix=/usr (or --datadir=/usr/share) for it to take effect.
polkitactionsdir = $(datadir)/polkit-1/actions
dist_polkitactions_DATA = conf/org.kubehsm.policy
EXTRA_DIST += conf/50-kubehsm.rules.example
