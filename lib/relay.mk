# relay sources of libkubehsm: the kubehsm-relayd control protocol and its
# client (the login delivers and forgets sessions; kubehsm logout and admin
# revoke forget them).  The daemon itself lives in relay/.
lib_libkubehsm_la_SOURCES += \
	lib/kh_relay_proto.c lib/kh_relay_proto.h \
	lib/kh_relay_client.c lib/kh_relay_client.h
