# tests/unit/pam/: the PAM module's logic, no root and no real parts.
#
# The polkit client's input checks and modes (pam/kh_polkit), no polkitd.
check_PROGRAMS += tests/unit/pam/test_polkit
TESTS += tests/unit/pam/test_polkit
tests_unit_pam_test_polkit_SOURCES = tests/unit/pam/test_polkit.c
tests_unit_pam_test_polkit_CFLAGS = $(unit_cflags) $(POLKIT_CFLAGS)
tests_unit_pam_test_polkit_LDADD = pam/libkh-polkit.la $(unit_ldadd)

# Tables of expected log lines and conversations leave optional fields out.
pam_unit_cflags = $(unit_cflags) $(PAM_CFLAGS) $(LIBP11_CFLAGS) -Wno-missing-field-initializers

# The harness (tests/fakepam): Linux-PAM's behaviour where the module relies
# on it, and a failing test for every mistake a test could make.
check_PROGRAMS += tests/unit/pam/test_fakepam
TESTS += tests/unit/pam/test_fakepam
tests_unit_pam_test_fakepam_CFLAGS = $(pam_unit_cflags)
tests_unit_pam_test_fakepam_LDFLAGS = $(fakepam_ldflags)
tests_unit_pam_test_fakepam_LDADD = tests/fakepam/libfakepam.la $(CMOCKA_LIBS)

# The module itself: its entry points (the object pam_kubehsm.la is built
# from) and pam/libkh-pam.la, linked with the fake libpam (tests/fakepam)
# instead of Linux-PAM, and with the layers under pam/ replaced at link
# time (fakes.c: the token, the keyring cache, the runtime directory, the
# policy loader's trust in root).  Every other line of pam/ is what ships.
check_LTLIBRARIES += tests/unit/pam/libpamfakes.la
tests_unit_pam_libpamfakes_la_SOURCES = tests/unit/pam/fakes.c tests/unit/pam/fakes.h
tests_unit_pam_libpamfakes_la_CFLAGS = $(pam_unit_cflags)

pam_unit_wraps = $(fakepam_ldflags) \
	-Wl,--wrap=kh_pam_open_token_module -Wl,--wrap=kh_p11_list_tokens \
	-Wl,--wrap=kh_p11_use_token -Wl,--wrap=kh_p11_refresh_token \
	-Wl,--wrap=kh_x509_validate -Wl,--wrap=kh_p11_login \
	-Wl,--wrap=kh_p11_find_key_by_id -Wl,--wrap=kh_p11_find_key \
	-Wl,--wrap=kh_p11_find_cert_key -Wl,--wrap=kh_p11_close \
	-Wl,--wrap=kh_p11_token_removable \
	-Wl,--wrap=kh_cache_list -Wl,--wrap=kh_cache_login \
	-Wl,--wrap=kh_cache_login_count -Wl,--wrap=kh_cache_logout \
	-Wl,--wrap=kh_rundir_sub -Wl,--wrap=kh_rundir_file -Wl,--wrap=kh_policy_load
# libfakepam.la after the tree's libraries, which look accounts up too: a
# static link resolves only from archives after the reference.
pam_unit_ldadd = pam/pam_kubehsm_la-pam_kubehsm.lo pam/libkh-pam.la \
	pam/libkh-polkit-common.la tests/unit/pam/libpamfakes.la $(kh_all_libs) tests/fakepam/libfakepam.la \
	$(CMOCKA_LIBS) $(CRYPTO_LIBS) $(JANSSON_LIBS) $(LIBP11_LIBS) $(KEYUTILS_LIBS) \
	$(LIBCONFIG_LIBS)

# One program per job of the module, each built from its own .c:
#   test_options  module options: every one, bad ones, what is logged
#   test_prompt   the PIN: the prompt, use_first_pass/try_first_pass with
#                 PAM_AUTHTOK, the PIN state before any try
#   test_session  the session step up to minting: whose session, the join
#                 check of `kubehsm login`, accounting, close_session
#   test_handoff  what the session step and setcred take as
#                 PAM_KUBEHSM_HANDOFF, the stash behind it
#   test_groups   kube groups: cert:, unix:, static:, allow/deny, the limit
#   test_log      log lines, the account, the policy, the login state, a
#                 whole login with no secret anywhere
#   test_select   the user's token found by its certificate among others'
#                 (never selected, never offered a PIN), two of hers refused
#                 and said, a renewal with another certificate refused
#                 before the PIN
#   test_forward_child  root's side of the forwarded token's process: its
#                 hello and answer parsed with every cap, malformed ones
#                 refused, a signature only over root's own challenge
pam_unit_tests = tests/unit/pam/test_options tests/unit/pam/test_prompt \
	tests/unit/pam/test_session tests/unit/pam/test_handoff \
	tests/unit/pam/test_groups tests/unit/pam/test_log tests/unit/pam/test_select \
	tests/unit/pam/test_forward_child
check_PROGRAMS += $(pam_unit_tests)
TESTS += $(pam_unit_tests)
tests_unit_pam_test_options_CFLAGS = $(pam_unit_cflags)
tests_unit_pam_test_options_LDFLAGS = $(pam_unit_wraps)
tests_unit_pam_test_options_LDADD = $(pam_unit_ldadd)
tests_unit_pam_test_prompt_CFLAGS = $(pam_unit_cflags)
tests_unit_pam_test_prompt_LDFLAGS = $(pam_unit_wraps)
tests_unit_pam_test_prompt_LDADD = $(pam_unit_ldadd)
tests_unit_pam_test_session_CFLAGS = $(pam_unit_cflags)
tests_unit_pam_test_session_LDFLAGS = $(pam_unit_wraps)
tests_unit_pam_test_session_LDADD = $(pam_unit_ldadd)
tests_unit_pam_test_handoff_CFLAGS = $(pam_unit_cflags)
tests_unit_pam_test_handoff_LDFLAGS = $(pam_unit_wraps)
tests_unit_pam_test_handoff_LDADD = $(pam_unit_ldadd)
tests_unit_pam_test_groups_CFLAGS = $(pam_unit_cflags)
tests_unit_pam_test_groups_LDFLAGS = $(pam_unit_wraps)
tests_unit_pam_test_groups_LDADD = $(pam_unit_ldadd)
tests_unit_pam_test_log_CFLAGS = $(pam_unit_cflags)
tests_unit_pam_test_log_LDFLAGS = $(pam_unit_wraps)
tests_unit_pam_test_log_LDADD = $(pam_unit_ldadd)
tests_unit_pam_test_select_CFLAGS = $(pam_unit_cflags)
tests_unit_pam_test_select_LDFLAGS = $(pam_unit_wraps)
tests_unit_pam_test_select_LDADD = $(pam_unit_ldadd)
tests_unit_pam_test_forward_child_CFLAGS = $(pam_unit_cflags)
tests_unit_pam_test_forward_child_LDFLAGS = $(pam_unit_wraps)
tests_unit_pam_test_forward_child_LDADD = $(pam_unit_ldadd)
