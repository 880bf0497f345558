# token sources of libkubehsm: PKCS#11 access (libp11) and X.509 work.
lib_libkubehsm_la_SOURCES += \
	lib/kh_pkcs11.c lib/kh_pkcs11.h \
	lib/kh_x509.c lib/kh_x509.h
