# proto sources of libkubehsm (lib_libkubehsm_la_SOURCES += ...)
lib_libkubehsm_la_SOURCES += \
	lib/kh_proto.c lib/kh_proto.h \
	lib/kh_sign.c lib/kh_sign.h \
	lib/kh_pkey.c lib/kh_pkey.h
