# lib/polkit.mk: polkit client (libpolkit-gobject-1) in libkubehsm.
lib_libkubehsm_la_SOURCES += lib/kh_polkit.c lib/kh_polkit.h
lib_libkubehsm_la_CFLAGS += $(POLKIT_CFLAGS)
lib_libkubehsm_la_LIBADD += $(POLKIT_LIBS)
