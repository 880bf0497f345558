/*
 * kh_pam_forward_child — the user's forwarded token, talked to by a
 * process that is the user, never by root (issue #25).
 *
 * Why: a forwarded token is reached through p11-kit's client module over a
 * socket the user's `ssh -R` made, and what comes back over it — token
 * lists, certificates, key handles, every byte of the PKCS#11 RPC — is
 * whatever the user's end of that socket chooses to send.  Loading the
 * client module into root's process would have root parse it, and its
 * connection would carry uid 0 to the user's end (SO_PEERCRED).  So, as
 * OpenSSH does with ssh-pkcs11-helper, the whole conversation runs in a
 * child that has fully become the user: no supplementary groups, the
 * user's gid and uid as real, effective and saved ids (each call checked,
 * then read back, and a way back to root tried and required to fail), not
 * dumpable, no new privileges, killed with its parent, nothing open but
 * its socket to root (and copies of the trust files, read before the switch), and
 * an environment of P11_KIT_SERVER_ADDRESS alone.  Only the child loads
 * the client module.
 *
 * The child chooses the user's token exactly as the bastion's path does
 * (kh_token_choose: by a certificate that chains to trust.ca_file and maps
 * to the PAM user), and sends a hello: the token's label, serial and PIN
 * state, and the chosen certificate as DER — or why there is none.  Root
 * trusts none of it: it parses the certificate itself (d2i_X509, bounded)
 * and judges it with the very same code (kh_token_choose_read), checks
 * renewal and PIN state, asks for the PIN, and only then sends the child
 * the PIN and 32 fresh random bytes.  The child logs in once, signs them
 * with the certificate's key and answers with the signature, or with why
 * not (wrong PIN, locked, the PIN state read again) — and ends.  Root
 * verifies the signature over its own challenge with the public key of the
 * certificate it validated (kh_p11_verify_challenge, the check of every
 * proof of possession).  A second PIN (try_first_pass) is a second child.
 *
 * The same split holds for any token the user reaches through a path they
 * control; today the forwarded token (pam option `forwarded`,
 * pkcs11.forward) is the only one.  The bastion's own module
 * (pkcs11.module) is the admin's, and stays in process.
 *
 * The child is forked, not executed: it carries a copy of the PAM host's
 * memory.  In kubehsm-login, the one service with `forwarded`, nothing
 * secret is in it when the first child starts (the PIN is asked after the
 * hello), and the user cannot read it (not dumpable); a PIN from an
 * earlier module (try_first_pass) is the user's own.
 *
 * Wire (kh_pam_forward_child.h, kh_pam_forward_wire.c): frames of
 * length-prefixed fields, every length capped; a malformed, oversized,
 * truncated or late answer is a refusal, logged by the caller.  The child
 * is always reaped.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>
#include <openssl/x509.h>

#include "lib/kh_challenge.h"
#include "lib/kh_io.h"
#include "lib/kh_mem.h"
#include "lib/kh_pkcs11.h"
#include "lib/kh_token.h"
#include "pam/kh_pam.h"
#include "pam/kh_pam_forward_child.h"

#define KH_P11_KIT_ADDRESS_ENV "P11_KIT_SERVER_ADDRESS"

struct kh_fwd {
	pid_t pid;              /* 0 once reaped */
	int fd;                 /* -1 once closed */
	unsigned char challenge[KH_CHALLENGE_LEN];
	bool sent;              /* the challenge went to the child */
};

/* ---- root's side: I/O with a deadline ------------------------------------ */

