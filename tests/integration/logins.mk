# tests/integration/logins.mk — pam_kubehsm behind the real login programs:
# OpenSSH sshd on loopback (keyboard-interactive, password,
# publickey+keyboard-interactive), login(1) on a pty, su / su -l by root and
# by non-root users, sudo -u / sudo -iu and su inside a user's ssh login;
# kubehsm login inside an ssh login, with a token forwarded by p11-kit over
# ssh -R, through real pkexec and polkitd.
# They use tests/p11shim (pam.mk builds it) to count token logins.
TESTS += tests/integration/logins_sshd.sh tests/integration/logins_local.sh \
	tests/integration/logins_sudo.sh tests/integration/login_forward.sh
EXTRA_DIST += tests/integration/logins_sshd.sh tests/integration/logins_local.sh \
	tests/integration/logins_sudo.sh tests/integration/login_forward.sh tests/integration/logins_common.sh \
	tests/lib/logins.sh tests/lib/logindrv.py
