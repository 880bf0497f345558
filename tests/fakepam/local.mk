# tests/fakepam/: a fake libpam and account database the unit tests of pam/
# link instead of Linux-PAM and NSS (see fakepam.h).  Built only for make
# check, as a convenience library.
check_LTLIBRARIES += tests/fakepam/libfakepam.la
tests_fakepam_libfakepam_la_SOURCES = tests/fakepam/fakepam.h tests/fakepam/internal.h \
	tests/fakepam/pam.c tests/fakepam/conv.c tests/fakepam/log.c tests/fakepam/nss.c
tests_fakepam_libfakepam_la_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(PAM_CFLAGS)

# What a program linking libfakepam.la adds to its LDFLAGS: the account and
# group lookups of everything it links go to the fake database.
fakepam_ldflags = -Wl,--wrap=getpwnam_r -Wl,--wrap=getgrouplist -Wl,--wrap=getgrgid_r