static long long
now_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Exactly len bytes before the deadline; errno ETIMEDOUT, or EPIPE at EOF. */
static int
read_exact(int fd, unsigned char *p, size_t len, long long deadline)
{
	while (len > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left = deadline - now_ms();
		ssize_t n;
		int r;

		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		r = poll(&pfd, 1, left > 1000000 ? 1000000 : (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			continue;
		n = read(fd, p, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EPIPE;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One frame's payload (*buf: free with kh_secure_free(*buf, *len)), within
 * timeout_ms (0: no deadline — the child waiting for the PIN, which root
 * ends when it gives up). */
static int
read_frame(int fd, unsigned char **buf, size_t *len, const char *what, int timeout_ms,
	   kh_error *err)
{
	long long deadline = timeout_ms > 0 ? now_ms() + timeout_ms : LLONG_MAX;
	unsigned char h[4];
	uint32_t n;

	*buf = NULL;
	*len = 0;
	if (read_exact(fd, h, sizeof(h), deadline) != 0)
		goto io;
	n = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | (uint32_t)h[3];
	if (n == 0 || n > KH_FWD_FRAME_MAX)
		return kh_fail(err, KH_ERR_REFUSED, "malformed %s from the forwarded token's "
			       "process: a frame of %lu bytes (at most %d); refused", what,
			       (unsigned long)n, KH_FWD_FRAME_MAX);
	*buf = malloc(n);
	if (*buf == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	*len = n;
	if (read_exact(fd, *buf, n, deadline) != 0) {
		kh_secure_free(*buf, *len);
		*buf = NULL;
		*len = 0;
		goto io;
	}
	return 0;
io:
	if (errno == ETIMEDOUT)
		return kh_fail(err, KH_ERR_TOKEN, "the forwarded token's process sent no %s "
			       "within %d s; refused", what, KH_FWD_TIMEOUT_MS / 1000);
	if (errno == EPIPE)
		return kh_fail(err, KH_ERR_TOKEN, "the forwarded token's process ended without "
			       "a %s (or sent half of one); refused", what);
	return kh_fail(err, KH_ERR_TOKEN, "reading the forwarded token's process: %s",
		       strerror(errno));
}

/* ---- the child ----------------------------------------------------------- */

/* Send a frame; the child's only way out. */
static int
child_send(int fd, struct kh_fwd_buf *b)
{
	int rc = b->data != NULL ? kh_write_all(fd, b->data, b->len) : -1;

	kh_fwd_buf_clear(b);
	return rc;
}

/* Close every descriptor but keep[0..n) (and 0-2, which are /dev/null). */
static int
close_others(const int *keep, size_t n)
{
	unsigned lo = 3;

	for (;;) {
		unsigned next = ~0U;

		for (size_t i = 0; i < n; i++)
			if (keep[i] >= (int)lo && (unsigned)keep[i] < next)
				next = (unsigned)keep[i];
		if (next > lo && close_range(lo, next == ~0U ? ~0U : next - 1, 0) != 0)
			return -1;
		if (next == ~0U)
			return 0;
		lo = next + 1;
	}
}

/* Become uid/gid for good, and check that it took and cannot be undone. */
static int
child_become(uid_t uid, gid_t gid)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;

	if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
	    setresuid(uid, uid, uid) != 0)
		return -1;
	if (getresgid(&rg, &eg, &sg) != 0 || rg != gid || eg != gid || sg != gid ||
	    getresuid(&r, &e, &s) != 0 || r != uid || e != uid || s != uid ||
	    getgroups(0, NULL) != 0)
		return -1;
	if (uid != 0 && (setuid(0) != -1 || seteuid(0) != -1))
		return -1;
	if (gid != 0 && uid != 0 && (setgid(0) != -1 || setegid(0) != -1))
		return -1;
	return 0;
}

/* The most of a trust file (CA bundle, CRL) the child copies. */
#define KH_TRUST_FILE_MAX (64u << 20)

/*
 * A trust file read while still root (it need not be readable by the
 * user), as a sealed in-memory copy: the child, once the user, reads it
 * through /proc/self/fd/N, and opening that path checks the mode of the
 * file it names — the copy's, not the admin's 0600 original's.  -1 when it
 * cannot be had: the selection then reports the path.
 */
static int
child_trust_open(const char *path)
{
	char buf[8192];
	ssize_t n;
	size_t total = 0;
	int in, out;

	if (path == NULL || path[0] == '\0')
		return -1;
	in = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (in < 0)
		return -1;
	out = memfd_create("kubehsm-trust", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (out < 0) {
		(void)close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (total += (size_t)n) > KH_TRUST_FILE_MAX ||
		    kh_write_all(out, buf, (size_t)n) != 0)
			break;
	}
	(void)close(in);
	if (n != 0 || fchmod(out, 0444) != 0 ||
	    fcntl(out, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
		(void)close(out);
		return -1;
	}
	return out;
}

/* The trust file's copy as a path the child, now the user, can read: its
 * descriptor's.  The path itself when there is no copy. */
static const char *
child_trust_path(const char *path, int fd, char *buf, size_t size)
{
	if (fd < 0 || snprintf(buf, size, "/proc/self/fd/%d", fd) >= (int)size)
		return path;
	return buf;
}

/* fd moved above the standard descriptors (which become /dev/null). */
static int
child_move_up(int fd)
{
	int n;

	if (fd < 0 || fd > STDERR_FILENO)
		return fd;
	n = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	if (n < 0)
		_exit(2);
	return n;
}

/* The token the child chose, as a hello. */
static void
child_hello_chosen(struct kh_fwd_hello *h, const struct kh_p11_token *t,
		   const struct kh_p11_cert *c, unsigned char **der)
{
	int n;

	h->code = KH_OK;
	h->outcome = KH_TOKEN_CHOSEN;
	h->pin_flags = t->pin_flags;
	h->slot_id = t->slot_id;
	h->label = t->label;
	h->serial = t->serial;
	h->manufacturer = t->manufacturer;
	h->model = t->model;
	h->cert_label = c->label;
	if (c->id_len <= sizeof(h->id)) {
		memcpy(h->id, c->id, c->id_len);
		h->id_len = c->id_len;
	}
	*der = NULL;
	n = i2d_X509(c->x509, der);
	if (n <= 0 || (size_t)n > KH_FWD_CERT_MAX) {
		h->code = KH_ERR_REFUSED;
		h->outcome = KH_TOKEN_REJECTED;
		(void)snprintf(h->msg, sizeof(h->msg), "token '%s': the certificate cannot be "
			       "encoded in at most %d bytes", t->label, KH_FWD_CERT_MAX);
		return;
	}
	h->cert_der = *der;
	h->cert_len = (size_t)n;
}

/* The request: the PIN (into pin, KH_P11_PIN_MAX + 1) and the challenge. */
static int
child_read_request(int fd, char *pin, unsigned char *challenge)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	kh_error err = { 0 };
	int rc;

	if (read_frame(fd, &buf, &len, "request", 0, &err) != 0)
		return -1;
	rc = kh_fwd_parse_request(buf, len, pin, challenge, &err);
	kh_secure_free(buf, len);
	return rc;
}

/* Log in once, sign the challenge: the answer. */
static void
child_prove(struct kh_p11 *p11, struct kh_p11_token *t, const struct kh_p11_cert *c,
	    const struct kh_fwd_spec *s, const char *pin, const unsigned char *challenge,
	    struct kh_fwd_answer *a)
{
	kh_error err = { 0 }, again = { 0 };
	EVP_PKEY *key = NULL;

	a->stage = KH_FWD_STAGE_LOGIN;
	if (kh_p11_login(p11, pin, &err) != 0) {
		/* What the next try would be up against. */
		if (kh_p11_refresh_token(p11, t, &again) == 0)
			a->pin_flags = t->pin_flags;
		goto fail;
	}
	a->stage = KH_FWD_STAGE_KEY;
	if (kh_p11_find_cert_key(p11, c, s->key_label, t->label, &key, &err) != 0)
		goto fail;
	a->stage = KH_FWD_STAGE_SIGN;
	if (kh_p11_sign_challenge(key, challenge, KH_CHALLENGE_LEN, &a->sig, &a->sig_len,
				  &err) != 0)
		goto fail;
	EVP_PKEY_free(key);
	if (a->sig_len > KH_FWD_SIG_MAX) {
		kh_fail(&err, KH_ERR_TOKEN, "a signature of %zu bytes (at most %d)",
			a->sig_len, KH_FWD_SIG_MAX);
		OPENSSL_free(a->sig);
		a->sig = NULL;
		a->sig_len = 0;
		goto fail;
	}
	a->code = KH_OK;
	a->stage = KH_FWD_STAGE_NONE;
	return;
fail:
	EVP_PKEY_free(key);
	a->code = err.code != KH_OK ? err.code : KH_ERR_TOKEN;
	(void)snprintf(a->msg, sizeof(a->msg), "%s", err.msg);
}

/* Everything after the switch to the user; the exit status is only for
 * tracing: root reads answers, not statuses. */
static int
child_serve(int fd, const struct kh_fwd_spec *s, struct kh_token_rules *rules)
{
	struct kh_fwd_hello h = { 0 };
	struct kh_fwd_answer a = { 0 };
	struct kh_fwd_buf b = { 0 };
	struct kh_token_choice choice = { 0 };
	struct kh_p11 *p11;
	kh_error err = { 0 };
	unsigned char *der = NULL, challenge[KH_CHALLENGE_LEN];
	char pin[KH_P11_PIN_MAX + 1];
	int rc = 1;

	p11 = kh_p11_open(s->module, NULL, &err);
	if (p11 != NULL && kh_token_choose(p11, rules, s->user, &choice, &err) == 0) {
		child_hello_chosen(&h, &choice.tokens[choice.token],
				   &choice.tokens[choice.token].certs[choice.cert], &der);
	} else {
		h.code = err.code != KH_OK ? err.code : KH_ERR_TOKEN;
		h.outcome = p11 != NULL && choice.outcome != KH_TOKEN_CHOSEN ? choice.outcome :
			KH_TOKEN_NONE;
		(void)snprintf(h.msg, sizeof(h.msg), "%s", err.msg);
	}
	if (kh_fwd_encode_hello(&b, &h) != 0 || child_send(fd, &b) != 0 || h.code != KH_OK)
		goto out;
	if (child_read_request(fd, pin, challenge) != 0)
		goto out;
	child_prove(p11, &choice.tokens[choice.token],
		    &choice.tokens[choice.token].certs[choice.cert], s, pin, challenge, &a);
	explicit_bzero(pin, sizeof(pin));
	if (kh_fwd_encode_answer(&b, &a) == 0 && child_send(fd, &b) == 0)
		rc = 0;
out:
	explicit_bzero(pin, sizeof(pin));
	kh_fwd_buf_clear(&b);
	OPENSSL_free(a.sig);
	OPENSSL_free(der);
	kh_token_choice_free(&choice);
	kh_p11_close(p11);
	return rc;
}

/* The child, from fork to _exit: never returns into the PAM host. */
static void __attribute__((noreturn))
child_main(int fd, pid_t parent, const struct kh_fwd_spec *s)
{
	struct kh_token_rules rules = *s->rules;
	char ca_path[64], crl_path[64], *address = NULL;
	int keep[3], devnull, ca_fd, crl_fd;
	size_t n;

	(void)signal(SIGPIPE, SIG_IGN);
	(void)alarm(0);
	fd = child_move_up(fd);
	ca_fd = child_move_up(child_trust_open(s->rules->ca_file));
	crl_fd = child_move_up(child_trust_open(s->rules->crl_file));
	rules.ca_file = child_trust_path(s->rules->ca_file, ca_fd, ca_path, sizeof(ca_path));
	rules.crl_file = child_trust_path(s->rules->crl_file, crl_fd, crl_path, sizeof(crl_path));
	keep[0] = fd;
	keep[1] = ca_fd;
	keep[2] = crl_fd;
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (devnull < 0 || dup2(devnull, STDIN_FILENO) < 0 || dup2(devnull, STDOUT_FILENO) < 0 ||
	    dup2(devnull, STDERR_FILENO) < 0 || close_others(keep, 3) != 0)
		_exit(2);
	if (child_become(s->uid, s->gid) != 0)
		_exit(3);
	/* Never dumped or traced by the user it now is, no way to gain
	 * privileges, gone with root's process (set after the change of ids,
	 * which clears it; unless that process is gone already). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent)
		_exit(4);
	n = strlen(s->socket) + sizeof("unix:path=");
	address = malloc(n);
	if (address == NULL || snprintf(address, n, "unix:path=%s", s->socket) >= (int)n ||
	    clearenv() != 0 || setenv(KH_P11_KIT_ADDRESS_ENV, address, 1) != 0)
		_exit(5);
	free(address);
	_exit(child_serve(fd, s, &rules));
}

/* ---- root's side --------------------------------------------------------- */

/* Kill (it has nothing left to do, or must not do it) and reap; a host
 * that reaps its children itself leaves ECHILD, which is fine. */
static void
reap(struct kh_fwd *f)
{
	int status;

	if (f->fd >= 0) {
		(void)close(f->fd);
		f->fd = -1;
	}
	if (f->pid > 0) {
		(void)kill(f->pid, SIGKILL);
		while (waitpid(f->pid, &status, 0) < 0 && errno == EINTR)
			;
		f->pid = 0;
	}
}

void
kh_fwd_end(struct kh_fwd *f)
{
	if (f == NULL)
		return;
	reap(f);
	explicit_bzero(f, sizeof(*f));
	free(f);
}

struct kh_fwd *
kh_fwd_start(const struct kh_fwd_spec *spec, struct kh_fwd_hello *hello, kh_error *err)
{
	struct kh_fwd *f;
	unsigned char *buf = NULL;
	size_t len = 0;
	pid_t self = getpid();
	int sv[2], rc;

	memset(hello, 0, sizeof(*hello));
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	f->fd = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		kh_fail(err, KH_ERR_INTERNAL, "socketpair: %s", strerror(errno));
		free(f);
		return NULL;
	}
	f->pid = fork();
	if (f->pid < 0) {
		kh_fail(err, KH_ERR_INTERNAL, "cannot start the forwarded token's process: %s",
			strerror(errno));
		(void)close(sv[0]);
		(void)close(sv[1]);
		free(f);
		return NULL;
	}
	if (f->pid == 0) {
		(void)close(sv[0]);
		child_main(sv[1], self, spec);
	}
	(void)close(sv[1]);
	f->fd = sv[0];
	rc = read_frame(f->fd, &buf, &len, "hello", KH_FWD_TIMEOUT_MS, err);
	if (rc == 0) {
		rc = kh_fwd_parse_hello(buf, len, hello, err);
		kh_secure_free(buf, len);
	}
	if (rc != 0) {
		kh_fwd_end(f);
		return NULL;
	}
	if (hello->code != KH_OK)
		reap(f);   /* it has said all it will */
	return f;
}

int
kh_fwd_prove(struct kh_fwd *f, const char *pin, struct kh_fwd_answer *answer, kh_error *err)
{
	struct kh_fwd_buf b = { 0 };
	unsigned char *buf = NULL;
	size_t len = 0;
	int rc;

	memset(answer, 0, sizeof(*answer));
	if (f == NULL || f->fd < 0 || f->sent)
		return kh_fail(err, KH_ERR_INTERNAL, "the forwarded token's process takes one "
			       "PIN, once");
	if (RAND_bytes(f->challenge, sizeof(f->challenge)) != 1) {
		reap(f);
		return kh_fail_ssl(err, KH_ERR_INTERNAL, "no random bytes for the challenge");
	}
	f->sent = true;
	if (kh_fwd_encode_request(&b, pin, f->challenge, sizeof(f->challenge)) != 0) {
		kh_fwd_buf_clear(&b);
		reap(f);
		return kh_fail(err, KH_ERR_INPUT, "the PIN is longer than %d bytes", KH_P11_PIN_MAX);
	}
	rc = kh_send_all(f->fd, b.data, b.len);
	kh_fwd_buf_clear(&b);      /* it held the PIN */
	if (rc != 0) {
		rc = kh_fail(err, KH_ERR_TOKEN, "the forwarded token's process did not take "
			     "the PIN: %s", strerror(errno));
		reap(f);
		return rc;
	}
	rc = read_frame(f->fd, &buf, &len, "answer", KH_FWD_TIMEOUT_MS, err);
	if (rc == 0) {
		rc = kh_fwd_parse_answer(buf, len, answer, err);
		kh_secure_free(buf, len);
	}
	reap(f);       /* one answer, then it is gone */
	return rc;
}

int
kh_fwd_verify(const struct kh_fwd *f, X509 *cert, const struct kh_fwd_answer *answer,
	      kh_error *err)
{
	if (f == NULL || !f->sent)
		return kh_fail(err, KH_ERR_INTERNAL, "no challenge was sent");
	return kh_fwd_verify_challenge(cert, f->challenge, sizeof(f->challenge), answer, err);
}
