# pam_kubehsm behind the real login programs: OpenSSH sshd on loopback
# (keyboard-interactive, password, publickey+keyboard-interactive),
# login(1) on a pty, su / su -l by root and by non-root users, sudo -u /
# sudo -iu and su inside a user's ssh login; kubehsm login inside an ssh
# login, with a token forwarded by p11-kit over ssh -R, through real pkexec
# and polkitd.  tests/probes/p11shim counts token logins.
TESTS += tests/integration/logins/logins_sshd.sh tests/integration/logins/logins_local.sh \
	tests/integration/logins/logins_sudo.sh tests/integration/logins/login_forward.sh
EXTRA_DIST += tests/integration/logins/logins_sshd.sh tests/integration/logins/logins_local.sh \
	tests/integration/logins/logins_sudo.sh tests/integration/logins/login_forward.sh \
	tests/integration/logins/logins_common.sh \
	tests/harness/logins.sh tests/harness/logindrv.py
