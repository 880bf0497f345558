# lib/: the shared code every part links, in three convenience libraries.
#
# libkh-error: the error type alone, which even the polkit plugin links.
noinst_LTLIBRARIES += lib/libkh-error.la
lib_libkh_error_la_SOURCES = lib/kh_error.c lib/kh_error.h

# libkh-core: what `kubehsm exec` needs and nothing more — libc, jansson and
# libkeyutils — and the plain-C parsers the policy loader shares with the
# rest (PKCS#11 URIs, module environments).  No crypto library: exec runs on every kubectl invocation and
# must start like a minimal program.  No LIBADD: each program that links the
# core names jansson and libkeyutils itself, so the front end can take them
# from their static archives (configure.ac, KH_FRONT_LIBS).
noinst_LTLIBRARIES += lib/libkh-core.la
lib_libkh_core_la_SOURCES = \
	lib/kh_mem.c lib/kh_mem.h \
	lib/kh_io.c lib/kh_io.h \
	lib/kh_path.c lib/kh_path.h \
	lib/kh_rundir.c lib/kh_rundir.h \
	lib/kh_json.c lib/kh_json.h \
	lib/kh_json_doc.c lib/kh_json_doc.h \
	lib/kh_exec_proto.c lib/kh_exec_proto.h \
	lib/kh_words.c lib/kh_words.h \
	lib/kh_duration.c lib/kh_duration.h \
	lib/kh_template.c lib/kh_template.h \
	lib/kh_env.c lib/kh_env.h \
	lib/kh_p11_uri.c lib/kh_p11_uri.h \
	lib/kh_opensc_conf.c lib/kh_opensc_conf.h
lib_libkh_core_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
lib_libkh_core_la_LIBADD = lib/libkh-error.la

# libkh: the rest, for the PAM module, kubehsm-tool.so and the relay:
# PKCS#11 (libp11, and the module's own function list for what libp11 does
# not expose: <p11-kit/pkcs11.h>, the header only), finding the user's
# token by its certificate, X.509 and signing (OpenSSL), the external
# signer's codec, and the kubehsm-relayd control protocol with its client.
noinst_LTLIBRARIES += lib/libkh.la
lib_libkh_la_SOURCES = \
	lib/kh_error_ssl.c \
	lib/kh_dl.c lib/kh_dl.h \
	lib/kh_base64.c lib/kh_base64.h \
	lib/kh_signer_proto.c lib/kh_signer_proto.h \
	lib/kh_sign.c lib/kh_sign.h \
	lib/kh_pkey.c lib/kh_pkey.h \
	lib/kh_pkcs11.c lib/kh_pkcs11.h lib/kh_challenge.c lib/kh_challenge.h \
	lib/kh_pcsc.c lib/kh_pcsc.h \
	lib/kh_pin_file.c lib/kh_pin_file.h \
	lib/kh_p11_issuer.c lib/kh_p11_issuer.h \
	lib/kh_p11_raw.c lib/kh_p11_raw.h \
	lib/kh_p11_raw_key.c lib/kh_p11_raw_key.h \
	lib/kh_p11_ui.c lib/kh_p11_ui.h \
	lib/kh_token.c lib/kh_token.h \
	lib/kh_x509.c lib/kh_x509.h \
	lib/kh_relay_proto.c lib/kh_relay_proto.h \
	lib/kh_relay_client.c lib/kh_relay_client.h
lib_libkh_la_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(JANSSON_CFLAGS) $(LIBP11_CFLAGS) \
	$(P11KIT_CFLAGS)
lib_libkh_la_LIBADD = $(CRYPTO_LIBS) $(JANSSON_LIBS) $(LIBP11_LIBS)
