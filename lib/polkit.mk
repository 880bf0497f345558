# lib/polkit.mk: the polkit client (libpolkit-gobject-1).  It is not part of
# libkubehsm: the PAM module loads it as a plugin, pam/kubehsm-polkit.la
# (see pam/local.mk and pam/kh_pam_polkit.c), and the tests that drive it
# directly compile it in (tests/unit/polkit.mk, tests/integration/polkit.mk).
EXTRA_DIST += lib/kh_polkit.h
